"""``aclstore acls ... --dry-run`` end to end on the embedded default: the access a change
would widen or narrow, with witnesses the node decides as claimed once the change is made,
and nothing written by the dry run itself."""

from __future__ import annotations

import json

import pytest
from sidecar_support import run_cli

import cli
from replicator.server.node import Node

DENY_BOB = (
    "--deny-principal User:bob --operation Read --topic secret- --resource-pattern-type prefixed"
)


def decide(
    node: Node, capsys: pytest.CaptureFixture[str], witness: dict[str, str], min_offset: int = -1
) -> str:
    """The node's decision on the witness, once its replica has applied ``min_offset``."""
    code, out, _ = run_cli(
        node, capsys, f"authorize --principal {witness['principal']} --host {witness['host']} "
        f"--operation {witness['operation']} --topic {witness['resourceName']} --format json "
        f"--min-offset {min_offset}",
    )  # fmt: skip
    assert code in (0, 1)
    result: str = json.loads(out)["results"][0]
    return result


def acl_count(node: Node, capsys: pytest.CaptureFixture[str]) -> tuple[int, int]:
    out = run_cli(node, capsys, "acls --list --format json")[1]
    answer = json.loads(out)
    return len(answer["bindings"]), int(answer["offset"])


def test_dry_run_of_a_prefixed_deny_shows_the_narrowed_read_and_writes_nothing(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(node, capsys, "acls --add --allow-principal User:* --operation Read --topic *")[0] == 0
    before = acl_count(node, capsys)

    code, out, _ = run_cli(node, capsys, f"acls --add {DENY_BOB} --dry-run --format json")
    report = json.loads(out)
    assert code == 0 and report["dryRun"] is True and report["removed"] == []
    assert [(b["resourceName"], b["permissionType"]) for b in report["added"]] == [("secret-", "DENY")]
    assert report["widened"] == []
    [row] = report["narrowed"]
    assert (row["principal"], row["host"], row["operation"]) == ("User:bob", "*", "READ")
    assert (row["names"]["patternType"], row["names"]["name"]) == ("PREFIXED", "secret-")
    assert acl_count(node, capsys) == before  # nothing written

    witness = row["witness"]
    assert decide(node, capsys, witness) == "ALLOWED"
    code, _, err = run_cli(node, capsys, f"acls --add {DENY_BOB}")
    assert code == 0, err
    offset = int(err.strip().removeprefix("(log offset ").removesuffix(")"))
    assert decide(node, capsys, witness, offset) == "DENIED"

    # removing it again: the same set widens back; the table says so first
    code, out, _ = run_cli(node, capsys, f"acls --remove {DENY_BOB} --dry-run")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Dry run (nothing written): 0 ACL(s) to add, 1 to remove")
    widened = lines.index("WIDENED (now DENIED, after ALLOWED): 1")
    assert "READ on TOPIC secret-* for User:bob from any host" in lines[widened + 1]
    assert lines[widened + 2] == "NARROWED (now ALLOWED, after DENIED): 0"
    assert acl_count(node, capsys)[0] == before[0] + 1


def test_dry_run_needs_add_or_remove(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    assert node.info is not None
    admin = str(node.info.credential.properties_path)
    code = cli.main(["acls", "--store", node.url, "--command-config", admin, "--list", "--dry-run"])
    assert code == 1  # kafka-acls.sh's exit code for option errors
    assert "--dry-run goes with --add or --remove" in capsys.readouterr().err
