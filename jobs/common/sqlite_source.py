"""The embedded log (SQLite) as a Structured Streaming source, so the default install has history.

A Python data source (pyspark 4.0's ``DataSource`` API, Spark's own) with a
streaming reader: offsets are the log's ``{"offset": next offset}``, each micro-batch
ranges of records ``[start, end)`` read straight from the SQLite file in the workers, as
``key, value, offset, timestampMs`` Arrow batches (the Kafka source's columns the archive reads).
Records removed by compaction are simply absent, as in a compacted Kafka topic.  A ``delete``
log's batches (one row an append, :mod:`store.log.record_batches`) are read as their records.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from jobs.common.streaming import OffsetLog, OffsetLogError, embedded_offset
from store.log.embedded import StoredBatch, batches_from, single_records_from
from store.log.record_batches import TOMBSTONE, RecordBatchError

FORMAT: Final = "aclstore_embedded_log"
SCHEMA: Final = "key BINARY, value BINARY, offset BIGINT, timestampMs BIGINT"
FILE_NAME: Final = "changelog.sqlite3"


class RecordRange(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        super().__init__((start, end))


def _connect(data_dir: str) -> sqlite3.Connection:
    path = Path(data_dir) / FILE_NAME
    if not path.exists():
        raise FileNotFoundError(f"no embedded log at {path}: give the node's data directory")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)


def next_offset(data_dir: str) -> int:
    db = _connect(data_dir)
    try:
        return int(db.execute("SELECT value FROM meta WHERE name = 'next_offset'").fetchone()[0])
    finally:
        db.close()


ARROW_BATCH_ROWS: Final = 10_000


def record_batches(data_dir: str, start: int, end: int) -> Iterator[Any]:
    """The records ``[start, end)`` as Arrow record batches of :data:`SCHEMA`'s columns:
    Spark takes them as they are, where it would convert rows one by one.

    Records stored one a row are listed, :data:`ARROW_BATCH_ROWS` at a time.  A stored batch
    (what a ``delete`` log holds, one per append: the audit log) becomes Arrow columns with
    whole-array operations on its sizes and bytes (:func:`batch_columns`), no Python step per
    record, and batches are joined until they hold :data:`ARROW_BATCH_ROWS` records."""
    import pyarrow as pa

    db = _connect(data_dir)
    try:
        singles = itertools.takewhile(lambda record: record[0] < end, single_records_from(db, start))
        while rows := list(itertools.islice(singles, ARROW_BATCH_ROWS)):
            offsets, keys, values, stamps = zip(*rows, strict=True)
            yield pa.RecordBatch.from_arrays(
                [pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                 pa.array(offsets, pa.int64()), pa.array(stamps, pa.int64())],
                names=_COLUMNS,
            )  # fmt: skip
        pending: list[Any] = []
        held = 0
        for stored in batches_from(db, start):
            if stored[0] >= end:
                break
            columns = batch_columns(stored, start, end)
            if columns.num_rows:
                pending.append(columns)
                held += columns.num_rows
            if held >= ARROW_BATCH_ROWS:
                yield from _joined(pending)
                pending, held = [], 0
        if pending:
            yield from _joined(pending)
    finally:
        db.close()


_COLUMNS: Final = ["key", "value", "offset", "timestampMs"]


def _joined(batches: list[Any]) -> list[Any]:
    """Record batches as one (a batch per stored append would be a batch per few records)."""
    import pyarrow as pa

    if len(batches) == 1:
        return batches
    joined: list[Any] = pa.Table.from_batches(batches).combine_chunks().to_batches()
    return joined


def batch_columns(stored: StoredBatch, start: int, end: int) -> Any:
    """The records ``[start, end)`` of a stored batch (:mod:`store.log.record_batches`) as an
    Arrow record batch of :data:`SCHEMA`'s columns: the same records, checked as
    :func:`~store.log.record_batches.unpack` checks them (RecordBatchError).

    The keys and values lie in the data one after the other, so the data is read as one
    binary array of both (its offsets the running sum of the sizes, a tombstone's taken as
    0) and every other element is taken: the keys, then the values, each copied once."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    base, stamp, sizes, data = stored
    if len(sizes) % 8:
        raise RecordBatchError(f"the batch at offset {base} has sizes of {len(sizes)} bytes")
    lengths = np.frombuffer(sizes, dtype="<i4")
    keys, values = lengths[0::2], lengths[1::2]
    if len(lengths) and (int(keys.min()) < 0 or int(values.min()) < TOMBSTONE):
        raise RecordBatchError(f"the batch at offset {base} is shorter than its sizes")
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.maximum(lengths, 0), out=bounds[1:])
    if int(bounds[-1]) != len(data):
        longer = "longer" if int(bounds[-1]) < len(data) else "shorter"
        raise RecordBatchError(f"the batch at offset {base} is {longer} than its sizes")
    first, last = max(start - base, 0), min(end - base, len(keys))
    if first >= last:
        types = (pa.binary(), pa.binary(), pa.int64(), pa.int64())
        return pa.RecordBatch.from_arrays([pa.array([], t) for t in types], names=_COLUMNS)
    buffers = [None, pa.py_buffer(bounds), pa.py_buffer(data)]
    both = pa.Array.from_buffers(pa.large_binary(), len(lengths), buffers)
    at = np.arange(2 * first, 2 * last, 2, dtype=np.int64)
    key_column = both.take(pa.array(at)).cast(pa.binary())
    value_column = both.take(pa.array(at + 1)).cast(pa.binary())
    tombstones = values[first:last] == TOMBSTONE
    if tombstones.any():
        value_column = pc.if_else(pa.array(~tombstones), value_column, pa.nulls(last - first, pa.binary()))
    return pa.RecordBatch.from_arrays(
        [key_column, value_column, pa.array(np.arange(base + first, base + last, dtype=np.int64)),
         pa.array(np.full(last - first, stamp, dtype=np.int64))],
        names=_COLUMNS,
    )  # fmt: skip


def batch_range(offsets: OffsetLog, batch_id: int) -> tuple[int, int]:
    """The records ``[start, end)`` the query whose offset log is ``offsets`` reads in
    micro-batch ``batch_id`` from this source (its one source): from the previous batch's end,
    or :meth:`EmbeddedLogStreamReader.initialOffset`, to the batch's own."""

    def offset(ends: list[str | None], batch: int) -> int:
        if len(ends) != 1 or ends[0] is None:
            raise OffsetLogError(f"batch {batch} of the offset log names {len(ends)} sources, not this one")
        found = embedded_offset(ends[0])
        if found is None:
            raise OffsetLogError(f"batch {batch}'s offset {ends[0]!r} is not this source's")
        return found

    start = offset(offsets.ends(batch_id - 1), batch_id - 1) if batch_id > 0 else 0
    return start, offset(offsets.ends(batch_id), batch_id)


def batch_records(data_dir: str, offsets: OffsetLog, batch_id: int) -> Any:
    """Micro-batch ``batch_id``'s records as one Arrow table of :data:`SCHEMA`'s columns, read
    here, from the log itself (:func:`batch_range`, :func:`record_batches`): the records the
    batch's DataFrame holds, with none of them made a Spark row and back."""
    import pyarrow as pa

    start, end = batch_range(offsets, batch_id)
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("offset", pa.int64()),
                        ("timestampMs", pa.int64())])  # fmt: skip
    return pa.Table.from_batches(list(record_batches(data_dir, start, end)), schema=schema)


class EmbeddedLogStreamReader(DataSourceStreamReader):
    """Each micro-batch in ranges of at most ``max_records`` records, and in at least
    ``min_partitions`` ranges (one task per range: every core reads and decodes)."""

    def __init__(self, data_dir: str, max_records: int, min_partitions: int = 1) -> None:
        self.data_dir = data_dir
        self.max_records = max_records
        self.min_partitions = min_partitions

    def initialOffset(self) -> dict[str, int]:
        return {"offset": 0}

    def latestOffset(self) -> dict[str, int]:
        return {"offset": next_offset(self.data_dir)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[RecordRange]:
        first, last = int(start["offset"]), int(end["offset"])
        parts = max(self.min_partitions, -(-(last - first) // max(1, self.max_records)))
        step = max(1, -(-(last - first) // max(1, parts)))
        return [RecordRange(s, min(s + step, last)) for s in range(first, last, step)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        start, end = partition.value
        return record_batches(self.data_dir, int(start), int(end))

    def commit(self, end: dict[str, int]) -> None:
        pass


class EmbeddedLogSource(DataSource):
    """``spark.readStream.format("aclstore_embedded_log").option("path", data_dir)``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> EmbeddedLogStreamReader:
        options = self.options
        return EmbeddedLogStreamReader(
            str(options["path"]),
            int(options.get("maxRecordsPerBatch", "200000")),
            int(options.get("minPartitions", "1")),
        )


def register(spark: Any) -> None:
    spark.dataSource.register(EmbeddedLogSource)
