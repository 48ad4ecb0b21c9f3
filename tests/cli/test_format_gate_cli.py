"""Lowering ``acl.format.version`` through ``aclstore configs --alter`` on the embedded default:
refused with the widened access named, then forced with a reason kept in the log."""

from __future__ import annotations

import json

import pytest
from sidecar_support import PREFIXED_DENY_UNDER_WILDCARD_ALLOW, run_cli

from replicator.server.node import Node
from store.events import ConfigAltered
from store.fold import ChangeKind, fold_records
from store.log import EmbeddedChangeLog


def test_a_widening_downgrade_is_refused_then_forced_with_a_recorded_reason(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    for line in PREFIXED_DENY_UNDER_WILDCARD_ALLOW:
        assert run_cli(node, capsys, line)[0] == 0

    code, _, err = run_cli(node, capsys, "configs --alter --add-config acl.format.version=1")
    assert code == 1, err  # the store refused (INVALID_CONFIG over HTTP)
    assert err.startswith("error: cannot lower acl.format.version to 1: a reader of format 1")
    assert "READ on TOPIC secret-* for User:bob" in err

    code, out, err = run_cli(
        node, capsys,
        "configs --alter --add-config acl.format.version=1 --force-reason 'rollback of broker 3'",
    )  # fmt: skip
    assert code == 0, err
    assert "acl.format.version.forced, acl.format.version" in out

    code, out, _ = run_cli(node, capsys, "configs --describe --format json")
    values = {c["name"]: c for c in json.loads(out)["configs"]}
    assert values["acl.format.version"]["value"] == "1"
    assert values["acl.format.version.forced"]["value"].endswith(": rollback of broker 3")

    # the log holds who forced it, in the same request as the change of version
    log = EmbeddedChangeLog(node.data_dir / "log")
    try:
        changes = list(fold_records(log.read(0, timeout=1.0)))
    finally:
        log.close()
    configs = [c.event for c in changes if c.kind is ChangeKind.CONFIG]
    forced, version = configs[-2], configs[-1]
    assert isinstance(forced, ConfigAltered) and isinstance(version, ConfigAltered)
    assert forced.name == "acl.format.version.forced" and forced.actor == "User:admin"
    assert forced.request_id == version.request_id and version.value == "1"
