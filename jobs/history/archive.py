"""The archive job: the change log, streamed into the history and validity Delta tables.

One Structured Streaming query reads the log (Spark's Kafka source for a cluster's topic,
:mod:`jobs.history.sqlite_source` for the embedded log) and, per micro-batch, decodes the
records on the workers (:mod:`jobs.history.worker`), appends the events to ``events`` and
merges the intervals they open and close (:mod:`jobs.history.intervals`) into ``validity``;
nothing of the batch passes through the driver.

Exactly once: the query's checkpoint fixes each batch's offsets, and both Delta writes carry
Delta's idempotent-write pair (``txnAppId`` = this archive's id, ``txnVersion`` = the batch
id), so a batch replayed after a crash (even a SIGKILL between the two writes) commits each
table at most once.  A record the fold refuses stops the job: the events before it in its
batch are archived, and :class:`~jobs.history.errors.ArchiveStoppedError` names its offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jobs.history.answers import HistoryEvent
from jobs.history.decode import history_event
from jobs.history.errors import ArchiveStoppedError
from jobs.history.intervals import changed_intervals
from jobs.history.tables import (
    EVENTS_PARTITIONING,
    EVENTS_SCHEMA,
    VALIDITY_PARTITIONING,
    VALIDITY_SCHEMA,
    events_path,
    validity_path,
)
from jobs.history.worker import DECODED_SCHEMA, decode_partition, stop_message
from jobs.streaming import idempotent_merge, run_micro_batches, table_app_id
from store.codec import RecordDecodeError
from store.log.base import ChangeLog

DEFAULT_MAX_RECORDS_PER_BATCH: Final = 200_000


@dataclass(frozen=True, slots=True, kw_only=True)
class LogSource:
    """Which log to read: partition 0 of a Kafka topic, or an embedded log's data directory."""

    bootstrap_servers: str | None = None
    topic: str | None = None
    data_dir: Path | None = None

    @classmethod
    def kafka(cls, bootstrap_servers: str, topic: str) -> LogSource:
        return cls(bootstrap_servers=bootstrap_servers, topic=topic)

    @classmethod
    def embedded(cls, data_dir: Path | str) -> LogSource:
        return cls(data_dir=Path(data_dir))

    def __post_init__(self) -> None:
        if (self.data_dir is None) == (self.bootstrap_servers is None):
            raise ValueError("a LogSource is either Kafka (bootstrap servers and topic) or embedded")

    def open_log(self) -> ChangeLog:
        """The log itself, for reading the tail the archive has not reached."""
        if self.data_dir is not None:
            from store.log.embedded import EmbeddedChangeLog

            return EmbeddedChangeLog(self.data_dir)
        from store.log.kafka import KafkaChangeLog

        assert self.bootstrap_servers is not None and self.topic is not None
        return KafkaChangeLog(self.bootstrap_servers, self.topic, create_topic=False)

    def stream(self, spark: Any, max_records_per_batch: int) -> Any:
        """A streaming DataFrame of ``key, value, offset, timestampMs`` records."""
        if self.data_dir is not None:
            from jobs.history.sqlite_source import register

            register(spark)
            return (
                spark.readStream.format("aclstore_embedded_log")
                .option("path", str(self.data_dir))
                .option("maxRecordsPerBatch", str(max_records_per_batch))
                .load()
            )
        return (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap_servers)
            .option("assign", f'{{"{self.topic}":[0]}}')
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(max_records_per_batch))
            # One topic partition would be one task: split it so every core decodes.
            .option("minPartitions", str(spark.sparkContext.defaultParallelism))
            .load()
            .selectExpr("key", "value", "offset", "unix_millis(timestamp) AS timestampMs")
        )


def archive_id(location: str) -> str:
    """The Delta ``txnAppId`` of the archive at ``location`` (stable across restarts)."""
    return table_app_id("history", location)


def ensure_tables(spark: Any, location: str) -> None:
    """Create both tables (empty, partitioned) if they are not there yet."""
    from delta.tables import DeltaTable

    for path, schema, parts in (
        (events_path(location), EVENTS_SCHEMA, EVENTS_PARTITIONING),
        (validity_path(location), VALIDITY_SCHEMA, VALIDITY_PARTITIONING),
    ):
        empty = spark.createDataFrame([], schema)
        (DeltaTable.createIfNotExists(spark).location(path).addColumns(empty.schema)
         .partitionedBy(*parts).execute())  # fmt: skip


def decode_batch(rows: Sequence[Any]) -> tuple[list[HistoryEvent], ArchiveStoppedError | None]:
    """The events of ``(key, value, offset, timestampMs)`` rows in offset order, up to the
    first record the fold refuses (returned as the error that stops the archive)."""
    events: list[HistoryEvent] = []
    for key, value, offset, timestamp_ms in rows:
        try:
            event = history_event(key, value, offset, timestamp_ms)
        except RecordDecodeError as exc:
            return events, ArchiveStoppedError(stop_message(offset, exc), offset=offset)
        if event is not None:
            events.append(event)
    return events, None


def write_batch(spark: Any, location: str, events: Any, batch_id: int) -> None:
    """Append the ``events`` DataFrame (events-table rows) and merge the intervals they open
    and close into ``validity``, each table at most once per ``batch_id``."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as f

    app_id = archive_id(location)
    (events.write.format("delta").mode("append").option("txnAppId", app_id)
     .option("txnVersion", batch_id).save(events_path(location)))  # fmt: skip
    validity = DeltaTable.forPath(spark, validity_path(location))
    source = changed_intervals(events, validity.toDF().filter(f.col("toOffset").isNull()))
    with idempotent_merge(spark, app_id, batch_id):
        # Only open intervals can match (an interval is closed once): the null toOffset lets
        # Delta skip the files that hold closed intervals only.
        (validity.alias("t").merge(
            source.alias("s"), "t.toOffset IS NULL AND t.id = s.id AND t.fromOffset = s.fromOffset"
         ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())  # fmt: skip


def archive_batch(spark: Any, location: str, batch: Any, batch_id: int) -> None:
    """Decode one micro-batch on the workers and write it; raise ArchiveStoppedError (after
    writing what precedes it) when the batch holds a record the fold refuses."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as f

    records = batch.select("key", "value", "offset", "timestampMs").rdd
    decoded = spark.createDataFrame(
        records.mapPartitions(decode_partition), DECODED_SCHEMA, verifySchema=False
    ).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        refused = decoded.filter(f.col("error").isNotNull()).orderBy("offset").limit(1).collect()
        events = decoded.filter(f.col("error").isNull()).drop("error")
        if refused:
            events = events.filter(f.col("offset") < refused[0]["offset"])
        write_batch(spark, location, events, batch_id)
    finally:
        decoded.unpersist()
    if refused:
        offset = int(refused[0]["offset"])
        raise ArchiveStoppedError(str(refused[0]["error"]), offset=offset)


def run_archive(
    spark: Any,
    source: LogSource,
    location: str,
    checkpoint: str,
    *,
    once: bool,
    max_records_per_batch: int = DEFAULT_MAX_RECORDS_PER_BATCH,
) -> None:
    """Archive ``source`` into ``location``: until stopped, or (``once``) until the log's end
    as the job starts (trigger ``availableNow``).  Raises ArchiveStoppedError on a bad record."""
    ensure_tables(spark, location)
    stopped: list[ArchiveStoppedError] = []

    def each_batch(batch: Any, batch_id: int) -> None:
        try:
            archive_batch(spark, location, batch, batch_id)
        except ArchiveStoppedError as error:
            stopped.append(error)
            raise

    try:
        run_micro_batches(
            source.stream(spark, max_records_per_batch), each_batch,
            checkpoint=checkpoint, name="aclstore_history_archive", once=once,
        )  # fmt: skip
    except Exception as exc:
        if stopped:
            raise stopped[0] from exc
        raise
