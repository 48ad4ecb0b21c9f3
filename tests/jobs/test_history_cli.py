"""``aclstore history``: the command line's refusals (one line on stderr, exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator import cli
from replicator.cli.history import apply_plan
from replicator.client import ClientConfig, StoreClient
from replicator.http.wire import binding_from_json, binding_json, filter_json
from replicator.node import Node, NodeSettings
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

WHO = ["history", "who", "--resource-type", "TOPIC", "--resource-name", "orders",
       "--operation", "READ", "--host", "10.0.0.1"]  # fmt: skip
WHEN = ["history", "when", "--principal", "User:bob", "--resource-type", "TOPIC",
        "--resource-name", "orders", "--operation", "READ", "--host", "10.0.0.1"]  # fmt: skip


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``aclstore argv``; assert exit 2 and a one-line error; return that line."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's error path
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["history", "snapshot", "--at", "yesterday"], "time 'yesterday' is not a time"),
        (["history", "snapshot", "--at", "2026-13-01"], "time '2026-13-01' is not a time"),
        (["history", "events", "--from", "12:00"], "time '12:00' is not a time"),
        (["history", "diff", "--from", "0", "--to", "soon"], "time 'soon' is not a time"),
        ([*WHO, "--at", "tomorrow"], "time 'tomorrow' is not a time"),
        ([*WHEN, "--to", "1e9"], "time '1e9' is not a time"),
        (["history", "restore", "--at", "2026-11-23T25:00Z"], "is not a time"),
        (["history", "snapshot", "--offset", "-3"], "offset '-3' is not a log offset"),
        (["history", "snapshot", "--offset", "x"], "offset 'x' is not a log offset"),
        (["history", "snapshot"], "one of the arguments --at --offset is required"),
        (["history", "snapshot", "--at", "0", "--offset", "1"], "not allowed with argument"),
        ([*WHO[:3], "TABLE", *WHO[4:], "--at", "0"], "unknown resource type 'TABLE'"),
        ([*WHO[:3], "ANY", *WHO[4:], "--at", "0"], "unknown resource type 'ANY'"),
        ([*WHO[:7], "READS", *WHO[8:], "--at", "0"], "unknown operation 'READS'"),
        ([*WHEN[:3], "bob", *WHEN[4:]], "principal 'bob': expected a string in format"),
        ([*WHEN, "--from", "2026-11-24", "--to", "2026-11-23"], "is after --to"),
        ([*WHEN, "--plot", "when.svg"], "name the file *.png"),
        (["history", "events", "--topic", "acls"], "--topic needs --bootstrap-servers"),
        (["history", "events", "--format", "xml"], "invalid choice: 'xml'"),
        (["history", "restore"], "one of the arguments --at --offset is required"),
        (["history"], "required: SUBCOMMAND"),
    ],
)
def test_refusals_are_one_line_with_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    line = refused(capsys, argv)
    assert expected in line, line


@pytest.mark.unit
def test_malformed_time_names_the_accepted_forms(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, ["history", "snapshot", "--at", "last tuesday"])
    assert "epoch milliseconds" in line and "ISO-8601" in line and "--at" in line


def _binding(name: str, principal: str) -> AclBinding:
    return AclBinding.of(ResourceType.TOPIC, name, PatternType.LITERAL, principal, "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip


def test_apply_plan_writes_deletes_then_creates_through_the_admin_api(tmp_path: Path) -> None:
    """A node on the embedded log: the plan's deletes and creates land; the rest is untouched."""
    node = Node(NodeSettings(data_dir=tmp_path / "node", listen="127.0.0.1:0", audit=None))
    node.start()
    assert node.info is not None
    admin = ClientConfig.resolve(command_config=node.info.credential.properties_path)
    try:
        keep, drop, back = _binding("keep", "User:a"), _binding("drop", "User:b"), _binding("back", "User:c")
        with StoreClient(admin) as client:
            client.call("POST", "/v1/acls", {"bindings": [binding_json(keep), binding_json(drop)]})
            applied = apply_plan(client, creates=[back], deletes=[drop])
            listed = client.call("POST", "/v1/acls/describe", {"filter": filter_json(AclBindingFilter())})
        assert (applied.deleted, applied.created) == (1, 1)
        assert len(applied.offsets) == 2 and applied.offsets[0] < applied.offsets[1]
        assert {binding_from_json(b) for b in listed["bindings"]} == {keep, back}
        assert int(listed["offset"]) == applied.offsets[-1]
    finally:
        node.stop()
