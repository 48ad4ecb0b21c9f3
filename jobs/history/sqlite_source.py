"""The embedded log (SQLite) as a Structured Streaming source, so the default install has history.

A Python data source (pyspark 4.0's ``DataSource`` API, Spark's own) with a
streaming reader: offsets are the log's ``{"offset": next offset}``, each micro-batch one
partition of records ``[start, end)`` read straight from the SQLite file in the worker, as
``key, value, offset, timestampMs`` (the Kafka source's columns the archive reads).
Records removed by compaction are simply absent, as in a compacted Kafka topic.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

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


def records(data_dir: str, start: int, end: int) -> Iterator[tuple[bytes, bytes | None, int, int]]:
    db = _connect(data_dir)
    try:
        rows = db.execute(
            "SELECT key, value, offset, timestamp_ms FROM records WHERE offset >= ? AND offset < ? "
            "ORDER BY offset",
            (start, end),
        )
        for key, value, offset, timestamp_ms in rows:
            yield bytes(key), None if value is None else bytes(value), int(offset), int(timestamp_ms)
    finally:
        db.close()


class EmbeddedLogStreamReader(DataSourceStreamReader):
    def __init__(self, data_dir: str, max_records: int) -> None:
        self.data_dir = data_dir
        self.max_records = max_records

    def initialOffset(self) -> dict[str, int]:
        return {"offset": 0}

    def latestOffset(self) -> dict[str, int]:
        return {"offset": next_offset(self.data_dir)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[RecordRange]:
        first, last = int(start["offset"]), int(end["offset"])
        step = max(1, self.max_records)
        return [RecordRange(s, min(s + step, last)) for s in range(first, last, step)]

    def read(self, partition: InputPartition) -> Iterator[tuple[bytes, bytes | None, int, int]]:
        start, end = partition.value
        return records(self.data_dir, int(start), int(end))

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
        return EmbeddedLogStreamReader(str(options["path"]), int(options.get("maxRecordsPerBatch", "200000")))


def register(spark: Any) -> None:
    spark.dataSource.register(EmbeddedLogSource)
