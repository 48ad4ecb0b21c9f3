"""The audit job on real Spark over a real audit log (the embedded one, written by a real
emitter), with resent events: the table holds each decision once, also across restarts."""

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
