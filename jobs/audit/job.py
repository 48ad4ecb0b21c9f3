"""The audit job: the audit log, streamed exactly once into Delta tables under one location.

One Structured Streaming query reads the audit log (Spark's Kafka source for ``<topic>-audit``,
the embedded-log source for ``<data dir>/audit``: the jobs' shared
:class:`~jobs.common.source.LogSource`), and :class:`AuditWriter` takes each micro-batch's
records to the driver once (``toArrow`` from Kafka; from the embedded log, the batch's range
read from the log itself: :meth:`~jobs.common.source.LogSource.batch_records`), where
:mod:`jobs.audit.transform` parses them into decisions, drops resent events and derives the
rest.  Each micro-batch then writes four tables:

* ``decisions``: the batch's events, appended (one row per event id);
* ``minutes``: the batch's decisions per one-minute window of event time, principal, resource,
  operation and result, appended as the batch's partial counts: a minute whose events came in
  several batches has a row per batch, and readers sum them (:func:`minute_counts`);
* ``alerts``: the batch's new denials (:func:`jobs.audit.transform.new_denials`), appended,
  measured against the last denials as they stood before the batch;
* ``last_denied``: the last denial of each principal on each resource as it stood before a
  batch, overwritten every :data:`SNAPSHOT_EVERY` batches (the driver carries the current one).

All of a batch's writes run at the same time (:func:`jobs.common.streaming.in_thread`); the batch
ends when all have ended, and fails with the first failure among them.  Each table keeps file
statistics only of the columns its readers filter by (:data:`STATS_COLUMNS`).

Resent events: an event's id is its spool's id and its sequence number in that spool, and a
node's sender ships a spool in order, so a resend is an event whose spool the log already
reached past (:func:`jobs.audit.transform.first_sendings`).  The job keeps the highest number
of each spool, a few bytes per node that ever sent, however late an event comes: no event is
dropped for arriving late, and no state grows with the events.  (Spark's
``dropDuplicatesWithinWatermark``, used before, kept every id of the watermark's span and
scanned all of them each batch.)

Exactly once: the checkpoint fixes each batch's offsets; every write is marked with this
location's id and the batch id (:class:`~jobs.common.streaming.BatchWrites`), so a batch
replayed after a crash, however far it got, adds nothing twice.  What a batch is
measured against is what stood before it, whatever of it was committed: the spools' numbers
are saved beside the checkpoint once a batch's writes have committed
(:class:`jobs.common.streaming.BatchStates`) and a replay starts from the ones saved before it; the
last denials are the ``last_denied`` snapshot (never newer than the batch) and the denials in
``decisions`` after it and before the batch (:class:`AuditWriter`).  So a replay keeps the same
events and finds the same new denials.  A checkpoint of the job before this one (which
deduplicated with Spark's state) resumes where it stopped: its state is set aside
(:func:`retire_dedup_state`) and the numbers are read from ``decisions``.

Why the last denial is a Delta table and not Spark state: the window is days long (7 by
default); a table keyed by principal and resource is as small as the number of pairs ever
denied and survives restarts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from jobs.audit.transform import (
    DEFAULT_WINDOW_DAYS,
    LAST_DENIED_SCHEMA,
    RESOURCE_KEY,
    decision_rows,
    first_sendings,
    merged_last_denied,
    minute_rows,
    new_denials,
    reached_in,
)
from jobs.common.source import LogSource
from jobs.common.streaming import (
    BatchStates,
    BatchWrites,
    Running,
    StreamProgress,
    arrow_frame,
    hadoop_path,
    in_thread,
    run_micro_batches,
    table_app_id,
    wait_all,
)

DEFAULT_MAX_RECORDS_PER_BATCH: Final = 200_000
_log = logging.getLogger("aclstore.audit")
SEQUENCES: Final = "aclstore-audit-sequences"
"""The folder under the checkpoint that holds each batch's spools' sequence numbers."""
RETIRED_STATE: Final = "state-before-sequence-dedup"
SNAPSHOT_EVERY: Final = 10
"""``last_denied`` is rewritten every this many batches (:class:`AuditWriter`)."""
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
    """The id the job marks its commits to the tables at ``location`` with (stable across
    restarts; Delta's ``txnAppId`` too)."""
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
    window_days: int = DEFAULT_WINDOW_DAYS,
    on_progress: Callable[[StreamProgress], None] | None = None,
) -> None:
    """Until stopped, or (``once``) until the audit log's end as the job starts.
    ``on_progress``: told how far the job has got, about once a second."""
    ensure_tables(spark, location)
    retire_dedup_state(spark, checkpoint)
    states = BatchStates(spark, f"{checkpoint.rstrip('/')}/{SEQUENCES}")
    writer = AuditWriter(spark, location, states, window_days, source.batch_records(spark, checkpoint))
    run_micro_batches(source.stream(spark, max_records_per_batch), writer, checkpoint=checkpoint,
                      name="aclstore_audit", once=once, on_progress=on_progress)  # fmt: skip


def retire_dedup_state(spark: Any, checkpoint: str) -> None:
    """Set aside the state of the query that the job before this one ran (Spark's
    deduplication within a watermark) in ``checkpoint``, so the query resumes from its
    committed offsets and batch ids with no stateful operator (Spark refuses a checkpoint
    whose state names an operator the query no longer has).  The folder is renamed
    ``state-before-sequence-dedup``, not removed.  The spools' numbers are then read from
    ``decisions`` (:class:`AuditWriter`)."""
    fs, state = hadoop_path(spark, f"{checkpoint.rstrip('/')}/state")
    if fs.exists(state):
        _, aside = hadoop_path(spark, f"{checkpoint.rstrip('/')}/{RETIRED_STATE}")
        if not fs.rename(state, aside):
            raise OSError(f"could not rename {state} to {aside}: move it aside by hand")
        _log.warning("set aside the previous audit job's deduplication state: %s", aside)


def minute_counts(spark: Any, location: str) -> Any:
    """The ``minutes`` table as counts: one row per minute and key, the batches' partial
    counts summed (:func:`jobs.audit.transform.summed_minutes`)."""
    from jobs.audit.transform import summed_minutes

    return summed_minutes(spark.read.format("delta").load(table_path(location, "minutes")))


class AuditWriter:
    """Writes a run's micro-batches, carrying between them what the next one is measured
    against: each spool's highest sequence number and the last denials.

    A batch's records are read once (``records``) into Arrow columns on the driver, which
    are every table's source (:mod:`jobs.audit.transform`): Spark appends the decisions to
    ``decisions``, their per-minute counts to ``minutes`` and the new denials to ``alerts``,
    all at the same time.  After each batch whose writes committed, the sequence numbers are
    saved (``states``: the document of the batch, with ``snapshotThrough``, the last audit
    offset the ``last_denied`` table reflects).

    ``last_denied`` is a snapshot, rewritten every :data:`SNAPSHOT_EVERY` batches with the last
    denials as they stood *before* the batch (beside the batch's other writes), so it never
    holds a batch's own denials while that batch may be replayed.  At the run's first batch
    the last denials are that snapshot and the denials in ``decisions`` after it and before
    the batch's first row (a replayed batch's own rows, committed or not, are after that).
    With no document saved (a new location, or one the job before this one wrote), the numbers
    are read from the ids in ``decisions`` before the batch's first record, and the last
    denials from all of its denials before the batch's first row and the table.
    """

    def __init__(
        self,
        spark: Any,
        location: str,
        states: BatchStates,
        window_days: int,
        records: Callable[[Any, int], Any] = lambda batch, _: batch.toArrow(),
    ) -> None:
        self.spark = spark
        self.records = records
        self.location = location
        self.app_id = table_id(location)
        self.writes = BatchWrites(spark, self.app_id)
        self.states = states
        self.window_days = window_days
        self.reached: dict[str, int] | None = None
        self.snapshot_through = -1
        self.last_denied: Any = None

    def __call__(self, batch: Any, batch_id: int) -> None:
        self.write(self.records(batch, batch_id), batch_id)

    def write(self, records: Any, batch_id: int) -> None:
        """One micro-batch's ``records`` (Arrow, the log sources' columns, in offset order)
        into the tables, each at most once per ``batch_id``; the first failure, once all
        writes have ended."""
        import pyarrow.compute as pc

        if self.reached is None:
            saved = self.states.before(batch_id)
            if saved is not None:
                self.reached = {str(k): int(v) for k, v in saved["sequences"].items()}
                self.snapshot_through = int(saved["snapshotThrough"])
            else:  # a new location, or one the job before this one wrote
                first = pc.min(records["offset"]).as_py()
                decisions = self.spark.read.format("delta").load(table_path(self.location, "decisions"))
                self.reached = reached_in(decisions, first) if first is not None else {}
        rows, reached = first_sendings(decision_rows(records), self.reached)
        if rows.num_rows:
            self.write_rows(rows, batch_id)
            self.states.save(batch_id, {"sequences": reached, "snapshotThrough": self.snapshot_through})
            self.reached = reached

    def write_rows(self, rows: Any, batch_id: int) -> None:
        """Write the batch's decisions ``rows`` (new to the tables); the last denials move
        past them."""
        import pyarrow.compute as pc

        spark, location, tables = self.spark, self.location, self.writes
        first_row = int(pc.min(rows["auditOffset"]).as_py())
        if self.last_denied is None:
            self.last_denied = self.read_last_denied(first_row)

        def append(table: Any, name: str) -> Running:
            return in_thread(tables.write, arrow_frame(spark, table), table_path(location, name), batch_id)

        writes = [append(rows, "decisions"), append(minute_rows(rows), "minutes")]
        snapshot_through = self.snapshot_through
        try:
            alerts = new_denials(rows, self.last_denied, self.window_days)
            if alerts.num_rows:
                writes.append(append(alerts, "alerts"))
            if batch_id % SNAPSHOT_EVERY == 0:
                snapshot = arrow_frame(spark, self.last_denied)
                path = table_path(location, "last_denied")
                tables.write(snapshot, path, batch_id, mode="overwrite")
                snapshot_through = first_row - 1
        finally:
            wait_all(writes)
        self.last_denied = merged_last_denied(self.last_denied, rows)
        self.snapshot_through = snapshot_through

    def read_last_denied(self, before: int) -> Any:
        """The last denials before the audit offset ``before``: the ``last_denied`` snapshot
        and the denials in ``decisions`` after what it reflects (all of them when no batch
        saved that: the later of two denials of a pair is the same whichever came twice)."""
        from pyspark.sql import functions as f

        table = self.spark.read.format("delta").load(table_path(self.location, "last_denied"))
        snapshot = table.select(*LAST_DENIED_SCHEMA.names).toArrow().cast(LAST_DENIED_SCHEMA)
        decisions = self.spark.read.format("delta").load(table_path(self.location, "decisions"))
        offset = f.col("auditOffset")
        later = decisions.filter((offset > self.snapshot_through) & (offset < before)
                                 & (f.col("result") == "DENIED"))  # fmt: skip
        latest = later.groupBy(*RESOURCE_KEY).agg(f.max("time").alias("time"))
        return merged_last_denied(snapshot, latest.withColumn("result", f.lit("DENIED")).toArrow())
