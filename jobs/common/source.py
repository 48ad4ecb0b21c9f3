"""Which log a job reads: partition 0 of a Kafka topic, or an embedded log's data directory.

Every streaming job reads its log as a streaming DataFrame of ``key, value, offset,
timestampMs`` records (:meth:`LogSource.stream`: Spark's Kafka source for a topic,
:mod:`jobs.common.sqlite_source` for the embedded log); the history's questions also read
the log itself (:meth:`LogSource.open_log`) for the tail the archive has not reached.  The
change log and the audit log are both read so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from store.log.base import ChangeLog
from store.log.client_properties import KafkaClientProperties

DEFAULT_MAX_RECORDS_PER_BATCH: Final = 200_000
"""Records per micro-batch, at most, of a streaming job over the change log (the downgrade
watch)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LogSource:
    """Which log to read: partition 0 of a Kafka topic, or an embedded log's data directory.

    ``client`` is how a Kafka log's clients connect (SASL, TLS: ``--log-config``), for Spark's
    Kafka source and for the reader of the tail alike; none: PLAINTEXT."""

    bootstrap_servers: str | None = None
    topic: str | None = None
    data_dir: Path | None = None
    client: KafkaClientProperties | None = None

    @classmethod
    def kafka(
        cls, bootstrap_servers: str, topic: str, client: KafkaClientProperties | None = None
    ) -> LogSource:
        return cls(bootstrap_servers=bootstrap_servers, topic=topic, client=client)

    @classmethod
    def embedded(cls, data_dir: Path | str) -> LogSource:
        return cls(data_dir=Path(data_dir))

    def __post_init__(self) -> None:
        if (self.data_dir is None) == (self.bootstrap_servers is None):
            raise ValueError("a LogSource is either Kafka (bootstrap servers and topic) or embedded")
        if self.client is not None and self.data_dir is not None:
            raise ValueError("Kafka client properties configure a Kafka log, not an embedded one")

    def open_log(self) -> ChangeLog:
        """The log itself, for reading the tail the archive has not reached."""
        if self.data_dir is not None:
            from store.log.embedded import EmbeddedChangeLog

            return EmbeddedChangeLog(self.data_dir)
        from store.log.kafka import KafkaChangeLog

        assert self.bootstrap_servers is not None and self.topic is not None
        return KafkaChangeLog(
            self.bootstrap_servers, self.topic, create_topic=False, client=self.client
        )

    def batch_records(self, spark: Any, checkpoint: str) -> Callable[[Any, int], Any]:
        """How a job whose query checkpoints at ``checkpoint`` takes a micro-batch's records
        (``key, value, offset, timestampMs``) to the driver as one Arrow table, called with
        the batch's DataFrame and id: the DataFrame collected (``toArrow``) from Kafka; the
        batch's range read from the embedded log itself
        (:func:`jobs.common.sqlite_source.batch_records`), which spares every record Spark's
        rows, one way and back: the batch's DataFrame is then never run."""
        if self.data_dir is None:
            return lambda batch, _: batch.toArrow()
        from jobs.common.sqlite_source import batch_records
        from jobs.common.streaming import OffsetLog

        data_dir, offsets = str(self.data_dir), OffsetLog(spark, checkpoint)
        return lambda _, batch_id: batch_records(data_dir, offsets, batch_id)

    def stream(self, spark: Any, max_records_per_batch: int) -> Any:
        """A streaming DataFrame of ``key, value, offset, timestampMs`` records."""
        if self.data_dir is not None:
            from jobs.common.sqlite_source import register

            register(spark)
            return (
                spark.readStream.format("aclstore_embedded_log")
                .option("path", str(self.data_dir))
                .option("maxRecordsPerBatch", str(max_records_per_batch))
                .option("minPartitions", str(spark.sparkContext.defaultParallelism))
                .load()
            )
        return (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap_servers)
            .options(**(self.client.spark_kafka_options() if self.client else {}))
            .option("assign", f'{{"{self.topic}":[0]}}')
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(max_records_per_batch))
            # One topic partition would be one task: split it so every core decodes.
            .option("minPartitions", str(spark.sparkContext.defaultParallelism))
            .load()
            .selectExpr("key", "value", "offset", "unix_millis(timestamp) AS timestampMs")
        )
