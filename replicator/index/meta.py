"""The ``meta`` column family: the index's own state, stored beside the bindings.

It holds the applied log offset and that record's log timestamp, the key layout and reader
format versions, the counters, the authorizer settings as of the applied offset, the stop
record, the operator's skips and, per (resource type, name length), how many PREFIXED
bindings exist (so that authorize seeks only prefixes of lengths in use).  This module
names those keys and turns them into :class:`StoredMeta` and back; the index decides when
to write them (always in the same ``WriteBatch`` as the change they describe).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass

from rocksdict import ColumnFamily, WriteBatch

from replicator.index.records import IndexCounters, IndexPosition, LogAnchor, SkipRecord, StopRecord

INDEX_LAYOUT_VERSION = 2
"""Version of the key layout (:mod:`replicator.encoding`): 2 added the ``K`` table (listing
order), which opening a layout-1 index writes from its ``B`` table; any other layout is rebuilt."""

_I64 = struct.Struct(">q")
_HEAD = struct.Struct(">qqqqq")  # offset, timestamp, bindings, ignored events, skipped records
_LEN = struct.Struct(">BI")  # resource type code, name length (the prefix-length counters)

M_OFFSET = b"applied_offset"
M_TIMESTAMP = b"applied_timestamp_ms"
M_LAYOUT = b"layout_version"
M_READER = b"reader_version"
_M_BINDINGS = b"bindings"
_M_IGNORED = b"ignored_events"
_M_SKIPPED = b"skipped_records"
_M_STOPPED = b"stopped"
_M_ANCHOR = b"anchor"
_M_CONFIG = b"config/"
_M_PREFIX_LEN = b"plen/"
_M_SKIP = b"skip/"
M_HEAD = b"head"
"""The position, counters and anchor of the last commit in one value (:func:`put_position`,
:func:`decode_head`): what a follower reads after each catch-up instead of every key."""
M_SHAPE = b"shape"
"""The shape sequence: a number the writer raises in every batch that changes what the head
does not say (a setting, the prefix lengths in use, a skip, a stop record, the versions), so
that a follower whose sequence still stands knows the rest of its last full read holds
(:func:`put_shape`)."""
M_JOURNAL_SEQ = b"zch_seq"
M_JOURNAL = b"zchg/"
"""The change journal (:func:`put_journal`): keys after every other meta key, so that a reader
of the index's state stops before them (:func:`read_state`)."""
JOURNAL_KEPT = 1024
"""Commits that changed bindings whose changed patterns the journal keeps."""

PrefixLengths = dict[tuple[int, int], int]
"""(resource type code, prefix length in characters) -> how many PREFIXED bindings have it."""


def pack_i64(value: int) -> bytes:
    return _I64.pack(value)


def unpack_i64(value: bytes | None, default: int) -> int:
    return default if value is None else int(_I64.unpack(value)[0])


@dataclass(slots=True, kw_only=True)
class StoredMeta:
    """Everything the ``meta`` column family says, decoded."""

    layout: int | None
    reader: int | None
    position: IndexPosition
    counters: IndexCounters
    anchor: LogAnchor | None
    stopped: StopRecord | None
    config: dict[str, str]
    lengths: PrefixLengths
    skips: list[SkipRecord]
    journal_seq: int = 0
    """The number of the last commit the change journal holds (0: none yet)."""
    shape: int = -1
    """The shape sequence (:data:`M_SHAPE`; -1: never written)."""


def decode_meta(meta: Mapping[bytes, bytes]) -> StoredMeta:
    layout = meta.get(M_LAYOUT)
    reader = meta.get(M_READER)
    anchor = meta.get(_M_ANCHOR)
    stopped = meta.get(_M_STOPPED)
    lengths: PrefixLengths = {}
    config: dict[str, str] = {}
    skips: list[SkipRecord] = []
    for key, value in sorted(meta.items()):
        if key.startswith(_M_PREFIX_LEN):
            lengths[_LEN.unpack(key[len(_M_PREFIX_LEN) :])] = unpack_i64(value, 0)
        elif key.startswith(_M_CONFIG):
            config[key[len(_M_CONFIG) :].decode()] = value.decode()
        elif key.startswith(_M_SKIP):
            skips.append(SkipRecord(**json.loads(value)))
    return StoredMeta(
        layout=None if layout is None else unpack_i64(layout, 0),
        reader=None if reader is None else unpack_i64(reader, 0),
        position=IndexPosition(
            offset=unpack_i64(meta.get(M_OFFSET), -1),
            timestamp_ms=unpack_i64(meta.get(M_TIMESTAMP), -1),
        ),
        counters=IndexCounters(
            bindings=unpack_i64(meta.get(_M_BINDINGS), 0),
            ignored_events=unpack_i64(meta.get(_M_IGNORED), 0),
            skipped_records=unpack_i64(meta.get(_M_SKIPPED), 0),
        ),
        anchor=None if anchor is None else _unpack_anchor(anchor),
        stopped=StopRecord(**json.loads(stopped)) if stopped else None,
        config=config,
        lengths=lengths,
        skips=skips,
        journal_seq=unpack_i64(meta.get(M_JOURNAL_SEQ), 0),
        shape=unpack_i64(meta.get(M_SHAPE), -1),
    )


def _unpack_anchor(packed: bytes) -> LogAnchor:
    offset, timestamp_ms = unpack_i64(packed[:8], -1), unpack_i64(packed[8:16], -1)
    return LogAnchor(offset=offset, timestamp_ms=timestamp_ms, key=packed[16:])


def decode_head(value: bytes) -> tuple[IndexPosition, IndexCounters, LogAnchor | None]:
    """The position, counters and anchor of a :data:`M_HEAD` value."""
    offset, timestamp_ms, bindings, ignored, skipped = _HEAD.unpack_from(value)
    rest = value[_HEAD.size :]
    anchor = _unpack_anchor(rest) if rest else None
    counters = IndexCounters(bindings=bindings, ignored_events=ignored, skipped_records=skipped)
    return IndexPosition(offset=offset, timestamp_ms=timestamp_ms), counters, anchor


def freeze_lengths(lengths: Mapping[tuple[int, int], int]) -> dict[int, tuple[int, ...]]:
    """Per resource type, the prefix lengths in use, ascending (what authorize seeks)."""
    by_type: dict[int, list[int]] = {}
    for (resource_type, length), count in lengths.items():
        if count > 0:
            by_type.setdefault(resource_type, []).append(length)
    return {rt: tuple(sorted(ls)) for rt, ls in by_type.items()}


def put_fresh(wb: WriteBatch, cf: ColumnFamily, *, reader_version: int) -> None:
    """The metadata of an empty index of this layout."""
    wb.put(M_SHAPE, pack_i64(0), cf)
    wb.put(M_LAYOUT, pack_i64(INDEX_LAYOUT_VERSION), cf)
    wb.put(M_READER, pack_i64(reader_version), cf)
    wb.put(M_OFFSET, pack_i64(-1), cf)


def put_config(wb: WriteBatch, cf: ColumnFamily, key: str, value: str | None) -> None:
    """Set (or, with None, remove) one authorizer setting."""
    meta_key = _M_CONFIG + key.encode()
    if value is None:
        wb.delete(meta_key, cf)
    else:
        wb.put(meta_key, value.encode(), cf)


def put_skip(wb: WriteBatch, cf: ColumnFamily, record: SkipRecord) -> None:
    wb.put(_M_SKIP + pack_i64(record.offset), json.dumps(asdict(record)).encode(), cf)


def put_stop(wb: WriteBatch, cf: ColumnFamily, stop: StopRecord) -> None:
    wb.put(_M_STOPPED, json.dumps(asdict(stop)).encode(), cf)


def put_shape(wb: WriteBatch, cf: ColumnFamily, shape: int) -> None:
    """Raise the shape sequence to ``shape`` (see :data:`M_SHAPE`): the writer does it in every
    batch that writes a setting, a prefix length coming into or out of use, a skip, a stop
    record or a version."""
    wb.put(M_SHAPE, pack_i64(shape), cf)


def put_prefix_length(wb: WriteBatch, cf: ColumnFamily, key: tuple[int, int], total: int) -> None:
    meta_key = _M_PREFIX_LEN + _LEN.pack(*key)
    if total > 0:
        wb.put(meta_key, pack_i64(total), cf)
    else:
        wb.delete(meta_key, cf)


def put_head(
    wb: WriteBatch,
    cf: ColumnFamily,
    position: IndexPosition,
    counters: IndexCounters,
    anchor: LogAnchor | None,
) -> None:
    """The :data:`M_HEAD` value of a position, its counters and anchor (no anchor: the head
    says nothing of it, and a follower reads every key instead)."""
    head = _HEAD.pack(
        position.offset, position.timestamp_ms, counters.bindings, counters.ignored_events,
        counters.skipped_records,
    )  # fmt: skip
    wb.put(M_HEAD, head + (b"" if anchor is None else _pack_anchor(anchor)), cf)


def head_matches(value: bytes | None, stored: StoredMeta) -> bool:
    """Whether a :data:`M_HEAD` value says what the separate keys of ``stored`` say."""
    if value is None:
        return False
    position, counters, anchor = decode_head(value)
    return (position, counters) == (stored.position, stored.counters) and anchor in (None, stored.anchor)


def _pack_anchor(anchor: LogAnchor) -> bytes:
    return pack_i64(anchor.offset) + pack_i64(anchor.timestamp_ms) + anchor.key


def put_position(
    wb: WriteBatch,
    cf: ColumnFamily,
    position: IndexPosition,
    counters: IndexCounters,
    anchor: LogAnchor | None,
) -> None:
    """The applied position and counters of a commit, each key and the :data:`M_HEAD` value;
    clears any stop record."""
    put_head(wb, cf, position, counters, anchor)
    wb.put(M_OFFSET, pack_i64(position.offset), cf)
    wb.put(M_TIMESTAMP, pack_i64(position.timestamp_ms), cf)
    wb.put(_M_BINDINGS, pack_i64(counters.bindings), cf)
    wb.put(_M_IGNORED, pack_i64(counters.ignored_events), cf)
    wb.put(_M_SKIPPED, pack_i64(counters.skipped_records), cf)
    wb.delete(_M_STOPPED, cf)
    if anchor is not None:
        wb.put(_M_ANCHOR, _pack_anchor(anchor), cf)


def put_journal(
    wb: WriteBatch, cf: ColumnFamily, seq: int, offset: int, changed: Collection[tuple[int, int, str]] | None
) -> None:
    """Journal commit number ``seq`` (one that changed bindings) at ``offset``: the patterns it
    changed (None: too many to list, which empties a reader's cache), so that another process
    reading the index (a decision worker's secondary instance) drops exactly the cached answers
    the commit can affect.  The last :data:`JOURNAL_KEPT` commits are kept."""
    patterns = None if changed is None else sorted(changed)
    wb.put(M_JOURNAL + pack_i64(seq), pack_i64(offset) + json.dumps(patterns).encode(), cf)
    wb.put(M_JOURNAL_SEQ, pack_i64(seq), cf)
    if seq > JOURNAL_KEPT:
        wb.delete(M_JOURNAL + pack_i64(seq - JOURNAL_KEPT), cf)


def decode_journal(value: bytes) -> tuple[int, list[tuple[int, int, str]] | None]:
    """The offset and changed patterns of one journal entry."""
    listed = json.loads(value[8:])
    patterns = None if listed is None else [(int(r), int(p), str(n)) for r, p, n in listed]
    return unpack_i64(value[:8], -1), patterns


def read_state(items: Iterable[tuple[bytes, bytes]]) -> StoredMeta:
    """:func:`decode_meta` of the meta column family read in key order, stopping at the
    journal (which can be long and which the state does not need)."""
    kept: dict[bytes, bytes] = {}
    for key, value in items:
        if key.startswith(M_JOURNAL):
            break
        kept[key] = value
    return decode_meta(kept)
