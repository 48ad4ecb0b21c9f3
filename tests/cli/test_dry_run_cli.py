"""``aclstore acls ... --dry-run`` end to end on the embedded default: the access a change
would widen or narrow, with witnesses the node decides as claimed once the change is made,
and nothing written by the dry run itself."""

from __future__ import annotations

import json
import random

import pytest
from sidecar_support import admin_client, create_acls, run_cli

import cli
from cli.access_output import delta_json
from replicator.contract.bindings import binding_json
from replicator.server.node import Node
from store.access_diff import AclState, access_diff, compact
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

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


def test_the_cli_prints_the_pure_engines_diff_of_a_change_on_a_larger_state(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    """The state written here, the change the command line names, and the rows the pure
    engine gives for the two states, against what ``acls --dry-run --format json`` prints."""
    rng = random.Random(5)
    names = ["team1.", "team1.app", "team1.app.events", "team2.app", "team2."]
    state = {
        AclBinding.of(
            ResourceType.TOPIC, name, PatternType.PREFIXED if name.endswith(".") else PatternType.LITERAL,
            rng.choice(["User:bob", "User:alice", "User:*"]), "*",
            rng.choice([AclOperation.READ, AclOperation.WRITE]),
            AclPermissionType.DENY if rng.random() < 0.3 else AclPermissionType.ALLOW,
        )
        for name in names for _ in range(4)
    }  # fmt: skip
    with admin_client(node) as client:
        create_acls(client, sorted(state))
    change = AclBinding.of(ResourceType.TOPIC, "team1.", PatternType.PREFIXED, "User:bob", "*",
                           AclOperation.WRITE, AclPermissionType.DENY)  # fmt: skip
    before = AclState.of(state)
    expected = compact(access_diff(before, AclState.of(state | {change})))
    code, out, _ = run_cli(
        node, capsys, "acls --add --deny-principal User:bob --operation Write --topic team1. "
        "--resource-pattern-type prefixed --dry-run --format json",
    )  # fmt: skip
    report = json.loads(out)
    assert code == 0
    assert report["added"] == ([] if change in state else [binding_json(change)])
    key = json.dumps
    assert sorted(map(key, report["narrowed"])) == sorted(key(delta_json(r)) for r in expected.narrowed)
    assert sorted(map(key, report["widened"])) == sorted(key(delta_json(r)) for r in expected.widened)
    assert expected.narrowed or change in state
