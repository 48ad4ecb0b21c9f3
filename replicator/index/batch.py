"""A batch of changes to the index, applied in log order and committed as one ``WriteBatch``
together with the log position it reaches (quix-streams' ``_update_changelog_offset``), so
the index is always exactly the log applied up to its offset.

A batch is a state the log is folded into (:class:`store.replay.AclReplay`): the tailer
hands it every record the fold reads (:func:`store.replay.replay_one`), and a binding lives
under its record's key (``at.key``), as Kafka's ``ClusterMetadataAuthorizer`` keeps an ACL
under its id."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, cast

from rocksdict import WriteBatch

from replicator.encoding import (
    BY_LOG_KEY,
    BY_PATTERN,
    encode_binding,
    order_key,
    pattern_of,
    prefixed_name_length,
    principal_key,
)
from replicator.index import meta
from replicator.index.cache import Pattern
from replicator.index.records import IndexCounters, IndexPosition, LogAnchor, SkipRecord
from replicator.index.tables import Tables
from store.acl import AclBinding
from store.codec import binding_key
from store.fold import Change, ChangeKind

_LISTED_PATTERNS = 256
"""Beyond this many changed patterns in one batch the cache is emptied instead of sifted."""


class BatchTarget(Protocol):
    """What a batch needs of its index (:class:`~replicator.index.acl_index.AclIndex`)."""

    @property
    def tables(self) -> Tables: ...
    @property
    def counters(self) -> IndexCounters: ...
    @property
    def prefix_length_counts(self) -> Mapping[tuple[int, int], int]: ...
    @property
    def config(self) -> Mapping[str, str]: ...
    @property
    def journal_seq(self) -> int: ...
    @property
    def shape(self) -> int: ...

    def commit_batch(
        self, batch: IndexBatch, wb: WriteBatch, position: IndexPosition, anchor: LogAnchor | None
    ) -> None: ...


class IndexBatch:
    """Changes applied in log order, committed in one ``WriteBatch`` with their position.

    Reads inside the batch see its own earlier writes (a create then a delete of the same
    log key within one batch cancel out).  :meth:`prefetch` loads the current bindings of
    many log keys in one multi-get, which is what makes bootstrap fast.
    """

    def __init__(self, index: BatchTarget) -> None:
        self._index = index
        self._wb = WriteBatch(raw_mode=True)
        self._current: dict[bytes, bytes | None] = {}
        self.length_deltas: dict[tuple[int, int], int] = {}
        self.config_set: dict[str, str] = {}
        self.config_removed: set[str] = set()
        self.changed_bindings = False
        self.changed_patterns: set[Pattern] | None = set()
        self.skip_record: SkipRecord | None = None
        self.shaped = False
        """Whether the commit changed what the index's head does not say (:data:`meta.M_SHAPE`):
        set by :meth:`commit`."""
        counters = index.counters
        self._bindings = counters.bindings
        self._ignored = counters.ignored_events
        self._skipped = counters.skipped_records

    def prefetch(self, log_keys: Sequence[bytes]) -> None:
        """Load the stored bindings of ``log_keys`` (one RocksDB multi-get)."""
        wanted = [k for k in dict.fromkeys(log_keys) if k not in self._current]
        if not wanted:
            return
        found = cast(list[bytes | None], self._index.tables.acl.get([BY_LOG_KEY + k for k in wanted]))
        for key, enc in zip(wanted, found, strict=True):
            self._current[key] = enc

    def _lookup(self, log_key: bytes) -> bytes | None:
        if log_key in self._current:
            return self._current[log_key]
        enc: bytes | None = self._index.tables.acl.get(BY_LOG_KEY + log_key)
        self._current[log_key] = enc
        return enc

    def create(self, log_key: bytes, binding: AclBinding) -> None:
        """Make ``binding`` live under ``log_key`` (a repeated create changes nothing)."""
        self.create_encoded(log_key, encode_binding(binding))

    def create_encoded(self, log_key: bytes, enc: bytes) -> None:
        """:meth:`create` for a binding already encoded as ``E``."""
        old = self._lookup(log_key)
        if old == enc:
            return
        if old is not None:
            self._drop(log_key, old)
        cf = self._index.tables.acl_cf
        self._wb.put(BY_LOG_KEY + log_key, enc, cf)
        self._wb.put(BY_PATTERN + enc, b"", cf)
        self._wb.put(principal_key(enc), b"", cf)
        self._wb.put(order_key(enc), enc, cf)
        self._count_length(enc, +1)
        self._bindings += 1
        self._current[log_key] = enc
        self._changed(enc)

    def remove(self, log_key: bytes) -> None:
        """Remove whatever binding lives under ``log_key`` (a delete event or a tombstone)."""
        old = self._lookup(log_key)
        if old is not None:
            self._drop(log_key, old)
            self._current[log_key] = None

    def _drop(self, log_key: bytes, enc: bytes) -> None:
        cf = self._index.tables.acl_cf
        self._wb.delete(BY_LOG_KEY + log_key, cf)
        self._wb.delete(BY_PATTERN + enc, cf)
        self._wb.delete(principal_key(enc), cf)
        self._wb.delete(order_key(enc), cf)
        self._count_length(enc, -1)
        self._bindings -= 1
        self._changed(enc)

    def _changed(self, enc: bytes) -> None:
        self.changed_bindings = True
        patterns = self.changed_patterns
        if patterns is not None:
            if len(patterns) >= _LISTED_PATTERNS:
                self.changed_patterns = None  # a bootstrap-sized batch: the cache is emptied
            else:
                patterns.add(pattern_of(enc))

    def _count_length(self, enc: bytes, delta: int) -> None:
        key = prefixed_name_length(enc)
        if key is not None:
            self.length_deltas[key] = self.length_deltas.get(key, 0) + delta

    def alter_config(self, name: str, value: str | None, at: Change | None = None) -> None:
        """Set (or, with None, remove) one authorizer setting as of this point of the log."""
        meta.put_config(self._wb, self._index.tables.meta_cf, name, value)
        if value is None:
            self.config_set.pop(name, None)
            self.config_removed.add(name)
        else:
            self.config_set[name] = value
            self.config_removed.discard(name)

    # -- the replay interface (store.replay.AclReplay) ------------------------------------------

    def add_acl(self, binding: AclBinding, at: Change) -> None:
        self.create(at.key, binding)

    def remove_acl(self, binding: AclBinding, at: Change) -> None:
        self.remove(at.key)

    def pass_over(self, at: Change) -> None:
        if at.kind is ChangeKind.IGNORED:
            self.ignore()

    def load_snapshot(self, bindings: Iterable[AclBinding], settings: Mapping[str, str], offset: int) -> None:
        """Make the index hold exactly ``bindings`` (each under its canonical key) and
        ``settings``; the batch's :meth:`commit` says the offset they reflect."""
        stored: dict[bytes, bytes | None] = {}
        iterator = self._index.tables.acl.iter()
        iterator.seek(BY_LOG_KEY)
        while iterator.valid():
            key: bytes = iterator.key()
            if not key.startswith(BY_LOG_KEY):
                break
            stored[key[len(BY_LOG_KEY) :]] = iterator.value()
            iterator.next()
        del iterator
        stored.update(self._current)
        for log_key, enc in stored.items():
            if enc is not None:
                self._drop(log_key, enc)
                self._current[log_key] = None
        for binding in bindings:
            self.create(binding_key(binding), binding)
        current = {**self._index.config, **self.config_set}
        for name in current:
            if name not in settings and name not in self.config_removed:
                self.alter_config(name, None)
        for name, value in settings.items():
            self.alter_config(name, value)

    def ignore(self) -> None:
        """Count one event ignored because it needs a newer format (the IGNORE policy)."""
        self._ignored += 1

    def skip(self, record: SkipRecord) -> None:
        meta.put_skip(self._wb, self._index.tables.meta_cf, record)
        self._skipped += 1
        self.skip_record = record

    @property
    def counters(self) -> IndexCounters:
        return IndexCounters(
            bindings=self._bindings, ignored_events=self._ignored, skipped_records=self._skipped
        )

    def commit(self, *, offset: int, timestamp_ms: int, anchor: LogAnchor | None = None) -> IndexPosition:
        """Write the changes and the new applied position in one ``WriteBatch``.

        ``anchor`` names the last record the batch applied, so that a restart can tell
        whether the log still holds that very record at that offset.
        """
        cf = self._index.tables.meta_cf
        lengths = self._index.prefix_length_counts
        shaped = bool(self.config_set or self.config_removed or self.skip_record is not None)
        for key, delta in self.length_deltas.items():
            before = lengths.get(key, 0)
            meta.put_prefix_length(self._wb, cf, key, before + delta)
            shaped = shaped or (before > 0) != (before + delta > 0)  # a length into or out of use
        if shaped:
            meta.put_shape(self._wb, cf, self._index.shape + 1)
        self.shaped = shaped
        position = IndexPosition(offset=offset, timestamp_ms=timestamp_ms)
        meta.put_position(self._wb, cf, position, self.counters, anchor)
        if self.changed_bindings:
            meta.put_journal(self._wb, cf, self._index.journal_seq + 1, offset, self.changed_patterns)
        self._index.commit_batch(self, self._wb, position, anchor)
        return position
