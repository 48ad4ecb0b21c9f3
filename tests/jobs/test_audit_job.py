"""The audit job and report on real Spark over real audit logs (the embedded one, written by a
real emitter or with events at chosen times), with resent events: each decision is in the
table once, also across restarts of the job."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jobs.audit.job import decisions_path, run_audit
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
    assert cli.main(["audit", "report", "--data-dir", str(data_dir), "--since", since]) == 0
    table = capsys.readouterr().out
    assert "ALLOWED 1, DENIED 3" in table and "User:ann" in table
