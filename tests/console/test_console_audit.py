"""The console's Audit page on real Spark, in a real browser: a node whose change log and audit
log hold known events (``tests/jobs/test_audit_report_cause.py``'s: bob allowed to read orders,
then denied by mallory's PREFIXED DENY; zed never allowed), asked through the page; each section
checked against ``aclstore audit report --format json`` run as a user runs it over the same
Connect server, and the new denials' causes against the hand-worked changes."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_support import log_in, screenshot
from playwright.sync_api import Page, expect
from sidecar_support import start_node

import cli
from cli.spark_connect import ServerRecord
from jobs.common import LogSource
from jobs.history.job import run_archive
from replicator.contract.audit_event import audit_event, encode_audit_event
from replicator.server.console.questions import HistorySource
from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule
from store.codec import JsonEventCodec, event_key
from store.events import AclCreated
from store.log.embedded import EmbeddedChangeLog

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
TOPIC, READ = ResourceType.TOPIC, AclOperation.READ
BOB_READS = AclBinding.of(TOPIC, "orders", PatternType.LITERAL, "User:bob", "*", READ,
                          AclPermissionType.ALLOW)  # fmt: skip
CAROL_READS = AclBinding.of(TOPIC, "orders", PatternType.LITERAL, "User:carol", "*", READ,
                            AclPermissionType.ALLOW)  # fmt: skip
BOB_DENIED = AclBinding.of(TOPIC, "ord", PatternType.PREFIXED, "User:bob", "*", READ, AclPermissionType.DENY)
# The change log: 0 bob may read orders, 1 carol may, 2 mallory denies bob (by prefix).
CHANGES = [("User:alice", BOB_READS), ("User:alice", CAROL_READS), ("User:mallory", BOB_DENIED)]
T0 = 1_700_000_000_000
SINCE = "2023-11-14T22:13:20Z"  # T0
HOUR, DAY = 3_600_000, 86_400_000
DENIED = Decision(AuthorizationResult.DENIED, DecisionRule.DEFAULT_DENY)


def _granted(binding: AclBinding) -> Decision:
    return Decision(AuthorizationResult.ALLOWED, DecisionRule.MATCHING_ACL, binding)


# (ms, principal, decision, change-log offset it reflects)
ASKED = [
    (T0 - DAY, "User:bob", _granted(BOB_READS), 1),
    (T0 + HOUR, "User:bob", DENIED, 2),  # new: bob was allowed until offset 2
    (T0 + 2 * HOUR, "User:zed", DENIED, 2),  # new: zed was never allowed
    (T0 + 2 * HOUR + 1000, "User:bob", DENIED, 2),  # not new (bob's first was an hour ago)
    (T0 + 3 * HOUR, "User:carol", _granted(CAROL_READS), 2),
]


def _write_logs(spark: Any, data_dir: Path, checkpoint: Path) -> None:
    """The change log (the first two changes archived, the cause in the log's tail) and the
    audit log, then the decisions table (``audit run --once``)."""
    codec = JsonEventCodec()
    changes = []
    for i, (actor, binding) in enumerate(CHANGES):
        event = AclCreated(binding=binding, actor=actor, request_id=f"r{i}", time_ms=T0)
        changes.append((event_key(event), codec.encode(event)))
    with EmbeddedChangeLog(data_dir / "log") as log:
        log.append(changes[:2])
        run_archive(spark, LogSource.embedded(data_dir / "log"), str(data_dir / "history"),
                    str(checkpoint), once=True)  # fmt: skip
        log.append(changes[2:])
    records = []
    for i, (ms, principal, decision, offset) in enumerate(ASKED):
        event = audit_event(
            event_id=f"e{i}", source="aclstore://test", time_ns=ms * 1_000_000, principal=principal,
            host="10.0.0.1", action=Action(READ, TOPIC, "orders"), decision=decision, offset=offset,
        )  # fmt: skip
        records.append((f"e{i}".encode(), encode_audit_event(event)))
    with EmbeddedChangeLog(data_dir / "audit") as log:
        log.append(records)
    assert cli.main(["audit", "run", "--once", "--data-dir", str(data_dir)]) == 0


@pytest.fixture(scope="module")
def audited(
    spark: Any, spark_connect: tuple[Path, ServerRecord], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Node, str]]:
    root = tmp_path_factory.mktemp("audit")
    data_dir = root / "node"
    _write_logs(spark, data_dir, root / "cp")
    remote = spark_connect[1].url
    node = start_node(data_dir, history=HistorySource(data_dir=data_dir, remote=remote))
    try:
        yield node, remote
    finally:
        node.stop()


def _cli_report(node: Node, remote: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "cli", "audit", "report", "--data-dir", str(node.data_dir), "--since",
         SINCE, "--remote", remote, "--format", "json"],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _cells(page: Page, table: str) -> list[list[str]]:
    rows: list[list[str]] = page.locator(f"#{table} tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    return rows


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def test_the_audit_page_shows_the_reports_rows(
    audited: tuple[Node, str], page: Page, tmp_path: Path
) -> None:
    node, remote = audited
    log_in(page, node)
    page.goto(f"{node.url}/ui/audit")
    page.fill("#report input[name=since]", SINCE)
    page.click("#report-button")
    expect(page.locator("#report-status")).to_have_attribute("data-done", "true", timeout=240_000)
    expected = _cli_report(node, remote)

    totals = expected["totals"]
    assert totals == {"ALLOWED": 1, "DENIED": 3}  # hand-worked from ASKED
    expect(page.locator("#totals")).to_contain_text(f"ALLOWED {totals['ALLOWED']}, DENIED {totals['DENIED']}")
    # the new denials, each with its cause, as the command's rows
    shown = _cells(page, "new-denials")
    assert [(r[0], r[1], r[3], r[4], r[5], r[7]) for r in shown] == [
        (d["time"], d["principal"], d["operation"], d["rule"], _text(d["causeStatus"]),
         _text(d["cause"] and d["cause"]["actor"]))
        for d in expected["newDenials"]
    ]  # fmt: skip
    # hand-worked: bob's denial was caused by mallory's PREFIXED DENY at offset 2; zed was never
    # allowed (no cause)
    assert [(r[1], r[5], r[7]) for r in shown] == [
        ("User:bob", "FOUND", "User:mallory"), ("User:zed", "NEVER_ALLOWED", "")]  # fmt: skip
    assert shown[0][6] == "ACL_CREATED TOPIC, ord, PREFIXED, User:bob, *, READ, DENY"
    link = page.locator("#new-denials tbody tr").nth(0).locator("a.cause")
    assert link.get_attribute("href") == "/ui/changes?offset=2"
    assert page.locator("#new-denials tbody tr").nth(1).locator("a").count() == 0
    # the unused grants and the most denied, as the command's rows
    assert _cells(page, "unused") == [
        [*g["binding"], str(g["grantedOffset"]), g["granted"], g["grantedBy"], _text(g["lastUsed"])]
        for g in expected["unusedGrants"]
    ]
    assert [r[3] for r in _cells(page, "unused")] == ["User:bob"]  # carol's was used in the window
    assert _cells(page, "top-principals") == [
        [p["principal"], str(p["denials"])] for p in expected["topDeniedPrincipals"]
    ]
    assert _cells(page, "top-principals")[0] == ["User:bob", "2"]
    assert _cells(page, "top-resources") == [
        [r["resourceType"], r["resourceName"], str(r["denials"])] for r in expected["topDeniedResources"]
    ]
    # the denials over time: the PNG the same command drew
    plot = page.locator("#plot")
    page.wait_for_function("() => document.getElementById('plot').complete")
    assert plot.evaluate("img => img.naturalWidth") == 1100
    src = plot.get_attribute("src") or ""
    answer = page.request.get(f"{node.url}{src}")
    data = answer.body()
    assert answer.status == 200 and data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">4sII", data[12:24]) == (b"IHDR", 1100, 450)
    screenshot(page, tmp_path, "audit")
