"""The replica's RocksDB index: the live ACL bindings in a layout made for the decision rules.

One column family ``acl`` holds three tables, told apart by the key's first byte
(:mod:`replicator.encoding`)::

    B | E                           binding by pattern   (authorize, describe by pattern)
    U | lp(principal) | rt | E      binding by principal (authorize_by_resource_type)
    R | log key           -> E      binding by its log record key (deletes and tombstones)

where ``E = rt | pt | lp(name) | lp(principal) | lp(host) | op | perm`` (one byte per enum
code, ``lp`` = 4-byte big-endian length + UTF-8).  Because ``E`` starts with the pattern,
the bindings of one pattern are the keys under ``B | rt | pt | lp(name)``: authorize seeks
the LITERAL name, the LITERAL ``*`` and each PREFIXED prefix of the name (Kafka's
``StandardAuthorizerData`` walks the same three places).  To keep the prefix walk short the
metadata remembers how many PREFIXED bindings exist per (resource type, name length), and
only prefixes of those lengths are sought.

The ``meta`` column family holds the applied log offset, that record's log timestamp, the
layout and reader format versions, counters, the authorizer settings as of the applied
offset, the stop record and operator skips.  Every change is one ``WriteBatch`` that also
writes the applied offset (quix-streams' ``_update_changelog_offset``), so the index is
always exactly the log applied up to that offset: a crash loses at most whole batches,
which the tailer reads again from the log.
"""

from __future__ import annotations

import gc
import json
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from rocksdict import BlockBasedOptions, Options, Rdict, WriteBatch, WriteOptions

from replicator.encoding import (
    BY_LOG_KEY,
    BY_PATTERN,
    BY_PRINCIPAL,
    LITERAL,
    PREFIXED,
    decode_binding,
    encode_binding,
    lp,
    pattern_prefix,
    prefixed_name_length,
    principal_key,
)
from replicator.errors import IndexOpenError, IndexRebuildRequiredError, SkipRefusedError
from store.acl import (
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourceType,
)

INDEX_LAYOUT_VERSION = 1
"""Version of the key layout above; an index written with another layout is rebuilt."""

_ACL_CF = "acl"
_META_CF = "meta"
_I64 = struct.Struct(">q")
_LEN = struct.Struct(">BI")  # resource type code, name length (the prefix-length counters)


_M_OFFSET = b"applied_offset"
_M_TIMESTAMP = b"applied_timestamp_ms"
_M_LAYOUT = b"layout_version"
_M_READER = b"reader_version"
_M_BINDINGS = b"bindings"
_M_IGNORED = b"ignored_events"
_M_SKIPPED = b"skipped_records"
_M_STOPPED = b"stopped"
_M_ANCHOR = b"anchor"
_M_CONFIG = b"config/"
_M_PREFIX_LEN = b"plen/"
_M_SKIP = b"skip/"



# --- what the index reports ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexPosition:
    """The point of the log the index reflects: every record up to ``offset`` is applied.

    ``offset`` is -1 before anything was applied; ``timestamp_ms`` is the log timestamp of
    the last applied record (-1 when none).
    """

    offset: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LogAnchor:
    """The identity of the last record applied: the log must still show it at ``offset``."""

    offset: int
    timestamp_ms: int
    key: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class StopRecord:
    """Where and why the replica stopped: the first record it could not apply."""

    offset: int
    reason: str
    recorded_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SkipRecord:
    """An operator's decision to pass over one record the replica stopped at."""

    offset: int
    reason: str
    actor: str
    stop_reason: str
    recorded_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexCounters:
    bindings: int
    ignored_events: int
    skipped_records: int


def _i64(value: bytes | None, default: int) -> int:
    return default if value is None else int(_I64.unpack(value)[0])


# --- the index -------------------------------------------------------------------------------


class AclIndex:
    """The RocksDB index of one replica (rocksdict, raw bytes mode).

    ``reader_version`` is the newest event format this replica understands; an index built
    by a newer reader, or one that ignored too-new events under an older reader, must be
    rebuilt (:class:`IndexRebuildRequiredError`).  Writes go through :meth:`batch`; reads
    through :meth:`view`, a consistent read paired with the position it reflects.
    ``cache_size`` bounds the in-memory cache of ``matching_acls`` results; the cache is
    emptied by every batch that changes a binding, so it never serves a stale answer.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        reader_version: int,
        cache_size: int = 4096,
        sync_writes: bool = False,
    ) -> None:
        self.path = Path(path)
        self.reader_version = reader_version
        self._db = _open(self.path)
        self._acl = self._db.get_column_family(_ACL_CF)
        self._acl_cf = self._db.get_column_family_handle(_ACL_CF)
        self._meta = self._db.get_column_family(_META_CF)
        self._meta_cf = self._db.get_column_family_handle(_META_CF)
        self._write_opt = WriteOptions()
        self._write_opt.sync = sync_writes
        self._lock = threading.Lock()
        self._applied = threading.Condition(self._lock)
        self._cache: OrderedDict[tuple[int, str], tuple[AclBinding, ...]] = OrderedDict()
        self._cache_size = cache_size
        self._generation = 0
        self._closed = False
        try:
            self._load_meta()
        except BaseException:
            self.close()
            raise

    # -- opening ------------------------------------------------------------------------------

    def _load_meta(self) -> None:
        meta = self._read_meta()
        layout = meta.get(_M_LAYOUT)
        if layout is None:
            probe = self._acl.iter()
            probe.seek_to_first()
            if probe.valid():
                raise IndexRebuildRequiredError(
                    f"the index in {self.path} has bindings but no layout version; delete the "
                    "directory so the replica rebuilds it from the compacted log"
                )
            self._init_fresh()
            meta = self._read_meta()
        elif _i64(layout, 0) != INDEX_LAYOUT_VERSION:
            raise IndexRebuildRequiredError(
                f"the index in {self.path} uses key layout {_i64(layout, 0)}, this aclstore "
                f"reads layout {INDEX_LAYOUT_VERSION}; delete the directory to rebuild it from "
                "the compacted log"
            )
        self._position = IndexPosition(
            offset=_i64(meta.get(_M_OFFSET), -1), timestamp_ms=_i64(meta.get(_M_TIMESTAMP), -1)
        )
        self._counters = IndexCounters(
            bindings=_i64(meta.get(_M_BINDINGS), 0),
            ignored_events=_i64(meta.get(_M_IGNORED), 0),
            skipped_records=_i64(meta.get(_M_SKIPPED), 0),
        )
        stored_reader = _i64(meta.get(_M_READER), self.reader_version)
        self._check_reader_version(stored_reader)
        anchor = meta.get(_M_ANCHOR)
        self._anchor = (
            None
            if anchor is None
            else LogAnchor(
                offset=_i64(anchor[:8], -1), timestamp_ms=_i64(anchor[8:16], -1), key=anchor[16:]
            )
        )
        stopped = meta.get(_M_STOPPED)
        self._stopped = StopRecord(**json.loads(stopped)) if stopped else None
        self._config = {
            k[len(_M_CONFIG) :].decode(): v.decode()
            for k, v in meta.items()
            if k.startswith(_M_CONFIG)
        }
        lengths: dict[tuple[int, int], int] = {}
        for key, value in meta.items():
            if key.startswith(_M_PREFIX_LEN):
                lengths[_LEN.unpack(key[len(_M_PREFIX_LEN) :])] = _i64(value, 0)
        self._lengths = lengths
        self._prefix_lengths = _freeze_lengths(lengths)
        self._skips = [
            SkipRecord(**json.loads(v)) for k, v in sorted(meta.items()) if k.startswith(_M_SKIP)
        ]

    def _read_meta(self) -> dict[bytes, bytes]:
        return cast(dict[bytes, bytes], dict(self._meta.items()))  # raw mode: bytes only

    def _init_fresh(self) -> None:
        batch = WriteBatch(raw_mode=True)
        batch.put(_M_LAYOUT, _I64.pack(INDEX_LAYOUT_VERSION), self._meta_cf)
        batch.put(_M_READER, _I64.pack(self.reader_version), self._meta_cf)
        batch.put(_M_OFFSET, _I64.pack(-1), self._meta_cf)
        self._db.write(batch, self._write_opt)

    def _check_reader_version(self, stored: int) -> None:
        if stored > self.reader_version:
            raise IndexRebuildRequiredError(
                f"the index in {self.path} was built by a replica reading event format "
                f"v{stored}; this one reads up to v{self.reader_version} and cannot trust it. "
                "Delete the directory to rebuild it from the compacted log, or run the newer "
                "aclstore"
            )
        if stored < self.reader_version and self._counters.ignored_events:
            raise IndexRebuildRequiredError(
                f"the index in {self.path} ignored {self._counters.ignored_events} event(s) "
                f"that needed a format newer than v{stored}; this replica reads "
                f"v{self.reader_version} and must apply them: delete the directory to rebuild "
                "it from the compacted log"
            )
        if stored != self.reader_version:
            self._meta.put(_M_READER, _I64.pack(self.reader_version))

    # -- reading ------------------------------------------------------------------------------

    @property
    def position(self) -> IndexPosition:
        return self._position

    @property
    def counters(self) -> IndexCounters:
        return self._counters

    @property
    def anchor(self) -> LogAnchor | None:
        """The last log record the index applied (offset, timestamp, key), if any."""
        return self._anchor

    @property
    def stopped(self) -> StopRecord | None:
        return self._stopped

    @property
    def config(self) -> Mapping[str, str]:
        """The authorizer settings (``ConfigAltered`` values) as of the applied offset."""
        return dict(self._config)

    def skips(self) -> list[SkipRecord]:
        """Every operator skip this index has recorded, oldest offset first."""
        return list(self._skips)

    def view(self) -> IndexView:
        """A consistent read view: an iterator and the position and settings it reflects.

        A RocksDB iterator reads from an implicit snapshot taken when it is created; creating
        it under the lock that commits hold ties that snapshot to the applied position.
        (rocksdict's explicit ``Snapshot.iter`` does not honour its snapshot, hence this.)
        """
        with self._lock:
            self._check_open()
            return IndexView(
                self,
                iterator=self._acl.iter(),
                position=self._position,
                config=dict(self._config),
                generation=self._generation,
                prefix_lengths=self._prefix_lengths,
            )

    def wait_applied(self, offset: int, timeout: float) -> IndexPosition:
        """Wait up to ``timeout`` s until ``offset`` is applied; returns the position reached.

        Returns early when the index is stopped at or before ``offset`` (it cannot get there
        without an operator) or closed.
        """
        deadline = time.monotonic() + timeout
        with self._applied:
            while self._position.offset < offset and not self._closed:
                if self._stopped is not None and self._stopped.offset <= offset:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._applied.wait(remaining)
            return self._position

    def notify_waiters(self) -> None:
        """Wake :meth:`wait_applied` callers (e.g. because the replica stopped or closed)."""
        with self._applied:
            self._applied.notify_all()

    # -- writing ------------------------------------------------------------------------------

    def batch(self) -> IndexBatch:
        """Start a batch of changes that commits atomically with its log position."""
        self._check_open()
        return IndexBatch(self)

    def record_stop(self, stop: StopRecord) -> None:
        """Persist where the replica stopped (the applied offset stays where it is)."""
        batch = WriteBatch(raw_mode=True)
        batch.put(_M_STOPPED, json.dumps(asdict(stop)).encode(), self._meta_cf)
        with self._applied:
            self._check_open()
            self._db.write(batch, self._write_opt)
            self._stopped = stop
            self._applied.notify_all()

    def record_skip(self, offset: int, *, reason: str, actor: str) -> SkipRecord:
        """Record an operator's decision to skip the record the replica stopped at.

        The skip moves the applied offset past ``offset`` in the same batch that records it,
        so the record is never applied and the decision is kept in the index's metadata.
        """
        stopped = self._stopped
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
        batch.commit(offset=offset, timestamp_ms=self._position.timestamp_ms)
        return skip

    def _check_open(self) -> None:
        if self._closed:
            raise IndexOpenError(f"the index in {self.path} is closed")

    def close(self) -> None:
        with self._applied:
            if self._closed:
                return
            self._closed = True
            self._cache.clear()
            self._applied.notify_all()
            # RocksDB keeps its LOCK while any column family handle, snapshot or iterator
            # lives, so drop ours before closing (views must not outlive the index).
            del self._acl, self._acl_cf, self._meta, self._meta_cf
            self._db.close()
            gc.collect()

    # -- the bounded, generation-checked cache -------------------------------------------------

    def _cached(self, generation: int, key: tuple[int, str]) -> tuple[AclBinding, ...] | None:
        with self._lock:
            if generation != self._generation:
                return None
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def _remember(
        self, generation: int, key: tuple[int, str], value: tuple[AclBinding, ...]
    ) -> None:
        if self._cache_size <= 0:
            return
        with self._lock:
            # Only a value read at the current generation may enter: a batch committed while
            # it was read bumped the generation and emptied the cache.
            if generation != self._generation:
                return
            self._cache[key] = value
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _commit(
        self, batch: IndexBatch, wb: WriteBatch, position: IndexPosition, anchor: LogAnchor | None
    ) -> None:
        with self._applied:
            self._check_open()
            self._db.write(wb, self._write_opt)
            self._position = position
            if anchor is not None:
                self._anchor = anchor
            if batch.changed_bindings:
                self._generation += 1
                self._cache.clear()
                for key, delta in batch.length_deltas.items():
                    self._lengths[key] = self._lengths.get(key, 0) + delta
                self._prefix_lengths = _freeze_lengths(self._lengths)
            self._config.update(batch.config_set)
            for removed in batch.config_removed:
                self._config.pop(removed, None)
            if batch.skip_record is not None:
                self._skips.append(batch.skip_record)
            self._counters = batch.counters
            self._stopped = None
            self._applied.notify_all()


def _freeze_lengths(lengths: Mapping[tuple[int, int], int]) -> dict[int, tuple[int, ...]]:
    by_type: dict[int, list[int]] = {}
    for (resource_type, length), count in lengths.items():
        if count > 0:
            by_type.setdefault(resource_type, []).append(length)
    return {rt: tuple(sorted(ls)) for rt, ls in by_type.items()}


def _open(path: Path) -> Rdict:
    def options() -> Options:
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)  # the R-table point lookups of deletes and bootstrap
        opts.set_block_based_table_factory(table)
        return opts

    path.mkdir(parents=True, exist_ok=True)
    try:
        return Rdict(
            str(path),
            options=options(),
            column_families={_ACL_CF: options(), _META_CF: options()},
        )
    except Exception as exc:  # rocksdict raises plain Exception with RocksDB's status text
        raise IndexOpenError(
            f"cannot open the RocksDB index in {path}: {exc}. If another replica process uses "
            "this directory stop it; if the directory is damaged delete it so the replica "
            "rebuilds from the compacted log"
        ) from exc


# --- a batch of changes ----------------------------------------------------------------------


class IndexBatch:
    """Changes applied in log order, committed in one ``WriteBatch`` with their position.

    Reads inside the batch see its own earlier writes (a create then a delete of the same
    log key within one batch cancel out).  :meth:`prefetch` loads the current bindings of
    many log keys in one multi-get, which is what makes bootstrap fast.
    """

    def __init__(self, index: AclIndex) -> None:
        self._index = index
        self._wb = WriteBatch(raw_mode=True)
        self._current: dict[bytes, bytes | None] = {}
        self.length_deltas: dict[tuple[int, int], int] = {}
        self.config_set: dict[str, str] = {}
        self.config_removed: set[str] = set()
        self.changed_bindings = False
        self.skip_record: SkipRecord | None = None
        counters = index.counters
        self._bindings = counters.bindings
        self._ignored = counters.ignored_events
        self._skipped = counters.skipped_records

    def prefetch(self, log_keys: Sequence[bytes]) -> None:
        """Load the stored bindings of ``log_keys`` (one RocksDB multi-get)."""
        wanted = [k for k in dict.fromkeys(log_keys) if k not in self._current]
        if not wanted:
            return
        found = cast(list[bytes | None], self._index._acl.get([BY_LOG_KEY + k for k in wanted]))
        for key, enc in zip(wanted, found, strict=True):
            self._current[key] = enc

    def _lookup(self, log_key: bytes) -> bytes | None:
        if log_key in self._current:
            return self._current[log_key]
        enc: bytes | None = self._index._acl.get(BY_LOG_KEY + log_key)
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
        cf = self._index._acl_cf
        self._wb.put(BY_LOG_KEY + log_key, enc, cf)
        self._wb.put(BY_PATTERN + enc, b"", cf)
        self._wb.put(principal_key(enc), b"", cf)
        self._count_length(enc, +1)
        self._bindings += 1
        self._current[log_key] = enc
        self.changed_bindings = True

    def remove(self, log_key: bytes) -> None:
        """Remove whatever binding lives under ``log_key`` (a delete event or a tombstone)."""
        old = self._lookup(log_key)
        if old is not None:
            self._drop(log_key, old)
            self._current[log_key] = None

    def _drop(self, log_key: bytes, enc: bytes) -> None:
        cf = self._index._acl_cf
        self._wb.delete(BY_LOG_KEY + log_key, cf)
        self._wb.delete(BY_PATTERN + enc, cf)
        self._wb.delete(principal_key(enc), cf)
        self._count_length(enc, -1)
        self._bindings -= 1
        self.changed_bindings = True

    def _count_length(self, enc: bytes, delta: int) -> None:
        key = prefixed_name_length(enc)
        if key is not None:
            self.length_deltas[key] = self.length_deltas.get(key, 0) + delta

    def alter_config(self, key: str, value: str | None) -> None:
        """Set (or, with None, remove) one authorizer setting as of this point of the log."""
        meta_key = _M_CONFIG + key.encode()
        if value is None:
            self._wb.delete(meta_key, self._index._meta_cf)
            self.config_set.pop(key, None)
            self.config_removed.add(key)
        else:
            self._wb.put(meta_key, value.encode(), self._index._meta_cf)
            self.config_set[key] = value
            self.config_removed.discard(key)

    def ignore(self) -> None:
        """Count one event ignored because it needs a newer format (the IGNORE policy)."""
        self._ignored += 1

    def skip(self, record: SkipRecord) -> None:
        value = json.dumps(asdict(record)).encode()
        self._wb.put(_M_SKIP + _I64.pack(record.offset), value, self._index._meta_cf)
        self._skipped += 1
        self.skip_record = record

    @property
    def counters(self) -> IndexCounters:
        return IndexCounters(
            bindings=self._bindings, ignored_events=self._ignored, skipped_records=self._skipped
        )

    def commit(
        self, *, offset: int, timestamp_ms: int, anchor: LogAnchor | None = None
    ) -> IndexPosition:
        """Write the changes and the new applied position in one ``WriteBatch``.

        ``anchor`` names the last record the batch applied, so that a restart can tell
        whether the log still holds that very record at that offset.
        """
        index = self._index
        meta = index._meta_cf
        wb = self._wb
        if self.length_deltas:
            for (rt, length), delta in self.length_deltas.items():
                total = index._lengths.get((rt, length), 0) + delta
                key = _M_PREFIX_LEN + _LEN.pack(rt, length)
                if total > 0:
                    wb.put(key, _I64.pack(total), meta)
                else:
                    wb.delete(key, meta)
        wb.put(_M_OFFSET, _I64.pack(offset), meta)
        wb.put(_M_TIMESTAMP, _I64.pack(timestamp_ms), meta)
        wb.put(_M_BINDINGS, _I64.pack(self._bindings), meta)
        wb.put(_M_IGNORED, _I64.pack(self._ignored), meta)
        wb.put(_M_SKIPPED, _I64.pack(self._skipped), meta)
        wb.delete(_M_STOPPED, meta)
        if anchor is not None:
            packed = _I64.pack(anchor.offset) + _I64.pack(anchor.timestamp_ms) + anchor.key
            wb.put(_M_ANCHOR, packed, meta)
        position = IndexPosition(offset=offset, timestamp_ms=timestamp_ms)
        index._commit(self, wb, position, anchor)
        return position


# --- reading: a snapshot view that the decision rules read through ---------------------------


class IndexView:
    """A consistent read of the index, with the log position and settings it reflects.

    One view serves one request on one thread: its lookups share one RocksDB iterator.

    Implements the decision rules' ``AclView`` protocol (:mod:`store.authorizer`):
    ``matching_acls`` walks the three places Kafka's ``StandardAuthorizerData`` looks (the
    LITERAL name, the LITERAL ``*`` wildcard, each PREFIXED prefix of the name);
    ``acls_for_principal`` scans the by-principal table; ``bindings`` scans everything.
    """

    def __init__(
        self,
        index: AclIndex,
        *,
        iterator: Any,
        position: IndexPosition,
        config: Mapping[str, str],
        generation: int,
        prefix_lengths: Mapping[int, tuple[int, ...]],
    ) -> None:
        self._index = index
        self._iter = iterator
        self.position = position
        self.config = config
        self._generation = generation
        self._prefix_lengths = prefix_lengths

    def _scan(self, prefix: bytes) -> Iterator[bytes]:
        iterator = self._iter
        iterator.seek(prefix)
        while iterator.valid():
            key: bytes = iterator.key()
            if not key.startswith(prefix):
                return
            yield key
            iterator.next()

    def _pattern_keys(self, resource_type: int, name: str) -> list[bytes]:
        keys = [pattern_prefix(resource_type, LITERAL, name)]
        if name != WILDCARD_RESOURCE:
            keys.append(pattern_prefix(resource_type, LITERAL, WILDCARD_RESOURCE))
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            keys.append(pattern_prefix(resource_type, PREFIXED, name[:length]))
        return keys

    def indexed(self) -> None:
        """None: the decision rules take their generic path over this view.

        The rules' fast path reads in-memory tables of every binding; this index keeps its
        bindings in RocksDB so that memory does not grow with the ACL set, and answers
        ``matching_acls`` from an LRU cache instead (:mod:`store.authorizer.view`).
        """
        return None

    def matching_acls(self, resource_type: ResourceType, name: str) -> tuple[AclBinding, ...]:
        """Every live binding whose pattern applies to the resource ``(resource_type, name)``."""
        cache_key = (int(resource_type), name)
        hit = self._index._cached(self._generation, cache_key)
        if hit is not None:
            return hit
        found: list[AclBinding] = []
        for prefix in self._pattern_keys(int(resource_type), name):
            found.extend(decode_binding(key, 1) for key in self._scan(prefix))
        result = tuple(found)
        self._index._remember(self._generation, cache_key, result)
        return result

    def acls_for_principal(
        self, resource_type: ResourceType, principal: str
    ) -> tuple[AclBinding, ...]:
        """Every live binding of ``principal`` (exactly that string) on ``resource_type``."""
        prefix = BY_PRINCIPAL + lp(principal) + bytes((int(resource_type),))
        skip = len(prefix)
        return tuple(decode_binding(key, skip) for key in self._scan(prefix))

    def bindings(self) -> Iterator[AclBinding]:
        """Every live binding, in key order (sort for Kafka's DescribeAcls order)."""
        for key in self._scan(BY_PATTERN):
            yield decode_binding(key, 1)

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The live bindings ``acl_filter`` matches, in Kafka's DescribeAcls order.

        Narrows the scan where the filter allows: one pattern for a specific type, name and
        pattern type; the matching patterns for MATCH; one principal's bindings when the
        filter names a principal; otherwise every binding.
        """
        return sorted(b for b in self._candidates(acl_filter) if acl_filter.matches(b))

    def _candidates(self, acl_filter: AclBindingFilter) -> Iterable[AclBinding]:
        pf, ef = acl_filter.pattern_filter, acl_filter.entry_filter
        specific_type = pf.resource_type not in (ResourceType.ANY, ResourceType.UNKNOWN)
        if specific_type and pf.name is not None:
            rt = int(pf.resource_type)
            if pf.pattern_type is PatternType.MATCH:
                return self.matching_acls(pf.resource_type, pf.name)
            if pf.pattern_type.is_specific:
                return self._pattern(rt, int(pf.pattern_type), pf.name)
            if pf.pattern_type is PatternType.ANY:
                literal = self._pattern(rt, LITERAL, pf.name)
                return literal + self._pattern(rt, PREFIXED, pf.name)
        if ef.principal is not None:
            if specific_type:
                return self.acls_for_principal(pf.resource_type, ef.principal)
            prefix = BY_PRINCIPAL + lp(ef.principal)
            skip = len(prefix) + 1
            return [decode_binding(k, skip) for k in self._scan(prefix)]
        return self.bindings()

    def _pattern(self, resource_type: int, pattern_type: int, name: str) -> list[AclBinding]:
        prefix = pattern_prefix(resource_type, pattern_type, name)
        return [decode_binding(k, 1) for k in self._scan(prefix)]

