"""The audit job: the audit log, streamed exactly once into a Delta table of decisions.

One Structured Streaming query reads the audit log (Spark's Kafka source for ``<topic>-audit``,
the embedded-log source for ``<data dir>/audit``: the history archive's
:class:`~jobs.history.archive.LogSource`), parses each event
(:func:`jobs.audit.transform.decisions`) and merges each micro-batch into
``<location>/decisions`` on the event id, inserting only ids the table does not hold: a resent
event, however late, is recorded once, and a batch replayed after a crash inserts nothing twice
(the merge also carries Delta's idempotent-write pair, ``txnAppId`` = this table's id and
``txnVersion`` = the batch id).  No event-time watermark drops anything here: an event shipped
hours late (a node that was cut off from the audit log) is as much a decision as a fresh one;
the per-minute figures are computed from the table (:func:`jobs.audit.transform.per_minute`).
"""

from __future__ import annotations

from typing import Any, Final

from jobs.audit.transform import decisions, deduplicated
from jobs.history.archive import LogSource
from jobs.streaming import idempotent_merge, run_micro_batches, table_app_id

DEFAULT_MAX_RECORDS_PER_BATCH: Final = 200_000


def decisions_path(location: str) -> str:
    return location.rstrip("/") + "/decisions"


def table_id(location: str) -> str:
    """The Delta ``txnAppId`` of the table at ``location`` (stable across restarts)."""
    return table_app_id("audit", location)


def run_audit(
    spark: Any,
    source: LogSource,
    location: str,
    checkpoint: str,
    *,
    once: bool,
    max_records_per_batch: int = DEFAULT_MAX_RECORDS_PER_BATCH,
) -> None:
    """Until stopped, or (``once``) until the audit log's end as the job starts."""
    app_id, path = table_id(location), decisions_path(location)

    def each_batch(batch: Any, batch_id: int) -> None:
        merge_batch(spark, deduplicated(batch), path, app_id, batch_id)

    run_micro_batches(
        decisions(source.stream(spark, max_records_per_batch)), each_batch,
        checkpoint=checkpoint, name="aclstore_audit", once=once,
    )  # fmt: skip


def merge_batch(spark: Any, rows: Any, path: str, app_id: str, batch_id: int) -> None:
    """Insert the rows whose id the table does not hold yet (creating the table if needed)."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        rows.limit(0).write.format("delta").mode("ignore").save(path)
    with idempotent_merge(spark, app_id, batch_id):
        (DeltaTable.forPath(spark, path).alias("t").merge(rows.alias("s"), "t.id = s.id")
         .whenNotMatchedInsertAll().execute())  # fmt: skip
