"""The audit job: the audit log, streamed exactly once into a Delta table of decisions.

One Structured Streaming query reads the audit log (Spark's Kafka source for ``<topic>-audit``,
the embedded-log source for ``<data dir>/audit``: the history archive's
:class:`~jobs.history.archive.LogSource`), parses each event
(:func:`jobs.audit.transform.decisions`), drops resent events by id within the watermark and
appends each micro-batch to ``<location>/decisions`` with Delta's idempotent-write pair
(``txnAppId`` = this table's id, ``txnVersion`` = the batch id): a batch replayed after a crash
commits at most once, and the checkpoint fixes which records each batch holds.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from jobs.audit.transform import decisions, deduplicated
from jobs.history.archive import LogSource

DEFAULT_WATERMARK: Final = "1 hour"
"""How late (in event time) a resent event may come and still be recognised as one."""
DEFAULT_MAX_RECORDS_PER_BATCH: Final = 200_000


def decisions_path(location: str) -> str:
    return location.rstrip("/") + "/decisions"


def table_id(location: str) -> str:
    """The Delta ``txnAppId`` of the table at ``location`` (stable across restarts)."""
    return "aclstore-audit-" + hashlib.sha256(location.rstrip("/").encode()).hexdigest()[:16]


def run_audit(
    spark: Any,
    source: LogSource,
    location: str,
    checkpoint: str,
    *,
    once: bool,
    watermark: str = DEFAULT_WATERMARK,
    max_records_per_batch: int = DEFAULT_MAX_RECORDS_PER_BATCH,
) -> None:
    """Until stopped, or (``once``) until the audit log's end as the job starts."""
    app_id, path = table_id(location), decisions_path(location)

    def each_batch(batch: Any, batch_id: int) -> None:
        (batch.write.format("delta").mode("append").option("txnAppId", app_id)
         .option("txnVersion", batch_id).save(path))  # fmt: skip

    rows = deduplicated(decisions(source.stream(spark, max_records_per_batch)), watermark)
    writer = (
        rows.writeStream.foreachBatch(each_batch)
        .option("checkpointLocation", checkpoint)
        .queryName("aclstore_audit")
    )
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime="1 second")
    query = writer.start()
    try:
        query.awaitTermination()
    finally:
        query.stop()
