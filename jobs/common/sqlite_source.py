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

from store.log.embedded import records_from

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
    Spark takes them as they are, where it would convert rows one by one."""
    import pyarrow as pa

    db = _connect(data_dir)
    try:
        records = itertools.takewhile(lambda record: record[0] < end, records_from(db, start))
        while rows := list(itertools.islice(records, ARROW_BATCH_ROWS)):
            offsets, keys, values, stamps = zip(*rows, strict=True)
            yield pa.RecordBatch.from_arrays(
                [pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                 pa.array(offsets, pa.int64()), pa.array(stamps, pa.int64())],
                names=["key", "value", "offset", "timestampMs"],
            )  # fmt: skip
    finally:
        db.close()


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
