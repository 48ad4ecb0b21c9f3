"""The audit job and report on real Spark over real audit logs (the embedded one, written by a
real emitter or with events at chosen times), with resent events: each decision is in the
table once, also across restarts of the job."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jobs.audit.job import decisions_path, minute_counts, run_audit, table_path
from jobs.common import LogSource
from jobs.common.streaming import StreamProgress
from replicator.server.audit import AuditEmitter, AuditSettings
from store.acl import AclOperation, ResourceType
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule
from store.log.embedded import EmbeddedChangeLog

pytestmark = [pytest.mark.spark]

DENIED = Decision(AuthorizationResult.DENIED, DecisionRule.DEFAULT_DENY)
ALLOWED = Decision(AuthorizationResult.ALLOWED, DecisionRule.SUPER_USER)
READ, WRITE, TOPIC = AclOperation.READ, AclOperation.WRITE, ResourceType.TOPIC

# (principal, operation, topic, result) of each decision, in order: 9 decisions.
ASKED = [
    ("User:eve", READ, "payroll", DENIED), ("User:eve", READ, "payroll", DENIED),
    ("User:eve", WRITE, "payroll", DENIED), ("User:bob", READ, "orders", ALLOWED),
    ("User:bob", READ, "payroll", DENIED), ("User:eve", READ, "payroll", DENIED),
    ("User:bob", READ, "orders", ALLOWED), ("User:ann", WRITE, "orders", DENIED),
    ("User:ann", WRITE, "orders", DENIED),
]  # fmt: skip


def wait_for_progress(spark: Any, done: Callable[[dict[str, Any]], bool], seconds: float = 240) -> None:
    """Until the running query's last progress report satisfies ``done``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for query in spark.streams.active:
            progress = query.lastProgress
            if progress and done(progress):
                return
        time.sleep(0.5)
    raise AssertionError(f"no such progress in {seconds} s: {[q.lastProgress for q in spark.streams.active]}")


KEY = ("principal", "resourceType", "resourceName", "operation", "result")


def emit(log_dir: Path, spool: Path, asked: list[Any]) -> None:
    sink = EmbeddedChangeLog(log_dir, cleanup_policy="delete")  # as a node's sender opens it
    emitter = AuditEmitter(sink, spool, AuditSettings(allow_sample_rate=1.0))
    for principal, op, topic, decision in asked:
        emitter.record(principal, "10.0.0.1", [Action(op, TOPIC, topic)], [decision], 3)
    assert emitter.flush(20)
    emitter.close()
    sink.close()


def resend(log_dir: Path, offsets: range) -> None:
    """Append records again, as a sender restarted before recording its position does."""
    with EmbeddedChangeLog(log_dir) as log:
        again = [(r.key, r.value) for r in log.read(0, max_records=1000) if r.offset in offsets]
        log.append(again)


@pytest.mark.parametrize("snapshot_every", [1, 10])
def test_each_decision_once_across_resends_and_restarts(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshot_every: int
) -> None:
    """Two runs, the second restarted from the checkpoint; the last denials it starts from come
    from the snapshot of them (taken before every batch) or from the decisions after it."""
    monkeypatch.setattr("jobs.audit.job.SNAPSHOT_EVERY", snapshot_every)
    log_dir, spool = tmp_path / "audit", tmp_path / "spool"
    location, checkpoint = str(tmp_path / "table"), str(tmp_path / "cp")
    source = LogSource.embedded(log_dir)
    emit(log_dir, spool, ASKED[:6])
    resend(log_dir, range(2, 5))  # offsets 6..8 repeat events 2..4
    first_run: list[StreamProgress] = []
    run_audit(spark, source, location, checkpoint, once=True, max_records_per_batch=4,
              on_progress=first_run.append)  # fmt: skip
    emit(log_dir, spool, ASKED[6:])
    resend(log_dir, range(0, 2))  # a resend long after: its ids are already in the table
    second_run: list[StreamProgress] = []
    run_audit(spark, source, location, checkpoint, once=True, max_records_per_batch=4,
              on_progress=second_run.append)  # fmt: skip

    table = spark.read.format("delta").load(decisions_path(location))
    rows = table.collect()
    assert len(rows) == len(ASKED) and len({r["id"] for r in rows}) == len(ASKED)
    with EmbeddedChangeLog(log_dir) as log:
        records = log.read(0, max_records=1000)
    assert len(records) == len(ASKED) + 5  # the resends are in the log, not in the table
    # Each run read its records from the log itself (Spark ran no DataFrame of them), and its
    # progress counts them: the first run 9, the second the rest.
    assert first_run[-1] == StreamProgress(records=9, position=9, end=9)
    assert second_run[-1] == StreamProgress(records=len(records) - 9, position=len(records), end=len(records))
    # Expected counts by hand from ASKED, summed over the minutes the events fell in.
    expected = Counter((p, "TOPIC", t, op.name, d.result.value) for p, op, t, d in ASKED)
    assert Counter(tuple(r[c] for c in KEY) for r in rows) == expected
    assert None not in [r["time"] for r in rows]
    eve = [r for r in rows if r["principal"] == "User:eve"]
    assert {(r["rule"], r["aclOffset"]) for r in eve} == {("DEFAULT_DENY", 3)}
    # The job's own per-minute table, added to batch by batch, holds the same counts, each
    # in the minute its events' own times fall in.
    by_minute = Counter(
        (r["time"].replace(second=0, microsecond=0), r["principal"], r["resourceType"],
         r["resourceName"], r["operation"], r["result"]) for r in rows
    )  # fmt: skip
    minutes = minute_counts(spark, location).collect()
    assert Counter({(r["minute"], *(r[c] for c in KEY)): r["decisions"] for r in minutes}) == by_minute
    # New denials, by hand: eve on payroll (her WRITE is on the same resource), bob on
    # payroll, ann on orders; each alert is the pair's first denial, in log order.
    alerts = spark.read.format("delta").load(table_path(location, "alerts")).collect()
    first = {}
    for r in sorted(rows, key=lambda r: r["auditOffset"]):
        if r["result"] == "DENIED":
            first.setdefault((r["principal"], r["resourceName"]), r["id"])
    assert sorted((a["principal"], a["resourceName"], a["id"]) for a in alerts) == sorted(
        (p, n, i) for (p, n), i in first.items()
    )
    assert {(a["principal"], a["resourceName"]) for a in alerts} == {
        ("User:eve", "payroll"), ("User:bob", "payroll"), ("User:ann", "orders")
    }
    assert all(a["previousDenied"] is None for a in alerts)


def test_audit_run_and_report_through_the_cli(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Events at chosen times in a node's embedded audit log; the report counted by hand."""
    import json

    import cli
    from replicator.contract.audit_event import audit_event, encode_audit_event

    t0 = 1_700_000_000_000  # ms: the --since of the report
    hour, day = 3_600_000, 86_400_000
    # (ms, principal, operation, topic, decision); a 30-day window for new denials.
    asked = [
        (t0 - 40 * day, "User:eve", READ, "payroll", DENIED),  # long before: eve's later is new
        (t0 - day, "User:bob", READ, "orders", DENIED),  # recent: bob's later is not new
        (t0 + hour, "User:eve", READ, "payroll", DENIED),
        (t0 + hour, "User:bob", READ, "orders", ALLOWED),
        (t0 + 2 * hour, "User:bob", READ, "orders", DENIED),
        (t0 + 3 * hour, "User:ann", WRITE, "orders", DENIED),  # ann's first ever: new
    ]
    records = []
    for i, (ms, principal, op, topic, decision) in enumerate(asked):
        event = audit_event(
            event_id=f"e{i}", source="aclstore://test", time_ns=ms * 1_000_000,
            principal=principal, host="10.0.0.1", action=Action(op, TOPIC, topic),
            decision=decision, offset=40 + i,
        )  # fmt: skip
        records.append((f"e{i}".encode(), encode_audit_event(event)))
    data_dir = tmp_path / "node"
    with EmbeddedChangeLog(data_dir / "audit", cleanup_policy="delete") as log:  # as a node's
        log.append(records)
        log.append(records[5:])  # ann's event resent
    assert cli.main(["audit", "run", "--once", "--data-dir", str(data_dir)]) == 0
    capsys.readouterr()
    since = "2023-11-14T22:13:20Z"  # t0
    assert cli.main(["audit", "report", "--data-dir", str(data_dir), "--since", since,
                     "--format", "json"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["totals"] == {"ALLOWED": 1, "DENIED": 3}
    assert report["throughOffset"] == 5  # ann's first sending; the resend (offset 6) adds no row
    assert [(d["principal"], d["resourceName"], d["aclOffset"], d["eventId"])
            for d in report["newDenials"]] == [("User:eve", "payroll", 42, "e2"),
                                               ("User:ann", "orders", 45, "e5")]  # fmt: skip
    # Denials since t0, by hand: eve on payroll, bob on orders, ann on orders (resent once).
    assert report["topDeniedPrincipals"] == [
        {"principal": p, "denials": 1} for p in ("User:ann", "User:bob", "User:eve")
    ]
    assert report["topDeniedResources"] == [
        {"resourceType": "TOPIC", "resourceName": "orders", "denials": 2},
        {"resourceType": "TOPIC", "resourceName": "payroll", "denials": 1},
    ]
    assert report["unusedGrants"] == []  # the unused-grants report is not passed in here
    assert cli.main(["audit", "report", "--data-dir", str(data_dir), "--since", since]) == 0
    table = capsys.readouterr().out
    assert "ALLOWED 1, DENIED 3" in table and "User:ann" in table
    assert "top denied resources:" in table and table.endswith("(log offset 5)\n")
    assert cli.main(["audit", "report", "--data-dir", str(data_dir), "--since", since, "--top", "1",
                     "--format", "csv"]) == 0  # fmt: skip
    sections = capsys.readouterr().out.split("\r\n\n")
    assert sections[-2:] == ["principal,denials,offset\r\nUser:ann,1,5",
                            "resourceType,resourceName,denials,offset\r\nTOPIC,orders,2,5\r\n"]

    from jobs.audit.job import decisions_path as path
    from jobs.audit.report import audit_report
    from jobs.audit.unused import UnusedGrant
    from store.acl import AclBinding, AclPermissionType, PatternType

    table_df = spark.read.format("delta").load(path(str(data_dir / "audit-table")))
    bob = AclBinding.of(TOPIC, "orders", PatternType.LITERAL, "User:bob", "*", READ, AclPermissionType.ALLOW)
    grants = (UnusedGrant(binding=bob, granted_offset=0, granted_ms=0, granted_by=None, last_used=None),)
    assert audit_report(table_df, t0, unused_grants=grants).unused_grants == grants


def test_late_events_count_and_resends_of_any_age_do_not_across_a_restart(
    spark: Any, tmp_path: Path
) -> None:
    """Events numbered as two spools number them, and ids of another form; a second run
    (restarted from the checkpoint) gets resends of the first run's events, one an hour after
    the events around it, and an event 20 minutes late.  Hand-worked which count."""
    from replicator.contract.audit_event import audit_event, encode_audit_event

    t0, minute = 1_700_000_040_000, 60_000  # ms, on a minute boundary
    a, b = "00000000000000aa", "00000000000000bb"

    def records(sent: list[tuple[str, int]]) -> list[tuple[bytes, bytes]]:
        out = []
        for event_id, ms in sent:
            event = audit_event(
                event_id=event_id, source="aclstore://test", time_ns=ms * 1_000_000,
                principal="User:eve", host="10.0.0.1", action=Action(READ, TOPIC, "payroll"),
                decision=DENIED, offset=1,
            )  # fmt: skip
            out.append((event_id.encode(), encode_audit_event(event)))
        return out

    log_dir, location, checkpoint = tmp_path / "audit", str(tmp_path / "table"), str(tmp_path / "cp")
    source = LogSource.embedded(log_dir)
    with EmbeddedChangeLog(log_dir) as log:
        log.append(records([(f"{a}{0:016x}", t0), (f"{a}{1:016x}", t0 + 20 * minute),
                            (f"{b}{7:016x}", t0 + 20 * minute), ("x1", t0), ("x1", t0)]))  # fmt: skip
    run_audit(spark, source, location, checkpoint, once=True)
    with EmbeddedChangeLog(log_dir) as log:
        log.append(records([
            (f"{a}{0:016x}", t0),  # a resend, an hour behind the log's latest: dropped
            (f"{a}{1:016x}", t0 + 20 * minute),  # a resend: dropped
            (f"{a}{2:016x}", t0 + 80 * minute),
            (f"{b}{8:016x}", t0 + 60 * minute),  # 20 minutes behind the event before it: counted
            (f"{b}{8:016x}", t0 + 60 * minute),  # a resend in the same batch: dropped
            ("x1", t0),  # another form, a batch later: nothing says it was sent before
        ]))  # fmt: skip
    run_audit(spark, source, location, checkpoint, once=True)
    table = spark.read.format("delta").load(decisions_path(location))
    ids = sorted((r["id"], r["auditOffset"]) for r in table.collect())
    assert ids == [(f"{a}{0:016x}", 0), (f"{a}{1:016x}", 1), (f"{a}{2:016x}", 7),
                   (f"{b}{7:016x}", 2), (f"{b}{8:016x}", 8), ("x1", 3), ("x1", 10)]  # fmt: skip
    minutes = minute_counts(spark, location).collect()
    assert sorted((int(r["minute"].timestamp() * 1000), r["decisions"]) for r in minutes) == [
        (t0, 3), (t0 + 20 * minute, 2), (t0 + 60 * minute, 1), (t0 + 80 * minute, 1)
    ]


def _denials(ids: list[tuple[str, int]]) -> list[tuple[bytes, bytes]]:
    """Records of denials of ``(event id, ms)``."""
    from replicator.contract.audit_event import audit_event, encode_audit_event

    out = []
    for event_id, ms in ids:
        event = audit_event(
            event_id=event_id, source="aclstore://test", time_ns=ms * 1_000_000, principal="User:eve",
            host="10.0.0.1", action=Action(READ, TOPIC, f"t-{event_id[-1]}"), decision=DENIED, offset=1,
        )  # fmt: skip
        out.append((event_id.encode(), encode_audit_event(event)))
    return out


def test_without_saved_numbers_the_spools_numbers_are_read_from_decisions(spark: Any, tmp_path: Path) -> None:
    """The spools' saved numbers are gone (as after the job before this one): a second run
    reads them from the ids in decisions, so resends stay dropped, and the last denials from
    the denials there, so a denial of a pair alerted before is not new."""
    import shutil

    from jobs.audit.job import SEQUENCES

    spool, t0 = "00000000000000cc", 1_700_000_040_000
    log_dir, location, checkpoint = tmp_path / "audit", str(tmp_path / "table"), tmp_path / "cp"
    source = LogSource.embedded(log_dir)
    with EmbeddedChangeLog(log_dir) as log:
        log.append(_denials([(f"{spool}{n:016x}", t0) for n in range(4)]))
    run_audit(spark, source, location, str(checkpoint), once=True)
    shutil.rmtree(checkpoint / SEQUENCES)
    with EmbeddedChangeLog(log_dir) as log:
        # 2 and 3 resent; 16 (its id ends in 0) on the resource of 0, a minute later
        log.append(_denials([(f"{spool}{n:016x}", t0 + 60_000 * (n == 16)) for n in (2, 3, 4, 5, 16)]))
    run_audit(spark, source, location, str(checkpoint), once=True)
    ids = sorted(r["id"] for r in spark.read.format("delta").load(decisions_path(location)).collect())
    assert ids == [f"{spool}{n:016x}" for n in (0, 1, 2, 3, 4, 5, 16)]
    alerts = spark.read.format("delta").load(table_path(location, "alerts")).collect()
    assert sorted(r["id"] for r in alerts) == [f"{spool}{n:016x}" for n in range(6)]


def test_a_checkpoint_of_the_job_before_resumes_where_it_stopped(spark: Any, tmp_path: Path) -> None:
    """A checkpoint whose query deduplicated with Spark's state (as the job before this one
    did) read the first 3 records; the job sets that state aside and goes on from record 3."""
    from jobs.audit.job import RETIRED_STATE
    from jobs.common.streaming import run_micro_batches

    spool, t0 = "00000000000000dd", 1_700_000_040_000
    log_dir, location, checkpoint = tmp_path / "audit", str(tmp_path / "table"), tmp_path / "cp"
    source = LogSource.embedded(log_dir)
    with EmbeddedChangeLog(log_dir) as log:
        log.append(_denials([(f"{spool}{n:016x}", t0) for n in range(3)]))
    from pyspark.sql import functions as f

    before = (source.stream(spark, 1000).withColumn("t", f.timestamp_millis("timestampMs"))
              .withWatermark("t", "10 minutes").dropDuplicatesWithinWatermark(["key"]))  # fmt: skip
    run_micro_batches(before, lambda batch, batch_id: None, checkpoint=str(checkpoint), name="aclstore_audit",
                      once=True)  # fmt: skip
    assert (checkpoint / "state").is_dir()
    with EmbeddedChangeLog(log_dir) as log:
        log.append(_denials([(f"{spool}{n:016x}", t0) for n in (3, 4)]))
    run_audit(spark, source, location, str(checkpoint), once=True)
    assert (checkpoint / RETIRED_STATE).is_dir() and not (checkpoint / "state").exists()
    rows = spark.read.format("delta").load(decisions_path(location)).collect()
    expected = [(f"{spool}{3:016x}", 3), (f"{spool}{4:016x}", 4)]
    assert sorted((r["id"], r["auditOffset"]) for r in rows) == expected


def test_partial_counts_sum_per_key(spark: Any) -> None:
    """Hand-worked: partial counts of one key from two batches, keys on one side only."""
    from datetime import datetime

    from jobs.audit.job import SCHEMAS
    from jobs.audit.transform import summed_minutes

    m1, m2 = datetime(2026, 3, 1, 12, 0), datetime(2026, 3, 1, 12, 1)
    partials = spark.createDataFrame(
        [(m1, "User:eve", "TOPIC", "a", "READ", "DENIED", 3),
         (m1, "User:eve", "TOPIC", "b", "READ", "DENIED", 1),
         (m1, "User:eve", "TOPIC", "a", "READ", "DENIED", 2),
         (m1, "User:eve", "TOPIC", "c", "READ", "ALLOWED", 1),
         (m2, "User:eve", "TOPIC", "a", "READ", "DENIED", 4)],
        SCHEMAS["minutes"],
    )  # fmt: skip
    got = sorted((r["minute"], r["resourceName"], r["result"], r["decisions"])
                 for r in summed_minutes(partials).collect())  # fmt: skip
    assert got == [(m1, "a", "DENIED", 5), (m1, "b", "DENIED", 1), (m1, "c", "ALLOWED", 1),
                   (m2, "a", "DENIED", 4)]  # fmt: skip


def test_the_tables_keep_statistics_of_the_columns_readers_filter_by(spark: Any, tmp_path: Path) -> None:
    from delta.tables import DeltaTable

    from jobs.audit.job import SCHEMAS, ensure_tables

    location = str(tmp_path / "table")
    ensure_tables(spark, location)
    expected = {"decisions": "time,auditOffset", "minutes": "minute", "alerts": "time",
                "last_denied": "lastDenied"}  # fmt: skip
    assert set(expected) == set(SCHEMAS)
    for name, columns in expected.items():
        properties = DeltaTable.forPath(spark, table_path(location, name)).detail().collect()[0]["properties"]
        assert properties.get("delta.dataSkippingStatsColumns") == columns, name


def test_a_failing_write_fails_the_batch_after_the_others_end(spark: Any, tmp_path: Path) -> None:
    """The minutes table cannot be written (a plain file where its folder was): the batch
    raises, and only after the writes running beside it ended, each committed in full."""
    import shutil
    from datetime import datetime, timedelta

    import pyarrow as pa

    from jobs.audit.job import SEQUENCES, AuditWriter, ensure_tables
    from jobs.audit.transform import DECISION_ARROW_SCHEMA
    from jobs.common.streaming import BatchStates

    location = str(tmp_path / "table")
    ensure_tables(spark, location)
    minutes = Path(table_path(location, "minutes"))
    shutil.rmtree(minutes)
    minutes.write_text("not a table")
    t0 = datetime(2026, 3, 1, 12, 0)
    rows = [
        (f"e{i}", t0 + timedelta(seconds=i), "broker-1", principal, "10.0.0.1", op.name, "TOPIC", topic,
         "LITERAL", decision.result.value, decision.rule.name, None, 3, i)
        for i, (principal, op, topic, decision) in enumerate(ASKED)
    ]  # fmt: skip
    batch = pa.Table.from_pylist([dict(zip(DECISION_ARROW_SCHEMA.names, r, strict=True)) for r in rows],
                                 schema=DECISION_ARROW_SCHEMA)  # fmt: skip
    writer = AuditWriter(spark, location, BatchStates(spark, str(tmp_path / "cp" / SEQUENCES)), 7)
    with pytest.raises(Exception) as caught:
        writer.write_rows(batch, 0)
    assert "minutes" in str(caught.value)
    written = spark.read.format("delta").load(decisions_path(location))
    assert sorted(r["id"] for r in written.collect()) == sorted(r[0] for r in rows)
    denied = {(p, t) for p, _, t, d in ASKED if d is DENIED}
    alerts = spark.read.format("delta").load(table_path(location, "alerts")).collect()
    assert {(r["principal"], r["resourceName"]) for r in alerts} == denied
