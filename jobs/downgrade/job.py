"""The downgrade watch on Spark: a Structured Streaming query over the change log that keeps
the live state and alerts when it becomes unsafe, or safe again, to downgrade to a format.

The log is read as the history archive reads it (:meth:`jobs.common.source.LogSource.stream`)
and each micro-batch is decoded as the archive decodes it
(:func:`jobs.common.spark_decode.decode_records`: the common event by Spark's Avro reader, the
rest by the one fold in Python), its rows brought to the driver.  The driver folds the batch's
events into the live state (:class:`jobs.downgrade.watch.LiveState`), judges the state at the
batch's end, and:

* on a transition only, appends one row to the ``alerts`` Delta table;
* merges the batch's net changes (and the offset reached) into the ``state`` Delta table, from
  which a restarted watch resumes;
* rewrites the Prometheus text file (``aclstore_downgrade_safe{to="N"}`` and friends) that
  node_exporter's textfile collector serves.

Exactly once: both Delta writes carry Delta's idempotent-write pair (:mod:`jobs.common.streaming`),
the alert is written before the state, and the previous verdict is read from the alerts
table, so a batch replayed after a crash (whatever it had written) adds no second alert.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jobs.common.errors import JobError
from jobs.common.events import SETTING_KIND, binding_identity, setting_identity
from jobs.common.rows import event_of_row
from jobs.common.source import DEFAULT_MAX_RECORDS_PER_BATCH, LogSource
from jobs.common.spark_decode import decode_records
from jobs.common.streaming import idempotent_merge, idempotent_write, run_micro_batches, table_app_id
from jobs.common.worker import DECODED_ARROW_SCHEMA
from jobs.downgrade.watch import (
    Alert,
    LiveState,
    Verdict,
    last_safe,
    prometheus_text,
    transition,
    unsafe_since,
)
from store.access_diff import Request
from store.acl import AclBinding, AclOperation, ResourceType, parse_fields

ALERTS_DIR: Final = "alerts"
STATE_DIR: Final = "state"
_BINDING_COLUMNS: Final = (
    "resourceType STRING, name STRING, patternType STRING, principal STRING, host STRING, "
    "operation STRING, permission STRING"
)
ALERTS_SCHEMA: Final = (
    "offset BIGINT, timeMs BIGINT, toVersion INT, transition STRING, safe BOOLEAN, "
    "widened INT, ignored INT, witnessPrincipal STRING, witnessHost STRING, "
    "witnessOperation STRING, witnessResourceType STRING, witnessResourceName STRING, "
    "batchId BIGINT"
)
STATE_SCHEMA: Final = (
    f"id STRING, kind STRING, {_BINDING_COLUMNS}, configName STRING, configValue STRING, "
    "offset BIGINT, timeMs BIGINT"
)
_OFFSET: Final = DECODED_ARROW_SCHEMA.get_field_index("offset")
_ERROR: Final = DECODED_ARROW_SCHEMA.get_field_index("error")
"""Where a decoded row (:data:`~jobs.common.worker.DECODED_ARROW_SCHEMA`) holds its offset and
the fold's refusal."""
_PROGRESS: Final = "progress"
_BINDING: Final = "binding"


class WatchStoppedError(JobError):
    """The watch met a record the fold refuses; the state before it is kept."""


def alerts_path(location: str) -> str:
    return f"{location.rstrip('/')}/{ALERTS_DIR}"


def state_path(location: str) -> str:
    return f"{location.rstrip('/')}/{STATE_DIR}"


def alert_row(alert: Alert, batch_id: int) -> tuple[Any, ...]:
    w = alert.witness
    witness = (None,) * 5 if w is None else (
        w.principal, w.host, w.operation.name, w.resource_type.name, w.resource_name
    )  # fmt: skip
    return (alert.offset, alert.time_ms, alert.version, alert.transition, alert.safe,
            alert.widened, alert.ignored, *witness, batch_id)  # fmt: skip


def alert_of_row(row: Any) -> Alert:
    witness = None
    if row["witnessPrincipal"] is not None:
        witness = Request(row["witnessPrincipal"], row["witnessHost"],
                          AclOperation[row["witnessOperation"]],
                          ResourceType[row["witnessResourceType"]], row["witnessResourceName"])  # fmt: skip
    return Alert(
        offset=row["offset"], time_ms=row["timeMs"], version=row["toVersion"],
        transition=row["transition"], widened=row["widened"], ignored=row["ignored"],
        witness=witness,
    )  # fmt: skip


def ensure_tables(spark: Any, location: str) -> None:
    from delta.tables import DeltaTable

    for path, schema in ((alerts_path(location), ALERTS_SCHEMA), (state_path(location), STATE_SCHEMA)):
        empty = spark.createDataFrame([], schema)
        DeltaTable.createIfNotExists(spark).location(path).addColumns(empty.schema).execute()


def read_alerts(spark: Any, location: str) -> list[Alert]:
    """Every alert written so far, oldest first (none when the table is absent)."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, alerts_path(location)):
        return []
    rows = spark.read.format("delta").load(alerts_path(location)).orderBy("offset").collect()
    return [alert_of_row(r) for r in rows]


@dataclass(slots=True)
class Resumed:
    state: LiveState
    offset: int
    time_ms: int | None


def resume(spark: Any, location: str, version: int) -> Resumed:
    """The live state the state table holds, and the offset it reflects (-1: none yet)."""
    rows = spark.read.format("delta").load(state_path(location)).collect()
    bindings: list[AclBinding] = []
    settings: dict[str, str] = {}
    offset, time_ms = -1, None
    for row in rows:
        if row["kind"] == _PROGRESS:
            offset, time_ms = int(row["offset"]), row["timeMs"]
        elif row["kind"] == _BINDING:
            bindings.append(AclBinding.of(*parse_fields(tuple(row[2:9]))))
        else:
            settings[row["configName"]] = row["configValue"]
    return Resumed(LiveState(version, bindings, settings), offset, time_ms)


def state_changes(
    state: LiveState, touched: dict[str, AclBinding | str], offset: int, time_ms: int | None
) -> list[tuple[Any, ...]]:
    """The state-table rows of the keys a batch touched, as they are now (``live`` last:
    False deletes the row), and the progress row."""
    rows: list[tuple[Any, ...]] = []
    for key, what in touched.items():
        if isinstance(what, AclBinding):
            live = what in state.bindings
            rows.append((key, _BINDING, *what.fields(), None, None, offset, time_ms, live))
        else:
            value = state.settings.get(what)
            rows.append((key, SETTING_KIND, *(None,) * 7, what, value, offset, time_ms, value is not None))
    rows.append((_PROGRESS, _PROGRESS, *(None,) * 9, offset, time_ms, True))
    return rows


class DowngradeWatch:
    """The driver's side of the query: the live state, the last verdict, the outputs."""

    def __init__(self, spark: Any, location: str, version: int, metrics_file: Path | None) -> None:
        ensure_tables(spark, location)
        self.spark, self.location, self.metrics_file = spark, location, metrics_file
        resumed = resume(spark, location, version)
        self.state = resumed.state
        self.alerts = read_alerts(spark, location)
        self.verdict = self.state.judge(resumed.offset, resumed.time_ms)
        self.write_metrics()

    @property
    def since(self) -> Alert | None:
        return unsafe_since(self.alerts)

    def write_metrics(self) -> None:
        """Replace the text file in one rename, so the collector never reads half of it."""
        if self.metrics_file is None:
            return
        target = self.metrics_file
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(prometheus_text(self.verdict, self.since))
        os.replace(tmp, target)

    def each_batch(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as f

        end = batch.agg(f.max(f.struct("offset", "timestampMs")).alias("end")).collect()[0]["end"]
        if end is None:
            return
        table = decode_records(batch)
        decoded = list(zip(*(column.to_pylist() for column in table.columns), strict=True))
        refused = next((r for r in decoded if r[_ERROR] is not None), None)
        events = [event_of_row(r) for r in decoded if r[_ERROR] is None
                  and (refused is None or r[_OFFSET] < refused[_OFFSET])]  # fmt: skip
        touched: dict[str, AclBinding | str] = {}
        for event in events:
            if event.binding is not None:
                touched[binding_identity(event.binding)] = event.binding
            elif event.config_name is not None:
                touched[setting_identity(event.config_name)] = event.config_name
        if refused is not None:  # judge and keep the state just before the refused record
            end_offset, end_ms = int(refused[_OFFSET]) - 1, events[-1].time_ms if events else None
        else:
            end_offset, end_ms = int(end["offset"]), end["timestampMs"]
        self.state.apply(events)
        previous_safe = last_safe(self.alerts)  # not self.verdict: see the module's doc
        verdict = self.state.judge(end_offset, end_ms, self.verdict)
        alert = transition(previous_safe, verdict)
        if alert is not None:
            self._append_alert(alert, batch_id)
        self._merge_state(state_changes(self.state, touched, end_offset, end_ms), batch_id)
        self.verdict = verdict
        if alert is not None:
            self.alerts.append(alert)
        self.write_metrics()
        if refused is not None:
            raise WatchStoppedError(
                f"the downgrade watch stopped at offset {refused[_OFFSET]}: {refused[_ERROR]}; its "
                "verdict and state are those just before it. Fix or skip that record in the log, "
                "then run the watch again"
            )

    def _append_alert(self, alert: Alert, batch_id: int) -> None:
        frame = self.spark.createDataFrame([alert_row(alert, batch_id)], ALERTS_SCHEMA)
        app_id = table_app_id("downgrade-alerts", self.location)
        idempotent_write(frame, alerts_path(self.location), app_id, batch_id)

    def _merge_state(self, rows: list[tuple[Any, ...]], batch_id: int) -> None:
        from delta.tables import DeltaTable

        source = self.spark.createDataFrame(rows, f"{STATE_SCHEMA}, live BOOLEAN")
        columns = [c.split()[0] for c in STATE_SCHEMA.split(", ")]
        values: dict[str, Any] = {c: f"s.{c}" for c in columns}
        table = DeltaTable.forPath(self.spark, state_path(self.location))
        with idempotent_merge(self.spark, table_app_id("downgrade-state", self.location), batch_id):
            (table.alias("t").merge(source.alias("s"), "t.id = s.id")
             .whenMatchedDelete("NOT s.live").whenMatchedUpdate(set=values)
             .whenNotMatchedInsert("s.live", values=values).execute())  # fmt: skip


def run_watch(
    spark: Any,
    source: LogSource,
    location: str,
    checkpoint: str,
    *,
    version: int,
    once: bool,
    metrics_file: Path | None = None,
    max_records_per_batch: int = DEFAULT_MAX_RECORDS_PER_BATCH,
) -> DowngradeWatch:
    """Watch ``source`` until stopped, or (``once``) until the log's end as it starts; the
    returned watch holds the last verdict and the alerts.  Raises WatchStoppedError on a record
    the fold refuses (after judging and keeping the state just before it)."""
    watch = DowngradeWatch(spark, location, version, metrics_file)
    run_micro_batches(
        source.stream(spark, max_records_per_batch), watch.each_batch,
        checkpoint=checkpoint, name=f"aclstore_downgrade_watch_v{version}", once=once,
    )  # fmt: skip
    return watch


__all__ = ["DowngradeWatch", "Verdict", "WatchStoppedError", "read_alerts", "run_watch"]
