"""``aclstore plan --at``: desired-state files against a past point, read from the history
archive (real Spark): the bindings to add and remove are those of the state then (hand-worked
from the writes), and each widened or narrowed row's witness flips under the decision rules
between that state and the planned one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sidecar_support import reference_results

import cli
from replicator.contract.bindings import binding_from_json
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

A, B, C = (
    AclBinding.of(ResourceType.TOPIC, name, PatternType.LITERAL, "User:app", "*", AclOperation.READ,
                  AclPermissionType.ALLOW)
    for name in ("orders.a", "orders.b", "orders.c")
)  # fmt: skip
FILE = """\
version: 1
scope:
  resources: [{resourceType: TOPIC, prefix: orders.}]
acls:
  - principals: [User:app]
    operations: [READ]
    topics: [orders.a, orders.c]
"""


@pytest.mark.spark
def test_plan_against_a_past_offset_and_time(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    data = tmp_path / "data"
    clock = iter(range(1_700_000_000_000, 1_700_000_000_000 + 10**9, 60_000))
    with EmbeddedChangeLog(data / "log") as log:
        admin = AclAdmin(log, super_users=["User:admin"], clock=lambda: next(clock))
        then = admin.create_acls([A, B], actor="User:admin").offset  # at 1_700_000_000_000
        deleted = admin.delete_acls([A.to_filter()], actor="User:admin").offset
        created = admin.create_acls([C], actor="User:admin").offset
        # the log's own record times (append time: several records may share a millisecond)
        times = [(r.offset, r.timestamp_ms) for r in log.read(0, timeout=5)]
    assert cli.main(["history", "archive", "--once", "--data-dir", str(data)]) == 0
    capsys.readouterr()
    path = tmp_path / "orders.yaml"
    path.write_text(FILE)

    points = [["--at-offset", str(then)]]
    for point in points:
        code = cli.main(["plan", "-f", str(path), "--data-dir", str(data), "--format", "json", *point])
        out, err = capsys.readouterr()
        assert code == 2, err
        doc = json.loads(out)
        if len(points) == 1:  # then the same point by its time: the log time of the record there
            assert doc["at"]["offset"] == then
            at_ms = doc["at"]["timeMs"]
            assert at_ms == dict(times)[then]
            points.append(["--at", str(at_ms)])
        else:  # the last offset at or before that time: ``then``, or a later one of the same ms
            assert doc["at"]["offset"] == max(o for o, ms in times if ms <= at_ms)
        before = {then: {A, B}, deleted: {B}, created: {B, C}}[doc["at"]["offset"]]
        after = {A, C}  # the file's
        assert {binding_from_json(x) for x in doc["add"]} == after - before
        assert {binding_from_json(x) for x in doc["remove"]} == before - after
        for rows, flip in (
            (doc["widened"], (["DENIED"], ["ALLOWED"])),
            (doc["narrowed"], (["ALLOWED"], ["DENIED"])),
        ):
            assert rows
            for row in rows:
                w = row["witness"]
                action = [(AclOperation[w["operation"]], ResourceType[w["resourceType"]], w["resourceName"])]
                assert (reference_results(before, w["principal"], w["host"], action),
                        reference_results(after, w["principal"], w["host"], action)) == flip  # fmt: skip

    code = cli.main(
        [
            "plan",
            "-f",
            str(path),
            "--data-dir",
            str(data),
            "--at-offset",
            str(then),
            "--out",
            str(tmp_path / "p.json"),
        ]
    )
    assert code == 1 and "cannot be applied" in capsys.readouterr().err


@pytest.mark.spark
def test_drift_names_a_compacted_delete_from_the_history_archive(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    data = tmp_path / "data"
    with EmbeddedChangeLog(data / "log") as log:
        admin = AclAdmin(log, super_users=["User:admin", "User:mallory"])
        admin.create_acls([A, C], actor="User:admin")
        deleted = admin.delete_acls([A.to_filter()], actor="User:mallory").offset - 1  # the AclDeleted
        admin.create_acls([B], actor="User:admin")
    assert cli.main(["history", "archive", "--once", "--data-dir", str(data)]) == 0
    with EmbeddedChangeLog(data / "log") as log:  # the cleaner: A's records are gone from the log
        assert log.compact(now_ms=2**62, min_compaction_lag_ms=0, delete_retention_ms=0) >= 3
    capsys.readouterr()
    path = tmp_path / "orders.yaml"
    path.write_text(FILE)

    def missing(*extra: str) -> dict[str, object]:
        code = cli.main(["drift", "-f", str(path), "--data-dir", str(data), "--format", "json", *extra])
        out, err = capsys.readouterr()
        assert code == 2, err
        [row] = json.loads(out)["missing"]
        assert binding_from_json(row["binding"]) == A
        return dict(row)

    assert missing()["actor"] is None  # the log alone no longer knows
    row = missing("--history")
    assert (row["actor"], row["offset"]) == ("User:mallory", deleted)
