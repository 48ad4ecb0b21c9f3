"""The sidecar on the Kafka backend: several nodes on one topic are one store with many replicas.

Against the real broker (``kafka_bootstrap``).  Expected decisions come from the pure rules over
the bindings the test wrote (``reference_results``); expected offsets from the write answers.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sidecar_support import (
    Raw,
    action_json,
    admin_client,
    binding,
    create_acls,
    reference_results,
    start_node,
)

from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.kafka

T, G = ResourceType.TOPIC, ResourceType.GROUP
OPS = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL)
PRINCIPALS = ("User:alice", "User:bob", "User:*")
NAMES = ("orders", "ord", "payments", "pay", "*")


@pytest.fixture
def kafka_node(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> Iterator[Callable[[str], Node]]:
    """Start nodes on ONE fresh topic, each with its own data directory."""
    topic = unique_topic("sidecar")
    started: list[Node] = []

    def make(name: str) -> Node:
        node = start_node(tmp_path / name, bootstrap_servers=kafka_bootstrap, topic=topic)
        started.append(node)
        return node

    yield make
    for node in started:
        node.stop()


def random_bindings(rng: random.Random, count: int) -> list[AclBinding]:
    out = []
    for _ in range(count):
        name = rng.choice(NAMES)
        pattern = PatternType.PREFIXED if name != "*" and rng.random() < 0.4 else PatternType.LITERAL
        out.append(
            binding(
                rng.choice((T, G)),
                name,
                rng.choice(PRINCIPALS),
                rng.choice(OPS),
                pattern=pattern,
                host=rng.choice(("*", "10.0.0.1")),
                permission=AclPermissionType.DENY if rng.random() < 0.25 else AclPermissionType.ALLOW,
            )
        )
    return list(dict.fromkeys(out))


def test_two_nodes_on_one_topic_agree(kafka_node: Callable[[str], Node]) -> None:
    a, b = kafka_node("a"), kafka_node("b")
    rng = random.Random(6)
    bindings = random_bindings(rng, 60)
    with admin_client(a) as admin_a:
        offset = create_acls(admin_a, bindings)
        # A delete through node B: node A must see it too.
        gone = bindings[0]
        with admin_client(b) as admin_b:
            deleted = admin_b.delete_acls([gone.to_filter()])
            assert [len(r.deleted) for r in deleted.results] == [1]
            offset = deleted.offset
            assert admin_b.describe_acls() == admin_a.describe_acls()
    live = bindings[1:]
    actions = [
        (rng.choice(OPS[:3]), rng.choice((T, G)), rng.choice(("orders", "ord-1", "payments", "x", "pay")))
        for _ in range(40)
    ]
    raw_a, raw_b = Raw(a), Raw(b)
    try:
        for principal in ("User:alice", "User:bob", "User:carol"):
            for host in ("10.0.0.1", "10.0.0.2"):
                request = {
                    "principal": principal,
                    "host": host,
                    "minOffset": offset,
                    "actions": [action_json(*x) for x in actions],
                }
                status_a, answer_a = raw_a.post("/v1/authorize", request)
                status_b, answer_b = raw_b.post("/v1/authorize", request)
                assert (status_a, status_b) == (200, 200)
                expected = reference_results(live, principal, host, actions)
                assert answer_a["results"] == expected == answer_b["results"]
                assert answer_a["offset"] >= offset and answer_b["offset"] >= offset
    finally:
        raw_a.close()
        raw_b.close()


def test_a_write_on_one_node_is_visible_on_the_other_with_its_offset(
    kafka_node: Callable[[str], Node],
) -> None:
    a, b = kafka_node("a"), kafka_node("b")
    raw_b = Raw(b)
    try:
        with admin_client(a) as admin:
            offset = create_acls(admin, [binding(T, "orders", "User:bob", AclOperation.READ)])
        request = {
            "principal": "User:bob",
            "host": "h",
            "actions": [action_json(AclOperation.READ, T, "orders")],
        }
        status, answer = raw_b.post("/v1/authorize", {**request, "minOffset": offset})
        assert (status, answer["results"], answer["offset"]) == (200, ["ALLOWED"], offset)
    finally:
        raw_b.close()


def test_a_restarted_kafka_node_keeps_its_data(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    topic = unique_topic("restart")
    bindings = random_bindings(random.Random(7), 20)
    node = start_node(tmp_path / "n", bootstrap_servers=kafka_bootstrap, topic=topic)
    try:
        with admin_client(node) as admin:
            offset = create_acls(admin, bindings)
        raw = Raw(node)
        raw.post("/v1/authorize", {"principal": "User:bob", "host": "h", "actions": [], "minOffset": offset})
        raw.close()
    finally:
        node.stop()
    node = start_node(tmp_path / "n", bootstrap_servers=kafka_bootstrap, topic=topic)
    raw = Raw(node)
    try:
        assert node.replica is not None and node.replica.status().offset == offset  # resumed
        actions = [(AclOperation.READ, T, "orders"), (AclOperation.WRITE, G, "payments")]
        status, answer = raw.post(
            "/v1/authorize",
            {"principal": "User:alice", "host": "10.0.0.1", "actions": [action_json(*x) for x in actions]},
        )
        assert (status, answer["offset"]) == (200, offset)
        assert answer["results"] == reference_results(bindings, "User:alice", "10.0.0.1", actions)
        with admin_client(node) as admin:
            described = admin.describe_acls()
        assert len(described.bindings) == len(bindings)
    finally:
        raw.close()
        node.stop()
