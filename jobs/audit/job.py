"""The audit job: the audit log, streamed exactly once into Delta tables under one location.

One Structured Streaming query reads the audit log (Spark's Kafka source for ``<topic>-audit``,
the embedded-log source for ``<data dir>/audit``: the history archive's
:class:`~jobs.history.archive.LogSource`), parses each event
(:func:`jobs.audit.transform.decisions`), and drops resent events on their id with an
event-time watermark ``late_bound`` behind the latest event
(:func:`jobs.audit.transform.within_bound`: the dedup state holds about that much time of ids).
Each micro-batch then writes four tables:

* ``decisions``: the batch's events, appended (one row per event id);
* ``minutes``: the batch's decisions per one-minute window of event time, principal, resource,
  operation and result, appended as the batch's partial counts: a minute whose events came in
  several batches has a row per batch, and readers sum them (:func:`minute_counts`);
* ``alerts``: the batch's new denials (:func:`jobs.audit.transform.new_denials_in_batch`),
  appended, measured against ``last_denied`` as it stood before the batch;
* ``last_denied``: the last denial of each principal on each resource, overwritten with the
  table's rows and the batch's denials, the latest per pair
  (:func:`jobs.audit.transform.merged_last_denied`).

Each write is an append, except ``last_denied``: one overwrite, as many rows as pairs ever
denied (at 25,000 decisions/s in ``python -m bench audit``, about 1.2 s of a 4.2 s batch).
Neither a Delta MERGE with deletion vectors nor appended per-batch maxima read back through
a join with the batch's pairs was cheaper there (4.4-4.6 s against 2.6-2.8 s for the alerts
and ``last_denied`` together).  The ``decisions`` and ``minutes`` appends depend on nothing
but the batch, so they run beside the other two (:func:`jobs.streaming.in_thread`); ``alerts``
is written before ``last_denied`` moves.  The batch ends when all four have ended, and fails
with the first failure among them.  Each table keeps file statistics only of the columns its
readers filter by (:data:`STATS_COLUMNS`).

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
    decisions,
    last_denied,
    merged_last_denied,
    new_denials_in_batch,
    per_minute,
    within_bound,
)
from jobs.history.archive import LogSource
from jobs.streaming import idempotent_write, in_thread, run_micro_batches, table_app_id, wait_all

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
STATS_COLUMNS: Final = {
    "decisions": "time,auditOffset",
    "minutes": "minute",
    "alerts": "time",
    "last_denied": "lastDenied",
}
"""The columns each table keeps per-file statistics of (``delta.dataSkippingStatsColumns``):
the times reports and charts filter by (and the audit log's offsets), not Delta's default of
the first 32 columns, whose string statistics every write would compute."""

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
        (DeltaTable.createIfNotExists(spark).location(table_path(location, name)).addColumns(schema)
         .property("delta.dataSkippingStatsColumns", STATS_COLUMNS[name]).execute())  # fmt: skip


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


def minute_counts(spark: Any, location: str) -> Any:
    """The ``minutes`` table as counts: one row per minute and key, the batches' partial
    counts summed (:func:`jobs.audit.transform.summed_minutes`)."""
    from jobs.audit.transform import summed_minutes

    return summed_minutes(spark.read.format("delta").load(table_path(location, "minutes")))


def write_batch(
    spark: Any, batch: Any, location: str, app_id: str, batch_id: int, window_days: int
) -> None:
    """One micro-batch's new events into the four tables, each at most once per ``batch_id``:
    ``decisions`` and ``minutes`` beside the alerts; the first failure, once all have ended."""
    from pyspark import StorageLevel

    rows = batch.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if not rows.count():  # every partition computed once, then read from the cache
            return
        appends = [
            in_thread(idempotent_write, rows, table_path(location, "decisions"), app_id, batch_id),
            in_thread(idempotent_write, per_minute(rows), table_path(location, "minutes"), app_id, batch_id),
        ]
        try:
            raise_alerts(spark, rows, location, app_id, batch_id, window_days)
        finally:
            wait_all(appends)
    finally:
        rows.unpersist()


def raise_alerts(
    spark: Any, rows: Any, location: str, app_id: str, batch_id: int, window_days: int
) -> None:
    """Append the batch's new denials to ``alerts``, then move ``last_denied`` past them.

    A batch with no new denial (most of them) commits nothing to ``alerts``: a replay of it
    finds no alert either (``last_denied`` as it was gives the same none; moved past the
    batch, it makes every denial of the batch a late one).  ``last_denied`` is rewritten
    whole, from the rows read for the alerts (held in memory, so both see one version)."""
    from pyspark import StorageLevel

    path = table_path(location, "last_denied")
    previous = spark.read.format("delta").load(path).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        alerts = new_denials_in_batch(rows, previous, window_days).persist()
        try:
            if not alerts.isEmpty():
                idempotent_write(alerts, table_path(location, "alerts"), app_id, batch_id)
        finally:
            alerts.unpersist()
        latest = merged_last_denied(previous, last_denied(rows))
        idempotent_write(latest, path, app_id, batch_id, mode="overwrite")
    finally:
        previous.unpersist()
