"""``aclstore history diff --access`` end to end on real Spark: a history written with known
times, archived, then the access that changed between two times, checked against the pure
decision rules on the two states rebuilt by an independent replay of the log's records."""

from __future__ import annotations

import csv
import io
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from history_support import Record, State, replay

import cli
from store.access_diff import checked_operations
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP

EVERYONE_READS = AclBinding.of(TOPIC, "*", LITERAL, "User:*", "*", AclOperation.READ, ALLOW)
ALICE_WRITES = AclBinding.of(TOPIC, "orders", LITERAL, "User:alice", "*", AclOperation.WRITE, ALLOW)
BOB_DENIED = AclBinding.of(TOPIC, "secret-", PREFIXED, "User:bob", "*", AclOperation.READ, DENY)
CAROL_GROUP = AclBinding.of(GROUP, "app", LITERAL, "User:carol", "10.0.0.7", AclOperation.READ, ALLOW)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def covers(row: dict[str, Any], principal: str, host: str, op: str, rt: str, name: str) -> bool:
    """Whether a row of the JSON document names this request (read from the document only)."""
    names = row["names"]
    if (row["resourceType"], row["operation"]) != (rt, op):
        return False
    if names["patternType"] == "LITERAL":
        in_names = name == names["name"]
    else:
        in_names = (
            name.startswith(names["name"])
            and name not in names["exceptNames"]
            and not any(name.startswith(p) for p in names["exceptPrefixes"])
        )
    if row["principal"] == "*":
        typed = row["principalType"] is None or principal.startswith(row["principalType"] + ":")
        who = typed and principal not in row["principalExcept"]
    else:
        who = principal == row["principal"]
    where = host not in row["hostExcept"] if row["host"] == "*" else host == row["host"]
    return in_names and who and where


@pytest.mark.spark
def test_history_diff_access_against_a_replay(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    data = tmp_path / "data"
    where = ["--data-dir", str(data)]
    clock = iter(range(1_800_000_000_000, 1_800_000_000_000 + 10**9, 60_000))
    with EmbeddedChangeLog(data / "log") as log:
        admin = AclAdmin(log, super_users=["User:admin"], clock=lambda: next(clock))
        admin.create_acls([EVERYONE_READS, ALICE_WRITES], actor="User:admin")
        start = admin.alter_configs({"super.users": "User:ops"}, actor="User:admin").offset
        # A time names the last record at or before it, and log times are wall-clock
        # milliseconds: the next record must come a millisecond later for --from to name it.
        time.sleep(0.005)
        admin.create_acls([BOB_DENIED, CAROL_GROUP], actor="User:admin")
        admin.delete_acls([ALICE_WRITES.to_filter()], actor="User:admin")
        admin.alter_configs({"allow.everyone.if.no.acl.found": "true"}, actor="User:admin")
        end = admin.alter_configs({"super.users": None}, actor="User:admin").offset
        time.sleep(0.005)
        # after --to: not part of the answer
        admin.create_acls([ALICE_WRITES], actor="User:admin")
        records = [Record(r.key, r.value) for r in log.read(0, max_records=1000)]
    assert len(records) == end + 2  # offsets from 0, one record after ``end``
    _run(capsys, "history", "archive", "--once", *where)
    events = json.loads(_run(capsys, "history", "events", *where, "--format", "json"))
    times = {e["offset"]: e["time"] for e in events}
    t1, t2 = times[start], times[end]

    doc = json.loads(_run(capsys, "history", "diff", *where, "--from", t1, "--to", t2,
                          "--access", "--format", "json"))  # fmt: skip
    assert (doc["fromOffset"], doc["toOffset"]) == (start, end)
    states = list(replay(records))
    before, after = states[start], states[end]
    assert {tuple(b) for b in doc["added"]} == {b.fields() for b in after.bindings - before.bindings}

    # every witness flips under the rules, the way its row says
    assert doc["widened"] and doc["narrowed"]
    for change, rows in (("widened", doc["widened"]), ("narrowed", doc["narrowed"])):
        for row in rows:
            w = row["witness"]
            action = Action(AclOperation[w["operation"]], ResourceType[w["resourceType"]],
                            w["resourceName"])  # fmt: skip
            was = before.allowed(w["principal"], w["host"], action)
            now = after.allowed(w["principal"], w["host"], action)
            assert (was, now) == ((False, True) if change == "widened" else (True, False)), row
            assert covers(row, w["principal"], w["host"], w["operation"], w["resourceType"],
                          w["resourceName"])  # fmt: skip

    # hand-worked: what each change did
    expected = {
        ("narrowed", "User:bob", "10.0.0.1", "READ", "TOPIC", "secret-x"),  # the prefixed DENY
        ("narrowed", "User:alice", "10.0.0.1", "WRITE", "TOPIC", "orders"),  # her ALLOW deleted
        # no longer super: denied where an ACL now decides (not where allow-everyone does)
        ("narrowed", "User:ops", "10.0.0.1", "READ", "GROUP", "app"),
        ("widened", "User:dave", "10.0.0.1", "READ", "GROUP", "other"),  # no ACL: allow everyone
        ("widened", "User:dave", "10.0.0.1", "WRITE", "TRANSACTIONAL_ID", "tx"),
    }
    for change, *request in expected:
        assert any(covers(r, *request) for r in doc[change]), (change, request)
    # untouched: everyone still reads orders; dave was denied group "app" (no ACL, and
    # allow-everyone off) and still is (carol's ACL decides there now); ops on the cluster
    # (no ACL) was allowed as a super user and now by allow-everyone
    for request in (("User:dave", "10.0.0.1", "READ", "TOPIC", "orders"),
                    ("User:dave", "10.0.0.1", "READ", "GROUP", "app"),
                    ("User:ops", "10.0.0.1", "ALTER", "CLUSTER", "kafka-cluster")):  # fmt: skip
        assert not any(covers(r, *request) for r in doc["widened"] + doc["narrowed"]), request

    # nothing left out: requests drawn around every name in play flip iff a row says so
    _probe(before, after, doc, random.Random(11))

    table = _run(capsys, "history", "diff", *where, "--from", t1, "--to", t2, "--access")
    lines = table.splitlines()
    assert lines[0].startswith(f"Access changed from offset {start} to offset {end}: 2 binding(s) added")
    widened_at = next(i for i, line in enumerate(lines) if line.startswith("WIDENED"))
    narrowed_at = next(i for i, line in enumerate(lines) if line.startswith("NARROWED"))
    assert widened_at < narrowed_at
    assert lines[widened_at] == (
        f"WIDENED (at offset {start} DENIED, at offset {end} ALLOWED): {len(doc['widened'])}"
    )
    assert narrowed_at - widened_at == len(doc["widened"]) + 1
    assert lines[-1] == f"(log offset {end})"

    rows = list(csv.DictReader(io.StringIO(_run(capsys, "history", "diff", *where, "--from", t1,
                                                 "--to", t2, "--access", "--format", "csv"))))  # fmt: skip
    changes = ["widened"] * len(doc["widened"]) + ["narrowed"] * len(doc["narrowed"])
    assert [r["change"] for r in rows] == changes
    assert {r["offset"] for r in rows} == {str(end)}
    assert [r["witnessResourceName"] for r in rows] == [
        r["witness"]["resourceName"] for r in doc["widened"] + doc["narrowed"]
    ]


def _probe(before: State, after: State, doc: dict[str, Any], rng: random.Random) -> None:
    names = ["orders", "secret-", "secret-x", "secretx", "app", "apps", "other", "*", "kafka-cluster"]
    principals = ["User:alice", "User:bob", "User:carol", "User:ops", "User:admin", "User:zed"]
    hosts = ["10.0.0.7", "10.0.0.1"]
    types = [TOPIC, GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID]
    for _ in range(600):
        rt = rng.choice(types)
        # the operations Kafka's requests check on the type (the engine's scope)
        p, h, op, n = (rng.choice(principals), rng.choice(hosts),
                       rng.choice(checked_operations(rt)), rng.choice(names))  # fmt: skip
        action = Action(op, rt, n)
        was, now = before.allowed(p, h, action), after.allowed(p, h, action)
        in_widened = any(covers(r, p, h, op.name, rt.name, n) for r in doc["widened"])
        in_narrowed = any(covers(r, p, h, op.name, rt.name, n) for r in doc["narrowed"])
        assert in_widened == (not was and now), (p, h, op, rt, n)
        assert in_narrowed == (was and not now), (p, h, op, rt, n)
