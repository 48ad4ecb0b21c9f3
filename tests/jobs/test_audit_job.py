"""The audit job and report on real Spark over real audit logs (the embedded one, written by a
real emitter or with events at chosen times), with resent events: each decision is in the
table once, also across restarts of the job."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jobs.audit.job import decisions_path, minute_counts, run_audit, table_path
from jobs.audit.transform import per_minute
from jobs.history.archive import LogSource
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
    sink = EmbeddedChangeLog(log_dir)
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


def test_each_decision_once_across_resends_and_restarts(spark: Any, tmp_path: Path) -> None:
    log_dir, spool = tmp_path / "audit", tmp_path / "spool"
    location, checkpoint = str(tmp_path / "table"), str(tmp_path / "cp")
    source = LogSource.embedded(log_dir)
    emit(log_dir, spool, ASKED[:6])
    resend(log_dir, range(2, 5))  # offsets 6..8 repeat events 2..4
    run_audit(spark, source, location, checkpoint, once=True, max_records_per_batch=4)
    emit(log_dir, spool, ASKED[6:])
    resend(log_dir, range(0, 2))  # a resend long after: its ids are already in the table
    run_audit(spark, source, location, checkpoint, once=True, max_records_per_batch=4)

    table = spark.read.format("delta").load(decisions_path(location))
    rows = table.collect()
    assert len(rows) == len(ASKED) and len({r["id"] for r in rows}) == len(ASKED)
    with EmbeddedChangeLog(log_dir) as log:
        records = log.read(0, max_records=1000)
    assert len(records) == len(ASKED) + 5  # the resends are in the log, not in the table
    # Expected counts by hand from ASKED, summed over the minutes the events fell in.
    expected = Counter((p, "TOPIC", t, op.name, d.result.value) for p, op, t, d in ASKED)
    got: Counter[tuple[str, ...]] = Counter()
    minutes = set()
    for r in per_minute(table).collect():
        key = (r["principal"], r["resourceType"], r["resourceName"], r["operation"], r["result"])
        got[key] += r["decisions"]
        minutes.add(r["minute"])
    assert got == expected
    times = [r["time"] for r in rows]
    assert None not in times and len(minutes) == len({t.replace(second=0, microsecond=0) for t in times})
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

    from replicator import cli
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
    with EmbeddedChangeLog(data_dir / "audit") as log:
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
    from jobs.audit.report import report_json

    table_df = spark.read.format("delta").load(path(str(data_dir / "audit-table")))
    grants = [{"binding": {"principal": "User:bob"}, "lastUsed": None}]
    assert report_json(table_df, t0, unused_grants=grants)["unusedGrants"] == grants


def test_new_denials_measured_against_the_last_denial_in_days(spark: Any) -> None:
    """Worked by hand, a 7-day window: the batch's denials against the table's last denials."""
    from datetime import datetime, timedelta

    from jobs.audit.job import SCHEMAS
    from jobs.audit.transform import last_denied, new_denials_in_batch

    d, day = datetime(2026, 3, 1, 12, 0), timedelta(days=1)
    previous = spark.createDataFrame(
        [("User:eve", "TOPIC", "payroll", d - 3 * day), ("User:bob", "TOPIC", "orders", d - 8 * day),
         ("User:ann", "TOPIC", "logs", d + day)],
        SCHEMAS["last_denied"],
    )  # fmt: skip
    asked = [  # id, time, principal, resource type, name, result
        ("r1", d, "User:eve", "TOPIC", "payroll", "DENIED"),  # 3 days after the last: not new
        ("r2", d, "User:bob", "TOPIC", "orders", "DENIED"),  # 8 days after: new
        ("r3", d + day, "User:bob", "TOPIC", "orders", "DENIED"),  # a day after r2: not new
        ("r4", d, "User:carl", "TOPIC", "x", "DENIED"),  # never denied before: new
        ("r5", d + 10 * day, "User:carl", "TOPIC", "x", "DENIED"),  # 10 days after r4: new
        ("r6", d, "User:ann", "TOPIC", "logs", "DENIED"),  # before the last recorded: late
        ("r7", d, "User:dave", "TOPIC", "y", "ALLOWED"),
        ("r8", d, "User:bob", "GROUP", "orders", "DENIED"),  # another resource type: new
    ]
    rows = spark.createDataFrame(
        [(i, t, "src", p, "10.0.0.1", "READ", rt, n, "LITERAL", res, "DEFAULT_DENY", None, 7, k)
         for k, (i, t, p, rt, n, res) in enumerate(asked)],
        SCHEMAS["decisions"],
    )  # fmt: skip
    got = {r["id"]: r["previousDenied"] for r in new_denials_in_batch(rows, previous, 7).collect()}
    assert got == {"r2": d - 8 * day, "r4": None, "r5": d, "r8": None}
    last = {(r["principal"], r["resourceType"], r["resourceName"]): r["lastDenied"]
            for r in last_denied(rows).collect()}  # fmt: skip
    assert last == {
        ("User:eve", "TOPIC", "payroll"): d, ("User:bob", "TOPIC", "orders"): d + day,
        ("User:carl", "TOPIC", "x"): d + 10 * day, ("User:ann", "TOPIC", "logs"): d,
        ("User:bob", "GROUP", "orders"): d,
    }  # fmt: skip


def test_the_watermark_counts_late_events_within_the_bound_and_drops_the_rest(
    spark: Any, tmp_path: Path
) -> None:
    """A 5-minute bound: after a first run has seen t0 + 20 min, the watermark is t0 + 15 min
    (kept in the checkpoint); hand-worked which events of a second run count."""
    from replicator.contract.audit_event import audit_event, encode_audit_event

    t0, minute = 1_700_000_040_000, 60_000  # ms, on a minute boundary

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

    log_dir, location = tmp_path / "audit", str(tmp_path / "table")
    with EmbeddedChangeLog(log_dir) as log:
        log.append(records([("e0", t0), ("e1", t0 + 20 * minute)]))
    # Running (not --once): the watermark moves between batches, also with no new data.
    job = threading.Thread(target=run_audit, args=(
        spark, LogSource.embedded(log_dir), location, str(tmp_path / "cp")),
        kwargs={"once": False, "late_bound": "5 minutes"})  # fmt: skip
    job.start()
    try:
        wait_for_progress(spark, lambda p: str(p["eventTime"].get("watermark")).startswith(
            "2023-11-14T22:29:00"))  # t0 + 15 min  # fmt: skip
        with EmbeddedChangeLog(log_dir) as log:
            log.append(records([
                ("e2", t0 + minute),  # late past the bound: dropped
                ("e3", t0 + 18 * minute),  # late within the bound: counted
                ("e0", t0),  # a resend late past the bound: dropped (and not a second e0)
                ("e1", t0 + 20 * minute),  # a resend within the bound: the state drops it
            ]))  # fmt: skip
        wait_for_progress(spark, lambda p: "6" in str(p["sources"][0]["endOffset"]))
    finally:
        for query in spark.streams.active:
            query.stop()
        job.join(60)
    ids = sorted(r["id"] for r in spark.read.format("delta").load(decisions_path(location)).collect())
    assert ids == ["e0", "e1", "e3"]
    minutes = minute_counts(spark, location).collect()
    assert sorted((int(r["minute"].timestamp() * 1000), r["decisions"]) for r in minutes) == [
        (t0, 1), (t0 + 18 * minute, 1), (t0 + 20 * minute, 1)
    ]


def test_partial_counts_sum_per_key_and_last_denials_keep_the_later(spark: Any) -> None:
    """Hand-worked: partial counts of one key from two batches, keys on one side only; last
    denials of a pair on both sides (the later kept) and on one side only."""
    from datetime import datetime, timedelta

    from jobs.audit.job import SCHEMAS
    from jobs.audit.transform import merged_last_denied, summed_minutes

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
    hour = timedelta(hours=1)
    previous = spark.createDataFrame(
        [("User:eve", "TOPIC", "a", m1), ("User:eve", "TOPIC", "b", m1 + hour),
         ("User:bob", "TOPIC", "a", m1)],
        SCHEMAS["last_denied"],
    )  # fmt: skip
    batch = spark.createDataFrame(
        [("User:eve", "TOPIC", "a", m1 + hour), ("User:eve", "TOPIC", "b", m1),
         ("User:ann", "GROUP", "a", m2)],
        SCHEMAS["last_denied"],
    )  # fmt: skip
    merged = {(r["principal"], r["resourceType"], r["resourceName"]): r["lastDenied"]
              for r in merged_last_denied(previous, batch).collect()}  # fmt: skip
    assert merged == {
        ("User:eve", "TOPIC", "a"): m1 + hour, ("User:eve", "TOPIC", "b"): m1 + hour,
        ("User:bob", "TOPIC", "a"): m1, ("User:ann", "GROUP", "a"): m2,
    }  # fmt: skip


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

    from jobs.audit.job import SCHEMAS, ensure_tables, table_id, write_batch

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
    batch = spark.createDataFrame(rows, SCHEMAS["decisions"])
    with pytest.raises(Exception) as caught:
        write_batch(spark, batch, location, table_id(location), 0, 7)
    assert "minutes" in str(caught.value)
    written = spark.read.format("delta").load(decisions_path(location))
    assert sorted(r["id"] for r in written.collect()) == sorted(r[0] for r in rows)
    denied = {(p, t) for p, _, t, d in ASKED if d is DENIED}
    last = spark.read.format("delta").load(table_path(location, "last_denied")).collect()
    assert {(r["principal"], r["resourceName"]) for r in last} == denied
