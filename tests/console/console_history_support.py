"""A node whose history holds known changes, archived, for the console's history tests; the
same questions asked as a user types them (``aclstore history … --format json``)."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from console_support import admin_token
from sidecar_support import admin_client, start_node

import cli
from replicator.server.console.questions import HistorySource
from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

ROOT = Path(__file__).resolve().parents[2]


def read(principal: str, name: str = "orders", *, pattern: PatternType = PatternType.LITERAL,
         permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:  # fmt: skip
    return AclBinding.of(ResourceType.TOPIC, name, pattern, principal, "*", AclOperation.READ, permission)


BOB, ALICE, CAROL = read("User:bob"), read("User:alice"), read("User:carol")
CAROL_DENY = read("User:carol", "ord", pattern=PatternType.PREFIXED, permission=AclPermissionType.DENY)


@dataclass(frozen=True)
class History:
    """The node, its Connect server's URL, and the offsets of its writes (hand-worked below)."""

    node: Node
    remote: str
    bob_created: int
    alice_created: int
    bob_deleted: int
    """The offset the delete answered (its tombstone); the AclDeleted is one before."""
    bob_again: int
    carol_created: int
    alice_deleted: int
    """Written after the archive: the answers read it from the log's tail."""


def _pause() -> None:
    time.sleep(0.02)  # distinct log times: a time names the last record written by then


def build_history(data_dir: Path, remote: str) -> History:
    """A node, then writes through the admin API: bob, alice, bob deleted, bob again, carol
    (allowed, and denied by a prefixed DENY); the archive; then alice deleted."""
    node = start_node(data_dir, history=HistorySource(data_dir=data_dir, remote=remote))
    try:
        with admin_client(node) as client:
            offsets = []
            for write in (lambda: client.create_acls([BOB]), lambda: client.create_acls([ALICE]),
                          lambda: client.delete_acls([BOB.to_filter()]),
                          lambda: client.create_acls([BOB]),
                          lambda: client.create_acls([CAROL, CAROL_DENY])):  # fmt: skip
                answer: Any = write()
                assert answer.offset is not None
                offsets.append(answer.offset)
                _pause()
            assert cli.main(["history", "archive", "--once", "--data-dir", str(data_dir)]) == 0
            _pause()
            deleted = client.delete_acls([ALICE.to_filter()]).offset
            assert deleted is not None
    except BaseException:
        node.stop()
        raise
    return History(node, remote, *offsets, deleted)


class Command:
    """``aclstore <argv> --data-dir <node's> --remote <url> --format json`` as a user runs it,
    started now (beside what the test does meanwhile); :meth:`answer` is its JSON document."""

    def __init__(self, history: History, *argv: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli", *argv, "--data-dir", str(history.node.data_dir),
             "--remote", history.remote, "--format", "json"],
            cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def answer(self) -> Any:
        try:
            out, err = self.process.communicate(timeout=300)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        assert self.process.returncode == 0, err
        return json.loads(out)


def aclstore(history: History, *argv: str) -> Any:
    """The JSON document of :class:`Command` ``argv``, run to its end now."""
    return Command(history, *argv).answer()


class ConsoleCalls:
    """The console's calls over plain HTTP with a session logged in with the admin token."""

    def __init__(self, node: Node) -> None:
        self.address = urlsplit(node.url).netloc
        status, headers, _ = self._raw("POST", "/ui/login", f"token={admin_token(node)}".encode(),
                                       {"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
        assert status == 303, status
        self.cookie = headers["Set-Cookie"].split(";", 1)[0]

    def _raw(self, method: str, path: str, body: bytes, headers: dict[str, str]
             ) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
        conn = http.client.HTTPConnection(self.address, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def post(self, path: str, value: Any) -> tuple[int, Any]:
        status, _, body = self._raw("POST", path, json.dumps(value).encode(), {
            "Content-Type": "application/json", "Cookie": self.cookie, "X-Aclstore-Console": "1",
        })  # fmt: skip
        return status, json.loads(body)

    def ask(self, kind: str, fields: dict[str, Any], timeout_s: float = 120) -> dict[str, Any]:
        """Ask, then poll until the job ends: its last view."""
        status, job = self.post("/ui/api/history/ask", {"question": kind, "fields": fields})
        assert status == 200, job
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status, view = self.post("/ui/api/history/status", {"job": job["job"]})
            assert status == 200, view
            if view["phase"] != "running":
                return dict(view)
            time.sleep(0.1)
        raise AssertionError(f"{kind} did not answer within {timeout_s} s")
