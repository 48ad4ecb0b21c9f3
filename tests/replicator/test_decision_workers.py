"""Decisions in worker processes (``--decision-workers``), against what was written.

The node hands connections to its workers in turn, so several connections reach every worker
(each answer names its worker).  Expected decisions are worked out by hand from the write
each check follows; expected offsets are the ones the writes returned.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sidecar_support import action_json, admin_client, binding, create_acls, start_node, wait_until

from replicator.client import StoreClient
from replicator.index.sizes import ANSWER_SLOT_BYTES, BINDING_BYTES, PRINCIPAL_BYTES, SUMMARY_BYTES
from replicator.server.node import Node
from store.acl import AclOperation, ResourceType

pytestmark = pytest.mark.unit

WORKERS = 2
T, READ = ResourceType.TOPIC, AclOperation.READ


class Connection:
    """One keep-alive connection, as a broker's plugin holds it: it stays with one worker."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.worker: str | None = None

    def post(self, path: str, value: Any) -> tuple[int, Any]:
        self.conn.request("POST", path, json.dumps(value), {"Content-Type": "application/json"})
        response = self.conn.getresponse()
        body = json.loads(response.read())
        worker = response.getheader("Aclstore-Worker")
        if path.startswith("/v1/authorize"):
            assert worker is not None, "a decision answered outside the workers"
            assert self.worker in (None, worker), "a keep-alive connection changed worker"
            self.worker = worker
        return response.status, body

    def can_read(self, principal: str, topic: str, min_offset: int | None = None) -> tuple[str, int]:
        request: dict[str, Any] = {"principal": principal, "host": "127.0.0.1",
                                   "actions": [action_json(READ, T, topic)]}  # fmt: skip
        if min_offset is not None:
            request["minOffset"] = min_offset
        status, body = self.post("/v1/authorize", request)
        assert status == 200, body
        return body["results"][0], body["offset"]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = start_node(tmp_path / "node", decision_workers=WORKERS)
    yield n
    n.stop()


@pytest.fixture
def admin(node: Node) -> Iterator[StoreClient]:
    with admin_client(node) as client:
        yield client


def _connections(node: Node, count: int) -> list[Connection]:
    connections = [Connection(node.port) for _ in range(count)]
    for c in connections:
        c.can_read("User:nobody", "warm-up")
    assert {c.worker for c in connections} == {str(n) for n in range(WORKERS)}
    return connections


def test_a_decision_after_a_write_sees_it_on_every_worker(node: Node, admin: StoreClient) -> None:
    connections = _connections(node, 3 * WORKERS)
    for round_ in range(8):
        principal, topic = f"User:u{round_}", f"topic-{round_}"
        grant = binding(T, topic, principal, READ)
        written = create_acls(admin, [grant])
        for c in connections:  # minOffset: at least as fresh as the write
            result, offset = c.can_read(principal, topic, min_offset=written)
            assert (result, offset >= written) == ("ALLOWED", True), (c.worker, offset, written)
        deleted = admin.delete_acls([grant.to_filter()])
        assert deleted.offset is not None and deleted.offset > written
        for c in connections:
            result, offset = c.can_read(principal, topic, min_offset=deleted.offset)
            assert (result, offset >= deleted.offset) == ("DENIED", True)


def test_once_the_node_applied_a_write_no_worker_answers_from_before_it(
    node: Node, admin: StoreClient
) -> None:
    """Without minOffset: a worker catches up with what the node made visible before it
    answers, so no answer is older than one the node could have given when it was asked."""
    connections = _connections(node, 2 * WORKERS)
    for round_ in range(8):
        principal, topic = f"User:v{round_}", f"t-{round_}"
        written = create_acls(admin, [binding(T, topic, principal, READ)])
        status, waited = connections[0].post("/v1/offset/wait", {"after": written - 1, "timeoutMs": 5000})
        assert status == 200 and waited["offset"] >= written  # visible on the node
        for c in connections:
            assert c.can_read(principal, topic) == ("ALLOWED", c.can_read(principal, topic)[1])
            result, offset = c.can_read(principal, topic)
            assert result == "ALLOWED" and offset >= written, (c.worker, offset, written)


def _figures(node: Node) -> dict[str, float]:
    """The node's ``/metrics``, sample by sample (a connection of its own: the node's)."""
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=10)
    conn.request("GET", "/metrics")
    page = conn.getresponse().read().decode()
    conn.close()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\S+) (\S+)$", page, re.MULTILINE)}


def _forwarded(node: Node) -> float:
    return _figures(node)["aclstore_worker_forwarded_requests_total"]


def test_administration_reaches_the_node_through_any_worker(node: Node, admin: StoreClient) -> None:
    """On a connection a worker holds (its first request a decision): writes, reads and a
    streamed listing forwarded by the worker, with the caller checked by the node as if it
    had called it (no token: 401; the admin's token: its principal)."""
    admin.call("POST", "/v1/authorize", {"principal": "User:first", "host": "127.0.0.1",
                                         "actions": [action_json(READ, T, "x")]})  # fmt: skip
    before = _forwarded(node)
    grants = [binding(T, f"listed-{i}", "User:lister", READ) for i in range(300)]
    written = create_acls(admin, grants)
    listing = admin.list_acls(min_offset=written)
    names = sorted(resource.name for resource in listing)
    assert names == sorted(g.name for g in grants)  # streamed through the worker, whole
    assert listing.offset == written and listing.bindings == len(grants)
    anonymous = Connection(node.port)
    anonymous.can_read("User:nobody", "warm-up")  # a worker's connection from here on
    status, body = anonymous.post("/v1/acls/describe", {})
    assert status == 401, body
    assert admin.describe_acls().offset == written
    assert _forwarded(node) == before + 4  # create, list, the 401 and describe


def test_a_connection_that_starts_with_administration_is_the_nodes(node: Node, admin: StoreClient) -> None:
    """The node keeps a connection whose first request is not a decision: its writes and
    reads cost no worker a forward, and a decision asked on it later is the node's answer
    (as fresh as any: the node's replica made the write visible)."""
    before = _forwarded(node)
    written = create_acls(admin, [binding(T, "kept", "User:kept", READ)])
    for _ in range(5):
        assert admin.describe_acls().offset == written
    assert _forwarded(node) == before
    direct = Connection(node.port)
    status, body = direct.post("/v1/acls/describe", {})
    assert status == 401, body  # the node checked the caller itself
    direct.conn.request("POST", "/v1/authorize", json.dumps({
        "principal": "User:kept", "host": "127.0.0.1", "actions": [action_json(READ, T, "kept")],
    }), {"Content-Type": "application/json"})  # fmt: skip
    response = direct.conn.getresponse()
    answer = json.loads(response.read())
    assert response.getheader("Aclstore-Worker") is None  # the node answered
    assert (answer["results"][0], answer["offset"] >= written) == ("ALLOWED", True)
    assert _forwarded(node) == before


def test_metrics_add_up_every_workers_decisions(node: Node, admin: StoreClient) -> None:
    written = create_acls(admin, [binding(T, "counted", "User:c", READ)])
    connections = _connections(node, 2 * WORKERS)  # one denial each to warm up
    for c in connections:
        for _ in range(5):
            assert c.can_read("User:c", "counted", min_offset=written)[0] == "ALLOWED"
    allowed, denied = 5 * len(connections), len(connections)

    def counted() -> bool:
        f = _figures(node)
        return (
            f.get('aclstore_decisions_total{endpoint="authorize",result="ALLOWED"}') == allowed
            and f.get('aclstore_decisions_total{endpoint="authorize",result="DENIED"}') == denied
        )

    wait_until(counted, timeout=5, what="the workers' figures in /metrics")
    f = _figures(node)
    assert f["aclstore_decision_workers"] == WORKERS
    assert f['aclstore_decision_latency_seconds_count{endpoint="authorize"}'] == len(connections) * 6
    for n in range(WORKERS):
        assert f[f'aclstore_decision_worker_applied_offset{{worker="{n}"}}'] >= written
    # Every worker caches the answer for "counted" (one binding, one principal): the node,
    # which answered none of these, adds up at least that much of the workers' estimates.
    answer = ANSWER_SLOT_BYTES + len("counted") + SUMMARY_BYTES + PRINCIPAL_BYTES + BINDING_BYTES
    assert f["aclstore_replica_cache_bytes"] >= WORKERS * answer
    assert f["aclstore_replica_cache_evicted_total"] == 0


def test_a_killed_worker_is_replaced_and_decisions_go_on(node: Node, admin: StoreClient) -> None:
    assert node.workers is not None
    victim = node.workers.workers[0].process.pid
    os.kill(victim, signal.SIGKILL)
    written = create_acls(admin, [binding(T, "after-kill", "User:k", READ)])
    # New connections while it is down are answered (by the other worker, or the node).
    for _ in range(4):
        assert Connection(node.port).can_read("User:k", "after-kill", min_offset=written)[0] == "ALLOWED"
    def replaced() -> bool:
        pool = node.workers
        if pool is None:
            return False
        return all(w.alive for w in pool.workers) and pool.workers[0].process.pid != victim

    wait_until(replaced, timeout=20, what="a new worker 0")
    time.sleep(0.2)
    connections = _connections(node, 2 * WORKERS)
    assert all(c.can_read("User:k", "after-kill")[0] == "ALLOWED" for c in connections)


def test_a_connection_handed_to_a_worker_that_dies_before_taking_it_goes_to_another(
    node: Node, admin: StoreClient
) -> None:
    # A worker stopped (SIGSTOP) is alive but takes nothing: the node hands it the next
    # connection and waits for its TAKEN.  Killed then, it never read the connection, which
    # the node still holds and hands to the other worker.  (Without the answer, the node
    # closed its copy at once and the connection died with the worker: a reset.)
    import threading

    written = create_acls(admin, [binding(T, "handed", "User:h", READ)])
    pool = node.workers
    assert pool is not None
    victim = pool.workers[0].process.pid
    os.kill(victim, signal.SIGSTOP)
    try:
        pool._next = 0  # the next connection goes to worker 0 first
        answers: list[object] = []

        def ask() -> None:
            try:
                answers.append(Connection(node.port).can_read("User:h", "handed", min_offset=written)[0])
            except Exception as exc:  # a reset: recorded, asserted below
                answers.append(exc)

        asking = threading.Thread(target=ask)
        asking.start()
        time.sleep(0.4)  # handed and waited on (the node waits up to TAKEN_TIMEOUT_S, 1 s)
        assert answers == []
    finally:
        os.kill(victim, signal.SIGKILL)
    asking.join(30)
    assert answers == ["ALLOWED"]
