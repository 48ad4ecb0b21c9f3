"""``aclstore audit report`` end to end on real Spark: a node's embedded change log (partly
archived), its audit log with events at chosen times; the new denials' causes, the unused
grants and the chart, each worked out by hand from the lists below."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cli
from jobs.common import LogSource
from jobs.history.job import run_archive
from replicator.contract.audit_event import audit_event, encode_audit_event
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule
from store.codec import JsonEventCodec, event_key
from store.events import AclCreated
from store.log.embedded import EmbeddedChangeLog

TOPIC, READ = ResourceType.TOPIC, AclOperation.READ
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
BOB_READS = AclBinding.of(TOPIC, "orders", LITERAL, "User:bob", "*", READ, ALLOW)
CAROL_READS = AclBinding.of(TOPIC, "orders", LITERAL, "User:carol", "*", READ, ALLOW)
BOB_DENIED = AclBinding.of(TOPIC, "ord", PREFIXED, "User:bob", "*", READ, DENY)
# The change log: 0 bob may read orders, 1 carol may, 2 mallory denies bob (by prefix).
CHANGES = [("User:alice", BOB_READS), ("User:alice", CAROL_READS), ("User:mallory", BOB_DENIED)]

T0 = 1_700_000_000_000  # --since: 2023-11-14T22:13:20Z
HOUR, DAY = 3_600_000, 86_400_000
DENIED = Decision(AuthorizationResult.DENIED, DecisionRule.DEFAULT_DENY)


def granted(binding: AclBinding) -> Decision:
    return Decision(AuthorizationResult.ALLOWED, DecisionRule.MATCHING_ACL, binding)


# (ms, principal, decision, change-log offset it reflects)
ASKED = [
    (T0 - DAY, "User:bob", granted(BOB_READS), 1),
    (T0 + HOUR, "User:bob", DENIED, 2),  # new: bob was allowed until offset 2
    (T0 + 2 * HOUR, "User:zed", DENIED, 2),  # new: zed was never allowed
    (T0 + 2 * HOUR + 1000, "User:bob", DENIED, 2),  # not new (bob's first was an hour ago)
    (T0 + 3 * HOUR, "User:carol", granted(CAROL_READS), 2),
]


@pytest.mark.spark
def test_report_names_causes_unused_grants_and_draws_the_denials(
    spark: Any, spark_connect: tuple[Path, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "node"
    codec = JsonEventCodec()
    changes = []
    for i, (actor, binding) in enumerate(CHANGES):
        event = AclCreated(binding=binding, actor=actor, request_id=f"r{i}", time_ms=T0)
        changes.append((event_key(event), codec.encode(event)))
    with EmbeddedChangeLog(data_dir / "log") as log:
        log.append(changes[:2])
        run_archive(spark, LogSource.embedded(data_dir / "log"), str(data_dir / "history"),
                    str(tmp_path / "cp"), once=True)  # fmt: skip
        log.append(changes[2:])  # the cause is in the tail the archive has not reached
        change_times = {r.offset: r.timestamp_ms for r in log.read(0, max_records=10)}
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
    capsys.readouterr()

    since = ["--data-dir", str(data_dir), "--since", "2023-11-14T22:13:20Z"]
    png = tmp_path / "denials.png"
    assert cli.main(["audit", "report", *since, "--format", "json", "--plot", str(png)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["totals"] == {"ALLOWED": 1, "DENIED": 3}
    got = [(d["principal"], d["eventId"], d["causeStatus"], d["cause"]) for d in report["newDenials"]]
    from cli.present.timeparse import format_time

    bob_cause = {
        "offset": 2, "time": format_time(change_times[2]), "type": "ACL_CREATED",
        "binding": ["TOPIC", "ord", "PREFIXED", "User:bob", "*", "READ", "DENY"],
        "actor": "User:mallory", "requestId": "r2", "allowedFromOffset": 0,
    }  # fmt: skip
    assert got == [("User:bob", "e1", "FOUND", bob_cause), ("User:zed", "e2", "NEVER_ALLOWED", None)]
    # Live ALLOWs: bob's (last deciding a day before the window) and carol's (used in it).
    assert report["unusedGrants"] == [{
        "binding": ["TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "ALLOW"],
        "grantedOffset": 0, "granted": format_time(change_times[0]), "grantedBy": "User:alice",
        "lastUsed": "2023-11-13T22:13:20.000000+00:00",
    }]  # fmt: skip

    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data.endswith(b"IEND\xaeB`\x82")
    assert struct.unpack(">4sII", data[12:24]) == (b"IHDR", 1100, 450)

    # The same report asked of a Spark Connect server, as a separate command: the same document
    # (the Connect client switches a whole process over, hence a process of its own).
    _, server = spark_connect
    remote_png = tmp_path / "remote.png"
    asked = subprocess.run(
        [sys.executable, "-m", "cli", "audit", "report", *since, "--format", "json", "--plot",
         str(remote_png), "--remote", server.url],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout) == report
    assert struct.unpack(">4sII", remote_png.read_bytes()[12:24]) == (b"IHDR", 1100, 450)

    assert cli.main(["audit", "report", *since]) == 0
    text = capsys.readouterr().out
    assert "ALLOWED 1, DENIED 3" in text
    bob_line = next(line for line in text.splitlines() if line.startswith("User:bob"))
    assert "FOUND" in bob_line and "User:mallory" in bob_line
    assert "(TOPIC, ord, PREFIXED, User:bob, *, READ, DENY)" in bob_line
    assert "unused grants" in text and "User:alice" in text
    assert cli.main(["audit", "report", *since, "--format", "csv"]) == 0
    denials_csv, unused_csv, *_top = capsys.readouterr().out.split("\r\n\n")
    assert denials_csv.splitlines()[0].startswith("principal,resourceType,resourceName,")
    assert len(denials_csv.splitlines()) == 3 and len(unused_csv.strip().splitlines()) == 2


@pytest.mark.unit
@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--plot", "denials.svg"], "--plot denials.svg: the picture is a PNG; name the file *.png"),
        (["--topic", "acls"], "--topic needs --bootstrap-servers"),
    ],
)
def test_report_refuses_what_cannot_work(
    extra: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["audit", "report", "--data-dir", str(tmp_path), "--since", "0", *extra]
    assert cli.main(argv) == 2
    assert expected in capsys.readouterr().err
