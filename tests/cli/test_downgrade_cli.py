"""``aclstore downgrade-check`` end to end on the embedded default: the JSON gate, and its
witness checked on real replicas: the node (the current format) denies it, while a replica
of the older format with ``too_new_events=ignore`` over the same log allows it."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from sidecar_support import PREFIXED_DENY_UNDER_WILDCARD_ALLOW, run_cli

from replicator.replica import Replica, ReplicaSettings
from replicator.server.node import Node
from store.acl import AclOperation, ResourceType
from store.authorizer import Action
from store.fold import TooNewEvents
from store.log import EmbeddedChangeLog


def test_a_prefixed_deny_makes_a_downgrade_to_v1_unsafe(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for line in PREFIXED_DENY_UNDER_WILDCARD_ALLOW:
        assert run_cli(node, capsys, line)[0] == 0

    code, out, _ = run_cli(node, capsys, "downgrade-check --to 1 --format json")
    report = json.loads(out)
    assert code == 1 and report["safe"] is False
    assert report["stopping"] == 1
    assert [(b["resourceName"], b["patternType"]) for b in report["ignored"]] == [
        ("secret-", "PREFIXED")
    ]
    assert report["narrowed"] == []
    [row] = report["widened"]
    assert (row["principal"], row["host"], row["operation"]) == ("User:bob", "*", "READ")
    assert (row["names"]["patternType"], row["names"]["name"]) == ("PREFIXED", "secret-")
    witness = row["witness"]
    action = [Action(AclOperation.READ, ResourceType.TOPIC, witness["resourceName"])]

    # The node reads the current format: the witness is denied.
    code, out, _ = run_cli(
        node, capsys, f"authorize --principal User:bob --host {witness['host']} "
        f"--operation Read --topic {witness['resourceName']} --format json "
        f"--min-offset {report['offset']}",  # the state the report read
    )  # fmt: skip
    assert json.loads(out)["results"] == ["DENIED"]

    # A format-1 replica that ignores what it cannot read, over the same log: allowed.
    log = EmbeddedChangeLog(node.data_dir / "log")
    old = Replica.open(
        tmp_path / "v1-index", log,
        ReplicaSettings(reader_version=1, too_new_events=TooNewEvents.IGNORE),
    )  # fmt: skip
    try:
        assert old.wait_until_ready(30)
        assert old.authorize(witness["principal"], witness["host"], action).value[0].allowed
    finally:
        old.close()
        log.close()

    code, out, _ = run_cli(node, capsys, "downgrade-check --to 2")
    assert code == 0
    assert out.splitlines()[0] == "Downgrade to event format v2: SAFE: no access would widen"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_nodes_walk_is_shown_on_a_terminal_and_nowhere_else(
    node: Node, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal, stderr shows the node's walk (``/v1/analysis``) ending with every
    binding read; on a pipe (capsys), stderr stays empty; stdout is the answer either way."""
    for line in PREFIXED_DENY_UNDER_WILDCARD_ALLOW:
        assert run_cli(node, capsys, line)[0] == 0
    code, piped_out, piped_err = run_cli(node, capsys, "downgrade-check --to 1 --format json")
    assert code == 1 and piped_err == ""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code, out, _ = run_cli(node, capsys, "downgrade-check --to 1 --format json")
    assert code == 1 and json.loads(out) == json.loads(piped_out)
    last = terminal.getvalue().rstrip("\n").split("\r")[-1]
    assert last.startswith("downgrade-check: the node's walk: 2 records,") and "0 to go" in last


def test_the_check_on_spark_gives_the_nodes_answer(
    node: Node, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``downgrade-check --spark`` (the state listed from the node, the diff on Spark) and the
    node's own walk: the same document, rows as sets; with ``super.users`` in the log, which
    a format-1 reader does not see (its rows reach every name), and in a table as well."""
    for line in (
        *PREFIXED_DENY_UNDER_WILDCARD_ALLOW,
        "acls --add --allow-principal User:eve --operation Write --topic pay- "
        "--resource-pattern-type prefixed",
        "acls --add --allow-principal User:eve --operation Read --group pay-app",
        "configs --alter --add-config super.users=User:root",
    ):
        assert run_cli(node, capsys, line)[0] == 0
    code, out, _ = run_cli(node, capsys, "downgrade-check --to 1 --format json")
    on_spark_code, on_spark, _ = run_cli(node, capsys, "downgrade-check --to 1 --format json --spark")
    assert code == on_spark_code == 1
    mine, theirs = json.loads(out), json.loads(on_spark)
    for key in ("widened", "narrowed"):
        rows = sorted(json.dumps(r, sort_keys=True) for r in mine[key])
        assert rows == sorted(json.dumps(r, sort_keys=True) for r in theirs[key]), key
        mine[key] = theirs[key] = None
    assert mine == theirs
    assert any(r["principal"] == "User:root" for r in json.loads(out)["narrowed"])
    code, table, _ = run_cli(node, capsys, "downgrade-check --to 1 --spark")
    assert code == 1 and table.splitlines()[0] == "Downgrade to event format v1: UNSAFE: access would widen"
