"""The audit job: the audit log, streamed exactly once into Delta tables under one location.

One Structured Streaming query reads the audit log (Spark's Kafka source for ``<topic>-audit``,
the embedded-log source for ``<data dir>/audit``: the history archive's
:class:`~jobs.history.archive.LogSource`), parses each event
(:func:`jobs.audit.transform.decisions`), and drops resent events on their id with an
event-time watermark ``late_bound`` behind the latest event
(:func:`jobs.audit.transform.within_bound`: the dedup state holds about that much time of ids).
Each micro-batch then writes, in this order:

* ``decisions``: the batch's events, appended (one row per event id);
* ``minutes``: the batch's decisions per one-minute window of event time, principal, resource,
  operation and result, *added* to the counts the table holds (a MERGE on the window's key);
* ``alerts``: the batch's new denials (:func:`jobs.audit.transform.new_denials_in_batch`),
  appended, measured against ``last_denied`` as it stood before the batch;
* ``last_denied``: the last denial of each principal on each resource, merged.

Exactly once: the checkpoint fixes each batch's offsets and the dedup state; every write
carries Delta's idempotent-write pair (``txnAppId`` = this location's id, ``txnVersion`` =
the batch id), so a batch replayed after a crash, however far it got, adds nothing twice.
``alerts`` is written before ``last_denied`` moves: a replay finds ``last_denied`` either as
it was (and computes the same alerts) or moved (and then the alerts were committed already,
so their write is skipped).

Why the last denial is a Delta table and not Spark state: the window is days long (7 by
default), far past any watermark worth holding in a state store; a table keyed by principal
and resource is as small as the number of pairs ever denied, survives restarts and a new
checkpoint, and the report and the cause join can read it.

An event later than ``late_bound`` (a node cut off from the audit log for longer) is not
recorded: Spark counts it (``numRowsDroppedByWatermark`` in the query's progress).
Choose the bound above the longest audit-log outage the nodes' spools ride out.
"""

from __future__ import annotations

from typing import Any, Final

from jobs.audit.transform import (
    DEFAULT_WINDOW_DAYS,
    MINUTE_KEY,
    RESOURCE_KEY,
    decisions,
    last_denied,
    new_denials_in_batch,
    per_minute,
    within_bound,
)
from jobs.history.archive import LogSource
from jobs.streaming import idempotent_merge, run_micro_batches, table_app_id

DEFAULT_MAX_RECORDS_PER_BATCH: Final = 200_000
DEFAULT_LATE_BOUND: Final = "10 minutes"
STATE_STORE: Final = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
"""The dedup state on local disk (RocksDB), not the JVM heap: at tens of thousands of events
a second, ten minutes of ids do not fit a driver's heap."""

_DECISIONS_DDL: Final = (
    "id STRING, time TIMESTAMP, source STRING, principal STRING, host STRING, "
    "operation STRING, resourceType STRING, resourceName STRING, patternType STRING, "
    "result STRING, rule STRING, binding STRING, aclOffset BIGINT, auditOffset BIGINT"
)
SCHEMAS: Final = {
    "decisions": _DECISIONS_DDL,
    "minutes": "minute TIMESTAMP, principal STRING, resourceType STRING, resourceName STRING, "
    "operation STRING, result STRING, decisions BIGINT",
    "alerts": _DECISIONS_DDL + ", previousDenied TIMESTAMP",
    "last_denied": "principal STRING, resourceType STRING, resourceName STRING, "
    "lastDenied TIMESTAMP",
}
"""Each table of the job, by its folder under the location."""

def table_path(location: str, name: str) -> str:
    """Where the table ``name`` (a key of :data:`SCHEMAS`) lives under ``location``."""
    if name not in SCHEMAS:
        raise ValueError(f"no audit table {name!r}: one of {', '.join(SCHEMAS)}")
    return f"{location.rstrip('/')}/{name}"


def decisions_path(location: str) -> str:
    return table_path(location, "decisions")


def table_id(location: str) -> str:
    """The Delta ``txnAppId`` of the tables at ``location`` (stable across restarts)."""
    return table_app_id("audit", location)


def ensure_tables(spark: Any, location: str) -> None:
    """Create every table of the job (empty) if it is not there yet."""
    from delta.tables import DeltaTable
    from pyspark.sql.types import StructType

    for name, ddl in SCHEMAS.items():
        schema = StructType.fromDDL(ddl)
        assert isinstance(schema, StructType)
        builder = DeltaTable.createIfNotExists(spark).location(table_path(location, name))
        if name == "minutes":  # merged every batch: mark rows deleted instead of rewriting files
            builder = builder.property("delta.enableDeletionVectors", "true")
        builder.addColumns(schema).execute()


def run_audit(
    spark: Any,
    source: LogSource,
    location: str,
    checkpoint: str,
    *,
    once: bool,
    max_records_per_batch: int = DEFAULT_MAX_RECORDS_PER_BATCH,
    late_bound: str = DEFAULT_LATE_BOUND,
    window_days: int = DEFAULT_WINDOW_DAYS,
) -> None:
    """Until stopped, or (``once``) until the audit log's end as the job starts."""
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", STATE_STORE)
    ensure_tables(spark, location)
    app_id = table_id(location)

    def each_batch(batch: Any, batch_id: int) -> None:
        write_batch(spark, batch, location, app_id, batch_id, window_days)

    stream = within_bound(decisions(source.stream(spark, max_records_per_batch)), late_bound)
    run_micro_batches(stream, each_batch, checkpoint=checkpoint, name="aclstore_audit", once=once)


def write_batch(
    spark: Any, batch: Any, location: str, app_id: str, batch_id: int, window_days: int
) -> None:
    """One micro-batch's new events into the four tables, each at most once per ``batch_id``."""
    from pyspark import StorageLevel

    rows = batch.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if rows.isEmpty():
            return
        path = table_path(location, "decisions")
        (rows.write.format("delta").mode("append").option("txnAppId", app_id)
         .option("txnVersion", batch_id).save(path))  # fmt: skip
        add_minutes(spark, per_minute(rows), table_path(location, "minutes"), app_id, batch_id)
        raise_alerts(spark, rows, location, app_id, batch_id, window_days)
    finally:
        rows.unpersist()


def add_minutes(spark: Any, counts: Any, path: str, app_id: str, batch_id: int) -> None:
    """Add ``counts`` (:func:`~jobs.audit.transform.per_minute` rows) to the table's."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as f

    counts = counts.persist()
    try:
        first = counts.agg(f.min("minute")).collect()[0][0]
        # The earliest minute as a literal lets Delta skip the files of older minutes.
        on = " AND ".join(f"t.{c} = s.{c}" for c in MINUTE_KEY)
        on += f" AND t.minute >= timestamp'{first.isoformat(sep=' ')}'"
        with idempotent_merge(spark, app_id, batch_id):
            (DeltaTable.forPath(spark, path).alias("t").merge(counts.alias("s"), on)
             .whenMatchedUpdate(set={"decisions": "t.decisions + s.decisions"})
             .whenNotMatchedInsertAll().execute())  # fmt: skip
    finally:
        counts.unpersist()


def raise_alerts(
    spark: Any, rows: Any, location: str, app_id: str, batch_id: int, window_days: int
) -> None:
    """Append the batch's new denials to ``alerts``, then move ``last_denied`` past them."""
    from delta.tables import DeltaTable

    last = DeltaTable.forPath(spark, table_path(location, "last_denied"))
    alerts = new_denials_in_batch(rows, last.toDF(), window_days)
    (alerts.write.format("delta").mode("append").option("txnAppId", app_id)
     .option("txnVersion", batch_id).save(table_path(location, "alerts")))  # fmt: skip
    on = " AND ".join(f"t.{c} = s.{c}" for c in RESOURCE_KEY)
    with idempotent_merge(spark, app_id, batch_id):
        (last.alias("t").merge(last_denied(rows).alias("s"), on)
         .whenMatchedUpdate(condition="s.lastDenied > t.lastDenied",
                            set={"lastDenied": "s.lastDenied"})
         .whenNotMatchedInsertAll().execute())  # fmt: skip

