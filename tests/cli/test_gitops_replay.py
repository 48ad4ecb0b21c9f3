"""``aclstore plan --replay-since``: the audited requests of a window replayed against a plan,
on a hand-worked decisions table (real Spark, Delta): which flip, how often each was seen, and
the coverage note."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sidecar_support import admin_client, run_cli

from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType


def allow(principal: str, topic: str) -> AclBinding:
    return AclBinding.of(ResourceType.TOPIC, topic, PatternType.LITERAL, principal, "*", AclOperation.READ,
                         AclPermissionType.ALLOW)  # fmt: skip


FILE = """\
version: 1
scope:
  resources: [{resourceType: TOPIC, prefix: orders.}]
acls:
  - principals: [User:app]
    operations: [READ]
    topics: [orders.a]
  - principals: [User:new]
    operations: [READ]
    topics: [orders.c]
"""


def decisions(rows: list[tuple[str, str, str, str, int]], now: datetime) -> list[dict[str, Any]]:
    """(principal, topic, result, times, days ago) -> decision rows."""
    out = []
    for principal, topic, result, times, days in rows:
        for i in range(times):
            out.append({
                "id": f"{principal}-{topic}-{result}-{i}", "time": now - timedelta(days=days, minutes=i),
                "source": "node-1", "principal": principal, "host": "10.0.0.1", "operation": "READ",
                "resourceType": "TOPIC", "resourceName": topic, "patternType": "LITERAL",
                "result": result, "rule": "MATCHING_ACL", "binding": None, "aclOffset": 1,
                "auditOffset": len(out),
            })  # fmt: skip
    return out


@pytest.mark.spark
def test_replay_lists_the_seen_requests_that_flip(
    spark: Any, node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pyspark.sql.types import StructType

    from jobs.audit.job import SCHEMAS, decisions_path, ensure_tables

    with admin_client(node) as client:
        client.create_acls([allow("User:app", "orders.a"), allow("User:old", "orders.legacy")])
    location = str(node.data_dir / "audit-table")
    ensure_tables(spark, location)
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = decisions([
        ("User:app", "orders.a", "ALLOWED", 3, 1),       # stays allowed
        ("User:old", "orders.legacy", "ALLOWED", 2, 2),  # its grant goes: ALLOWED -> DENIED
        ("User:new", "orders.c", "DENIED", 5, 3),        # its grant comes: DENIED -> ALLOWED
        ("User:zed", "orders.zzz", "DENIED", 1, 1),      # stays denied
        ("User:new", "orders.c", "DENIED", 4, 10),       # before the window
    ], now)  # fmt: skip
    schema = StructType.fromDDL(SCHEMAS["decisions"])
    spark.createDataFrame(rows, schema=schema).write.format("delta").mode("append").save(
        decisions_path(location)
    )
    path = tmp_path / "orders.yaml"
    path.write_text(FILE)

    code, out, err = run_cli(
        node, capsys, f"plan -f {path} --replay-since 7d --data-dir {node.data_dir} --format json"
    )
    assert code == 2, err
    replay = json.loads(out)["replay"]
    assert (replay["requestsSeen"], replay["auditedDecisions"]) == (4, 11)
    assert [(f["principal"], f["resourceName"], f["now"], f["planned"], f["count"], f["audited"])
            for f in replay["flips"]] == [
        ("User:new", "orders.c", "DENIED", "ALLOWED", 5, "DENIED"),
        ("User:old", "orders.legacy", "ALLOWED", "DENIED", 2, "ALLOWED"),
    ]  # fmt: skip
    assert "allows only by sample" in replay["coverage"]

    code, out, _ = run_cli(node, capsys, f"plan -f {path} --replay-since 7d --data-dir {node.data_dir}")
    assert code == 2 and "2 would flip" in out and "coverage: every denial is audited" in out


@pytest.mark.spark
def test_replay_without_an_audit_table_says_how_to_make_one(
    spark: Any, node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(FILE)
    code, out, err = run_cli(node, capsys, f"plan -f {path} --replay-since 1d --data-dir {tmp_path / 'none'}")
    assert code == 1 and out == "" and "no audit decisions table" in err and "audit run --once" in err
