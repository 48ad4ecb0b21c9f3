"""Helpers of the sidecar tests: real nodes on loopback, raw HTTP calls, and the reference.

``reference_results`` is what answers are compared with: the pure decision rules
(:func:`store.authorizer.authorize`) over a plain list of the same bindings
(:class:`store.authorizer.ScanAclView`, which finds applicable ACLs through KIP-290's MATCH
filter rather than the replica's RocksDB key layout), never the node's own output.
"""

from __future__ import annotations

import http.client
import json
import shlex
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import cli
from replicator.client import ClientConfig, StoreClient
from replicator.server.audit import AuditSettings
from replicator.server.node import Node, NodeSettings
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizerConfig, ScanAclView, authorize

ADMIN = "User:admin"


def start_node(data_dir: Path, **overrides: Any) -> Node:
    """A node on a free loopback port, audit sampling every decision unless told otherwise."""
    settings = NodeSettings(
        data_dir=data_dir, listen="127.0.0.1:0", audit=AuditSettings(allow_sample_rate=1.0)
    )
    node = Node(replace(settings, **overrides))
    node.start()
    return node


def admin_client(node: Node) -> StoreClient:
    assert node.info is not None
    return StoreClient(ClientConfig.resolve(command_config=node.info.credential.properties_path))


class Raw:
    """Raw HTTP against a node: any method, path, body bytes and headers."""

    def __init__(self, node: Node) -> None:
        self.port = node.port
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def call(
        self,
        method: str,
        path: str,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, http.client.HTTPResponse]:
        payload = body.encode() if isinstance(body, str) else body
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=payload, headers=headers or {})
                response = self.conn.getresponse()
                data = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt == 2:
                    raise
        if response.getheader("Connection", "").lower() == "close":
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        decoded: Any = data
        if response.getheader("Content-Type", "").startswith("application/json"):
            decoded = json.loads(data)
        return response.status, decoded, response

    def post(self, path: str, value: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        status, body, _ = self.call(
            "POST", path, json.dumps(value), {"Content-Type": "application/json", **(headers or {})}
        )
        return status, body

    def close(self) -> None:
        self.conn.close()


def binding(
    rt: ResourceType,
    name: str,
    principal: str,
    op: AclOperation,
    *,
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
    permission: AclPermissionType = AclPermissionType.ALLOW,
) -> AclBinding:
    return AclBinding.of(rt, name, pattern, principal, host, op, permission)


def wire(b: AclBinding) -> dict[str, str]:
    """A binding in the API's JSON shape, written out field by field (not the server's code)."""
    return {
        "resourceType": b.resource_type.name,
        "resourceName": b.name,
        "patternType": b.pattern_type.name,
        "principal": b.principal,
        "host": b.host,
        "operation": b.operation.name,
        "permissionType": b.permission_type.name,
    }


def create_acls(client: StoreClient, bindings: Iterable[AclBinding]) -> int:
    """CreateAcls through the API; every binding must be accepted. Returns the write's log offset."""
    answer = client.create_acls(list(bindings))
    assert all(r.error is None for r in answer.results), answer
    assert answer.offset is not None
    return answer.offset


def action_json(op: AclOperation, rt: ResourceType, name: str) -> dict[str, str]:
    return {"operation": op.name, "resourceType": rt.name, "resourceName": name}


def reference_results(
    bindings: Iterable[AclBinding],
    principal: str,
    host: str,
    actions: Sequence[tuple[AclOperation, ResourceType, str]],
    *,
    super_users: Sequence[str] = (ADMIN,),
    allow_everyone: bool = False,
) -> list[str]:
    """The pure decision rules over a plain list of the bindings."""
    decisions = authorize(
        ScanAclView(bindings),
        AuthorizerConfig.of(super_users, allow_everyone),
        principal,
        host,
        [Action(op, rt, name) for op, rt, name in actions],
    )
    return [d.result.value for d in decisions]


def wait_until(
    condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def run_cli(node: Node, capsys: pytest.CaptureFixture[str], line: str) -> tuple[int, str, str]:
    """``aclstore <line>`` (split as a shell would) against ``node`` with its admin
    credential, through ``cli.main`` as the console script runs it: (exit code, out, err)."""
    assert node.info is not None
    admin = str(node.info.credential.properties_path)
    command, *rest = shlex.split(line)
    code = cli.main([command, "--store", node.url, "--command-config", admin, *rest])
    out, err = capsys.readouterr()
    return code, out, err


PREFIXED_DENY_UNDER_WILDCARD_ALLOW = (
    "acls --add --allow-principal User:* --operation Read --topic *",
    "acls --add --deny-principal User:bob --operation Read --topic secret- "
    "--resource-pattern-type prefixed",
)
"""KIP-290's downgrade hole as ``aclstore`` command lines: every principal may read every
topic, bob is denied the ``secret-`` topics by a PREFIXED DENY a format-1 reader ignores."""

