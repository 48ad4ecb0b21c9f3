"""The jobs' decoding in Python: log records in, event rows out.

The archive and the downgrade watch send here the records that Spark's own reading of the
common event (:mod:`jobs.common.spark_decode`) leaves alone: read on the driver when they are
few, else in Spark's Python workers.

Each reader takes its share of a micro-batch through the one fold of the log: the common
``AclCreated``/``AclDeleted`` through its fast path (:class:`store.fold_fast.FastAclDecoder`,
its key checked against the record's), everything else through :func:`store.fold.fold_record`
(via :func:`jobs.common.decode.history_event`).  A record the fold refuses becomes one row
carrying only its offset and the fold's message (which names the offset), and the reading
stops there: the driver keeps what comes before the first such offset and stops the job at it,
in the job's own words.

:func:`decode_rows` is pure; :func:`decode_batches` is its adapter to Arrow record batches
(``DataFrame.mapInArrow``: columns in and out, no per-row pickling or ``Row`` objects, which
cost more than the decoding itself).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

import pyarrow as pa

from jobs.common.decode import history_event
from jobs.common.events import ACL_CREATED, ACL_DELETED
from jobs.common.rows import EVENTS_SCHEMA, day_of, event_row
from store.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import RecordDecodeError
from store.events import LATEST_FORMAT_VERSION
from store.fold import key_mismatch
from store.fold_fast import FastAclDecoder

DECODED_SCHEMA: Final = f"{EVENTS_SCHEMA}, error STRING"
"""An event's columns, and the message of a refused record (then all else is null)."""

_DAY_MS: Final = 86_400_000
_NAMES: Final = tuple(
    {int(m): m.name for m in enum_type}
    for enum_type in (ResourceType, PatternType, AclOperation, AclPermissionType)
)

Record = tuple[bytes, bytes | None, int, int]


def decode_rows(records: Iterable[Record]) -> Iterator[tuple[Any, ...]]:
    """The events-table row (plus a null error) of each ``(key, value, offset, timestampMs)``
    record that changes something, until the first refused record: its error row ends it."""
    fast = FastAclDecoder(LATEST_FORMAT_VERSION)
    days: dict[int, str] = {}
    rt_names, pt_names, op_names, perm_names = _NAMES
    for key, value, offset, timestamp_ms in records:
        try:
            got = None if value is None else fast.decode(value, offset)
            if got is None:
                event = history_event(key, value, offset, timestamp_ms)
                if event is not None:
                    yield (*event_row(event), None)
                continue
            if got.key != key:
                raise key_mismatch(offset, key, got.key)
        except RecordDecodeError as exc:
            yield (offset, *(None,) * 14, str(exc))
            return
        day_key = timestamp_ms // _DAY_MS
        day = days.get(day_key)
        if day is None:
            day = days[day_key] = day_of(timestamp_ms)
        yield (
            offset, timestamp_ms, day, ACL_CREATED if got.created else ACL_DELETED,
            rt_names[got.resource_type], got.name, pt_names[got.pattern_type], got.principal,
            got.host, op_names[got.operation], perm_names[got.permission_type],
            None, None, got.actor, got.request_id, None,
        )  # fmt: skip


DECODED_ARROW_SCHEMA: Final = pa.schema(
    [
        ("offset", pa.int64()), ("timeMs", pa.int64()),
        *((name, pa.string()) for name in (
            "day", "type", "resourceType", "name", "patternType", "principal", "host",
            "operation", "permission", "configName", "configValue", "actor", "requestId", "error",
        )),
    ]
)  # fmt: skip
""":data:`DECODED_SCHEMA` in Arrow's types."""


def decode_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` over ``key, value, offset, timestampMs`` batches: :func:`decode_rows`'s
    rows as :data:`DECODED_ARROW_SCHEMA` batches, ending after a refused record's row."""
    for batch in batches:
        keys, values, offsets, times = (batch.column(i).to_pylist() for i in range(4))
        rows = list(decode_rows(zip(keys, values, offsets, times, strict=True)))
        if not rows:
            continue
        columns = zip(zip(*rows, strict=True), DECODED_ARROW_SCHEMA, strict=True)
        yield pa.RecordBatch.from_arrays(
            [pa.array(column, type=field.type) for column, field in columns], schema=DECODED_ARROW_SCHEMA
        )
        if rows[-1][-1] is not None:
            return
