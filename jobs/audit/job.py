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

from datetime import UTC, datetime
from typing import Any, Final

from jobs.audit.transform import (
    DEFAULT_WINDOW_DAYS,
    RESOURCE_KEY,
    decisions,
    last_denied,
    new_denials_in_batch,
    per_minute,
    within_bound,
)
from jobs.history.archive import LogSource
from jobs.streaming import idempotent_merge, run_micro_batches, session_conf, table_app_id

DEFAULT_MAX_RECORDS_PER_BATCH: Final = 200_000
DEFAULT_LATE_BOUND: Final = "10 minutes"
STATE_STORE: Final = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
"""The dedup state on local disk (RocksDB), not the JVM heap: at tens of thousands of events
a second, ten minutes of ids do not fit a driver's heap."""
CHANGELOG_CHECKPOINTING: Final = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
"""Each batch's commit of the dedup state writes the batch's changes (a changelog file)
instead of flushing RocksDB and copying its new SST files; snapshots are taken in the
background.  A checkpoint written either way is read by both."""

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
    spark.conf.set(CHANGELOG_CHECKPOINTING, "true")
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
    """Add ``counts`` (:func:`~jobs.audit.transform.per_minute` rows) to the table's.

    The minutes the batch touched are rewritten whole, in one overwrite with ``replaceWhere``
    on those minutes: the rows the table holds for them plus the batch's counts, summed per
    key (:func:`~jobs.audit.transform.added_counts`).  That is one read and one write of the
    touched minutes, where a MERGE joins the batch with them twice (to find the files, then
    to rewrite them).  A replayed batch reads counts that may already include its own, but
    its write carries the batch's ``txnVersion`` and Delta skips it."""
    from pyspark.sql import functions as f

    from jobs.audit.transform import added_counts

    counts = counts.persist()
    try:
        touched = counts.select(f.unix_micros("minute")).distinct().collect()
        if not touched:
            return
        minutes = sorted(int(r[0]) for r in touched)
        where = "minute IN (" + ", ".join(_timestamp_literal(m) for m in minutes) + ")"
        held = spark.read.format("delta").load(path).where(where)
        (added_counts(held, counts).write.format("delta").mode("overwrite")
         .option("replaceWhere", where).option("txnAppId", app_id).option("txnVersion", batch_id)
         .save(path))  # fmt: skip
    finally:
        counts.unpersist()


def _timestamp_literal(micros: int) -> str:
    """A Spark SQL timestamp literal of microseconds since the epoch, in UTC: the same
    instant whatever the session's time zone (a plain literal, so Delta skips files by it)."""
    return f"timestamp'{datetime.fromtimestamp(micros / 1e6, UTC).isoformat(sep=' ')}'"


def raise_alerts(
    spark: Any, rows: Any, location: str, app_id: str, batch_id: int, window_days: int
) -> None:
    """Append the batch's new denials to ``alerts``, then move ``last_denied`` past them.

    A batch with no new denial (most of them) commits nothing to ``alerts``: a replay of it
    finds no alert either (``last_denied`` as it was gives the same none; moved past the
    batch, it makes every denial of the batch a late one)."""
    from delta.tables import DeltaTable

    last = DeltaTable.forPath(spark, table_path(location, "last_denied"))
    alerts = new_denials_in_batch(rows, last.toDF(), window_days).persist()
    try:
        if not alerts.isEmpty():
            (alerts.write.format("delta").mode("append").option("txnAppId", app_id)
             .option("txnVersion", batch_id).save(table_path(location, "alerts")))  # fmt: skip
    finally:
        alerts.unpersist()
    on = " AND ".join(f"t.{c} = s.{c}" for c in RESOURCE_KEY)
    latest = last_denied(rows).persist()
    try:
        with idempotent_merge(spark, app_id, batch_id), session_conf(spark, _SOURCE_CACHED):
            (last.alias("t").merge(latest.alias("s"), on)
             .whenMatchedUpdate(condition="s.lastDenied > t.lastDenied",
                                set={"lastDenied": "s.lastDenied"})
             .whenNotMatchedInsertAll().execute())  # fmt: skip
    finally:
        latest.unpersist()


_SOURCE_CACHED: Final = {"spark.databricks.delta.merge.materializeSource": "none"}
"""A MERGE whose source is a persisted frame: Delta need not copy it once more (it does so
to read a source that might change between its two passes; a persisted one does not)."""
