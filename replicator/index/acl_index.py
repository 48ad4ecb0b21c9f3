"""The replica's RocksDB index: opening it, its state, and committing batches to it.

One column family ``acl`` holds the bindings in the three tables of
:mod:`replicator.encoding`; ``meta`` holds the index's own state (:mod:`.meta`).  Writes go
through :class:`~replicator.index.batch.IndexBatch`, reads through
:class:`~replicator.index.view.IndexView`; answers of ``applicable_acls`` are cached in a
:class:`~replicator.index.cache.MatchCache` that commits keep exact.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

from rocksdict import WriteBatch, WriteOptions

from replicator.encoding import BY_PATTERN, order_key
from replicator.errors import (
    IndexOpenError,
    IndexRebuildRequiredError,
    IndexStorageFullError,
    SkipRefusedError,
)
from replicator.index import meta
from replicator.index.batch import IndexBatch
from replicator.index.cache import DEFAULT_CACHE_MAX_BYTES, CachedAnswers, MatchCache
from replicator.index.progress import Progress
from replicator.index.records import (
    IndexCounters,
    IndexPosition,
    LogAnchor,
    SkipRecord,
    StopRecord,
)
from replicator.index.tables import UNFLUSHED_BOUND_BYTES, open_tables, verify_tables
from replicator.index.view import IndexView

_UPGRADE_BATCH = 10_000
"""Bindings per ``WriteBatch`` when an older layout gains a table."""

SPACE_SLACK_BYTES = 1 << 20
"""Free space a commit leaves on the index's file system beyond the batch itself and the
memtables RocksDB has yet to write out as table files."""


class AclIndex(CachedAnswers):
    """The RocksDB index of one replica (rocksdict, raw bytes mode).

    ``reader_version`` is the newest event format this replica understands; an index built
    by a newer reader, or one that ignored too-new events under an older reader, must be
    rebuilt (:class:`IndexRebuildRequiredError`).  Writes go through :meth:`batch`; reads
    through :meth:`view`, a consistent read paired with the position it reflects.
    ``cache_size`` (answers) and ``cache_max_bytes`` (their estimated memory) bound the
    in-memory cache of ``applicable_acls`` results (:class:`MatchCache`); every batch that
    changes a binding drops the answers it can affect, so it never serves a stale one.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        reader_version: int,
        cache_size: int = 4096,
        cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        sync_writes: bool = False,
    ) -> None:
        self.path = Path(path)
        self.reader_version = reader_version
        self._db, self.tables = open_tables(self.path)
        self._write_opt = WriteOptions()
        self._write_opt.sync = sync_writes
        self._cache = MatchCache(cache_size, cache_max_bytes)
        try:
            verify_tables(self._db, self.tables, self.path)
            stored = self._load_meta()
        except BaseException:
            self._close_db()
            raise
        self._progress = Progress(stored.position, stored.stopped)
        self._cache_lock = self._progress.cond
        self._counters = stored.counters
        self._anchor = stored.anchor
        self._config = stored.config
        self._lengths = stored.lengths
        self._prefix_lengths = meta.freeze_lengths(stored.lengths)
        self._skips = stored.skips
        self._journal_seq = stored.journal_seq
        self._shape = stored.shape
        self.before_visible: Callable[[int], None] | None = None
        """Called with a batch's offset before the batch becomes visible (see
        :class:`replicator.leases.VisibilityGate`); it may wait, never under the read lock."""
        self.after_visible: Callable[[IndexPosition], None] | None = None
        """Called with a batch's position once it is written and visible, under the index's
        lock (so in commit order): it must be quick (a node publishes it to its decision
        workers, :mod:`replicator.server.workers.state`)."""

    # -- opening ------------------------------------------------------------------------------

    def _load_meta(self) -> meta.StoredMeta:
        stored = meta.decode_meta(self._read_meta())
        versions_written = stored.layout != meta.INDEX_LAYOUT_VERSION
        if stored.layout is None:
            probe = self.tables.acl.iter()
            probe.seek_to_first()
            if probe.valid():
                raise IndexRebuildRequiredError(
                    f"the index in {self.path} has bindings but no layout version; delete the "
                    "directory so the replica rebuilds it from the compacted log"
                )
            del probe
            wb = WriteBatch(raw_mode=True)
            meta.put_fresh(wb, self.tables.meta_cf, reader_version=self.reader_version)
            self._db.write(wb, self._write_opt)
            stored = meta.decode_meta(self._read_meta())
        if stored.layout == 1:
            self._add_order_table()
            stored = meta.decode_meta(self._read_meta())
        if stored.layout != meta.INDEX_LAYOUT_VERSION:
            raise IndexRebuildRequiredError(
                f"the index in {self.path} uses key layout {stored.layout}, this aclstore "
                f"reads layout {meta.INDEX_LAYOUT_VERSION}; delete the directory to rebuild it "
                "from the compacted log"
            )
        versions_written = self._check_reader_version(stored) or versions_written
        if versions_written or not meta.head_matches(self.tables.meta.get(meta.M_HEAD), stored):
            # A version written, or an index last written before the head existed: the head
            # and a new shape, so that a follower's quick reads start from what is stored.
            wb = WriteBatch(raw_mode=True)
            meta.put_head(wb, self.tables.meta_cf, stored.position, stored.counters, stored.anchor)
            meta.put_shape(wb, self.tables.meta_cf, stored.shape + 1)
            self._db.write(wb, self._write_opt)
            stored = meta.decode_meta(self._read_meta())
        return stored

    def _add_order_table(self) -> None:
        """Layout 1 to 2: the ``K`` keys of every binding, read from the ``B`` table, written in
        batches; the last one records layout 2.  An upgrade cut short starts over at the next
        open (it writes the same keys), and changes nothing else: the position and the
        bindings stay what they were."""
        acl_cf = self.tables.acl_cf
        iterator = self.tables.acl.iter()
        iterator.seek(BY_PATTERN)
        wb = WriteBatch(raw_mode=True)
        pending = 0
        while iterator.valid():
            key: bytes = iterator.key()
            if not key.startswith(BY_PATTERN):
                break
            enc = key[len(BY_PATTERN) :]
            wb.put(order_key(enc), enc, acl_cf)
            pending += 1
            if pending == _UPGRADE_BATCH:
                self._db.write(wb, self._write_opt)
                wb, pending = WriteBatch(raw_mode=True), 0
            iterator.next()
        del iterator
        wb.put(meta.M_LAYOUT, meta.pack_i64(2), self.tables.meta_cf)
        self._db.write(wb, self._write_opt)

    def _read_meta(self) -> dict[bytes, bytes]:
        return cast(dict[bytes, bytes], dict(self.tables.meta.items()))  # raw mode: bytes only

    def _check_reader_version(self, stored_meta: meta.StoredMeta) -> bool:
        """Refuse an index this reader cannot trust; True if it recorded this reader's
        version (an older reader's index, nothing ignored)."""
        stored = self.reader_version if stored_meta.reader is None else stored_meta.reader
        ignored = stored_meta.counters.ignored_events
        if stored > self.reader_version:
            raise IndexRebuildRequiredError(
                f"the index in {self.path} was built by a replica reading event format "
                f"v{stored}; this one reads up to v{self.reader_version} and cannot trust it. "
                "Delete the directory to rebuild it from the compacted log, or run the newer "
                "aclstore"
            )
        if stored < self.reader_version and ignored:
            raise IndexRebuildRequiredError(
                f"the index in {self.path} ignored {ignored} event(s) "
                f"that needed a format newer than v{stored}; this replica reads "
                f"v{self.reader_version} and must apply them: delete the directory to rebuild "
                "it from the compacted log"
            )
        if stored != self.reader_version:
            self.tables.meta.put(meta.M_READER, meta.pack_i64(self.reader_version))
            return True
        return False

    # -- reading ------------------------------------------------------------------------------

    @property
    def position(self) -> IndexPosition:
        return self._progress.position

    @property
    def counters(self) -> IndexCounters:
        return self._counters

    @property
    def anchor(self) -> LogAnchor | None:
        """The last log record the index applied (offset, timestamp, key), if any."""
        return self._anchor

    @property
    def stopped(self) -> StopRecord | None:
        return self._progress.stopped

    @property
    def config(self) -> Mapping[str, str]:
        """The authorizer settings (``ConfigAltered`` values) as of the applied offset."""
        return dict(self._config)

    @property
    def prefix_length_counts(self) -> Mapping[tuple[int, int], int]:
        """How many PREFIXED bindings exist per (resource type code, prefix length)."""
        return self._lengths

    @property
    def journal_seq(self) -> int:
        """The number of the last commit that changed bindings (:func:`meta.put_journal`)."""
        return self._journal_seq

    @property
    def shape(self) -> int:
        """The shape sequence last written (:data:`meta.M_SHAPE`)."""
        return self._shape

    def skips(self) -> list[SkipRecord]:
        """Every operator skip this index has recorded, oldest offset first."""
        return list(self._skips)

    def view(self) -> IndexView:
        """A consistent read view: an iterator and the position and settings it reflects.

        A RocksDB iterator reads from an implicit snapshot taken when it is created; creating
        it under the lock that commits hold ties that snapshot to the applied position.
        (rocksdict's explicit ``Snapshot.iter`` does not honour its snapshot, hence this.)
        """
        with self._progress.cond:
            self._check_open()
            return IndexView(
                self,
                iterator=self.tables.acl.iter(),
                position=self._progress.position,
                config=dict(self._config),
                generation=self._cache.generation,
                prefix_lengths=self._prefix_lengths,
            )

    def wait_applied(self, offset: int, timeout: float) -> IndexPosition:
        """Wait up to ``timeout`` s until ``offset`` is applied; returns the position reached.

        Returns early when the index is stopped at or before ``offset`` (it cannot get there
        without an operator) or closed.
        """
        return self._progress.wait_applied(offset, timeout)

    def notify_waiters(self) -> None:
        """Wake :meth:`wait_applied` callers (e.g. because the replica stopped or closed)."""
        self._progress.notify()

    # -- writing ------------------------------------------------------------------------------

    def batch(self) -> IndexBatch:
        """Start a batch of changes that commits atomically with its log position."""
        self._check_open()
        return IndexBatch(self)

    def record_stop(self, stop: StopRecord) -> None:
        """Persist where the replica stopped (the applied offset stays where it is)."""
        wb = WriteBatch(raw_mode=True)
        meta.put_stop(wb, self.tables.meta_cf, stop)
        with self._progress.cond:
            self._check_open()
            meta.put_shape(wb, self.tables.meta_cf, self._shape + 1)
            self._db.write(wb, self._write_opt)
            self._shape += 1
            self._progress.stopped = stop
            self._progress.cond.notify_all()

    def record_skip(self, offset: int, *, reason: str, actor: str) -> SkipRecord:
        """Record an operator's decision to skip the record the replica stopped at.

        The skip moves the applied offset past ``offset`` in the same batch that records it,
        so the record is never applied and the decision is kept in the index's metadata.
        """
        stopped = self._progress.stopped
        if stopped is None or stopped.offset != offset:
            where = "is not stopped" if stopped is None else f"stopped at {stopped.offset}"
            raise SkipRefusedError(
                f"cannot skip offset {offset}: the replica {where}; a skip must name the "
                "offset the replica reports it stopped at"
            )
        if not reason.strip() or not actor.strip():
            raise SkipRefusedError("a skip needs a non-empty reason and actor, for the record")
        skip = SkipRecord(
            offset=offset,
            reason=reason,
            actor=actor,
            stop_reason=stopped.reason,
            recorded_ms=int(time.time() * 1000),
        )
        batch = self.batch()
        batch.skip(skip)
        batch.commit(offset=offset, timestamp_ms=self._progress.position.timestamp_ms)
        return skip

    def commit_batch(
        self, batch: IndexBatch, wb: WriteBatch, position: IndexPosition, anchor: LogAnchor | None
    ) -> None:
        """Write ``wb`` and publish what it changed (called by :meth:`IndexBatch.commit`)."""
        self._check_space(wb)
        progress = self._progress
        if self.before_visible is not None and position.offset != progress.position.offset:
            self.before_visible(position.offset)
        with progress.cond:
            self._check_open()
            self._db.write(wb, self._write_opt)
            progress.position = position
            if batch.shaped:
                self._shape += 1
            if anchor is not None:
                self._anchor = anchor
            if batch.changed_bindings:
                self._journal_seq += 1
                self._cache.advance(batch.changed_patterns)
                for key, delta in batch.length_deltas.items():
                    self._lengths[key] = self._lengths.get(key, 0) + delta
                self._prefix_lengths = meta.freeze_lengths(self._lengths)
            self._config.update(batch.config_set)
            for removed in batch.config_removed:
                self._config.pop(removed, None)
            if batch.skip_record is not None:
                self._skips.append(batch.skip_record)
            self._counters = batch.counters
            progress.stopped = None
            if self.after_visible is not None:
                self.after_visible(position)
            progress.cond.notify_all()

    def _check_space(self, wb: WriteBatch) -> None:
        """Refuse a batch the file system has no room for, before RocksDB sees it: a write
        that fails for want of space leaves RocksDB read-only until it is reopened, while a
        batch refused here is simply tried again (the tailer reads from the applied offset)."""
        stat = os.statvfs(self.path)
        free = stat.f_bavail * stat.f_frsize
        batch_bytes = wb.size_in_bytes()
        if free >= batch_bytes + UNFLUSHED_BOUND_BYTES + SPACE_SLACK_BYTES:
            return  # room for the batch whatever the memtables hold (the common case)
        unflushed = sum(
            family.property_int_value("rocksdb.cur-size-all-mem-tables") or 0
            for family in (self._db, self.tables.acl, self.tables.meta)
        )
        needed = batch_bytes + unflushed + SPACE_SLACK_BYTES
        if free < needed:
            raise IndexStorageFullError(
                f"no space for the index in {self.path}: {free} bytes free, {needed} needed "
                "to apply the next batch; the replica answers from what it applied and "
                "applies nothing more until space is freed on that file system (it retries "
                "by itself)",
                path=str(self.path), free_bytes=free, needed_bytes=needed,
            )  # fmt: skip

    def _check_open(self) -> None:
        if self._progress.closed:
            raise IndexOpenError(f"the index in {self.path} is closed")

    def close(self) -> None:
        with self._progress.cond:
            if self._progress.closed:
                return
            self._progress.closed = True
            self._cache.clear()
            self._progress.cond.notify_all()
            self._close_db()

    def _close_db(self) -> None:
        # RocksDB keeps its LOCK while any column family handle, snapshot or iterator lives,
        # so drop ours before closing (views and batches must not outlive the index).
        del self.tables
        self._db.close()
        gc.collect()
