"""What the broker's authorizer plugin needs from the sidecar API, over HTTP on the embedded log.

* ``logIfAllowed`` / ``logIfDenied`` on an action (Kafka's ``Action``): a check the broker marks
  as not worth logging stays out of the audit trail, as Kafka's own authorizers log it at DEBUG.
* ``onBehalfOf`` on the ACL admin bodies: the plugin authenticates with its own credential and
  names the Kafka client it acts for; the store checks and records that client as the actor.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sidecar_support import Raw, action_json, admin_client, binding, create_acls, start_node, wire

from replicator.server.audit import AuditSettings
from replicator.server.node import Node
from replicator.server.tokens import CREDENTIALS_FILE, CredentialStore
from store.acl import AclOperation, ResourceType
from store.codec import decode_event
from store.events import AclCreated
from store.log import EmbeddedChangeLog

pytestmark = pytest.mark.unit

READ, WRITE, ALTER = AclOperation.READ, AclOperation.WRITE, AclOperation.ALTER
TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = start_node(tmp_path / "n", audit=AuditSettings(allow_sample_rate=1.0, source="aclstore://t"))
    yield n
    n.stop()


def _token_header(node: Node, principal: str) -> dict[str, str]:
    token = CredentialStore(node.settings.data_dir / CREDENTIALS_FILE).create_token(principal)
    return {"Authorization": f"Bearer {token}"}


def _audit_names(node: Node) -> list[tuple[str, str]]:
    assert node.audit is not None and node.audit.flush(10)
    log = EmbeddedChangeLog(node.settings.data_dir / "audit")
    records = log.read(0, timeout=2.0)
    events = [json.loads(r.value) for r in records if r.value is not None]
    return [(e["data"]["resourceName"], e["data"]["result"]) for e in events]


def test_actions_the_broker_marks_quiet_stay_out_of_the_audit_trail(node: Node) -> None:
    with admin_client(node) as admin:
        offset = create_acls(admin, [binding(TOPIC, "a", "User:bob", READ)])
    raw = Raw(node)
    try:
        actions = [
            {**action_json(READ, TOPIC, "a"), "logIfAllowed": False},  # allowed, quiet
            {**action_json(READ, TOPIC, "b"), "logIfDenied": False},  # denied, quiet
            {**action_json(READ, TOPIC, "c"), "logIfAllowed": False},  # denied, logged
            action_json(READ, TOPIC, "a"),  # allowed, logged (the default)
        ]
        status, answer = raw.post(
            "/v1/authorize",
            {"principal": "User:bob", "host": "h", "minOffset": offset, "actions": actions},
        )
        assert (status, answer["results"]) == (200, ["ALLOWED", "DENIED", "DENIED", "ALLOWED"])
        status, answer = raw.post(
            "/v1/authorize",
            {"principal": "User:bob", "host": "h", "actions": [
                {**action_json(READ, TOPIC, "d"), "logIfDenied": "no"}
            ]},
        )  # fmt: skip
        assert status == 400 and "actions[0].logIfDenied" in answer["message"]
    finally:
        raw.close()
    assert sorted(_audit_names(node)) == [("a", "ALLOWED"), ("c", "DENIED")]


def test_on_behalf_of_records_the_kafka_client_as_the_actor(node: Node) -> None:
    raw = Raw(node)
    try:
        with admin_client(node) as admin:  # the node's admin principal: a super user
            create_acls(admin, [binding(CLUSTER, "kafka-cluster", "User:ops", ALTER)])
            headers = {"Authorization": f"Bearer {admin.config.token}"}
        body = {
            "bindings": [wire(binding(TOPIC, "orders", "User:alice", WRITE))],
            "onBehalfOf": {"principal": "User:ops", "host": "10.1.2.3"},
        }
        status, answer = raw.post("/v1/acls", body, headers)
        assert status == 200 and answer["results"][0]["error"] is None, answer
        # alice holds no ALTER on the CLUSTER: the store refuses her, not the plugin's caller.
        body["onBehalfOf"] = {"principal": "User:alice", "host": "10.1.2.3"}
        status, answer = raw.post("/v1/acls", body, headers)
        assert status == 403 and "User:alice" in answer["message"], answer
        status, answer = raw.post(
            "/v1/acls/describe", {"filter": {"principal": "User:alice"},
                                  "onBehalfOf": {"principal": "User:nobody", "host": "h"}},
            headers,
        )  # fmt: skip
        assert status == 403 and "DESCRIBE" in answer["message"], answer
    finally:
        raw.close()
    log = EmbeddedChangeLog(node.settings.data_dir / "log")
    created = [
        e for e in (decode_event(r.value) for r in log.read(0, timeout=2.0) if r.value)
        if isinstance(e, AclCreated)
    ]  # fmt: skip
    assert [(str(e.actor), e.binding.principal) for e in created] == [
        ("User:admin", "User:ops"),
        ("User:ops", "User:alice"),
    ]


def test_acting_for_another_principal_needs_cluster_action(node: Node) -> None:
    with admin_client(node) as admin:  # ops may alter ACLs, but is no broker
        create_acls(admin, [binding(CLUSTER, "kafka-cluster", "User:ops", ALTER)])
    raw = Raw(node)
    try:
        body = {
            "bindings": [wire(binding(TOPIC, "orders", "User:alice", WRITE))],
            "onBehalfOf": {"principal": "User:admin", "host": "h"},
        }
        status, answer = raw.post("/v1/acls", body, _token_header(node, "User:ops"))
        assert status == 403 and "CLUSTER_ACTION" in answer["message"], answer
        del body["onBehalfOf"]
        status, answer = raw.post("/v1/acls", body, _token_header(node, "User:ops"))
        assert status == 200 and answer["results"][0]["error"] is None, answer
        status, answer = raw.post(
            "/v1/acls", {**body, "onBehalfOf": {"principal": "alice", "host": "h"}},
            _token_header(node, "User:ops"),
        )  # fmt: skip
        assert status == 400 and "onBehalfOf.principal" in answer["message"], answer
    finally:
        raw.close()


def test_the_offset_long_poll_answers_when_the_replica_applies_a_change(node: Node) -> None:
    raw = Raw(node)
    try:
        status, answer = raw.post("/v1/offset/wait", {"after": 10**9, "timeoutMs": 0})
        assert status == 200
        known = answer["offset"]
        started = time.monotonic()
        status, answer = raw.post("/v1/offset/wait", {"after": known, "timeoutMs": 300})
        assert (status, answer) == (200, {"offset": known, "ready": True})
        assert time.monotonic() - started >= 0.3  # nothing moved: the wait ran out

        written: list[int] = []

        def write_later() -> None:
            time.sleep(0.5)
            with admin_client(node) as admin:
                written.append(create_acls(admin, [binding(TOPIC, "t", "User:bob", READ)]))

        writer = threading.Thread(target=write_later)
        writer.start()
        started = time.monotonic()
        status, answer = raw.post("/v1/offset/wait", {"after": known, "timeoutMs": 20_000})
        waited = time.monotonic() - started
        writer.join()
        assert (status, answer) == (200, {"offset": written[0], "ready": True})
        assert 0.4 <= waited < 5.0  # woken by the write, not by the 20 s timeout
        for bad in ({"after": known}, {"after": "1", "timeoutMs": 1}, {"after": 1, "timeoutMs": 61_000}):
            status, answer = raw.post("/v1/offset/wait", bad)
            assert status == 400, (bad, answer)
    finally:
        raw.close()


# --- decision-cache leases (replicator/leases.py) ---------------------------------------------

def _visible(raw: Raw) -> int:
    status, answer = raw.post("/v1/offset/wait", {"after": 10**9, "timeoutMs": 0})
    assert status == 200, answer
    return int(answer["offset"])


def test_a_leased_cache_hears_of_a_change_before_anyone_can_see_it(node: Node) -> None:
    plugin, other = Raw(node), Raw(node)
    try:
        lease = {"subscriber": "broker-1", "leaseMs": 5000}
        known = _visible(other)
        status, answer = plugin.post("/v1/offset/wait", {"after": known, "timeoutMs": 0, **lease})
        assert (status, answer) == (200, {"offset": known, "ready": True})
        with admin_client(node) as admin:
            written = create_acls(admin, [binding(TOPIC, "t", "User:bob", READ)])
        status, answer = plugin.post("/v1/offset/wait", {"after": known, "timeoutMs": 5000, **lease})
        assert (status, answer) == (200, {"offset": written, "ready": True})
        # Not acknowledged yet: the replica holds the change back from every other reader.
        time.sleep(0.3)
        assert _visible(other) == known
        status, answer = other.post(
            "/v1/authorize", {"principal": "User:bob", "host": "h",
                              "actions": [action_json(READ, TOPIC, "t")]},
        )  # fmt: skip
        assert (answer["results"], answer["offset"]) == (["DENIED"], known)
        started = time.monotonic()
        status, _ = plugin.post("/v1/offset/wait", {"after": written, "timeoutMs": 0, **lease})
        status, answer = other.post("/v1/offset/wait", {"after": known, "timeoutMs": 5000})
        assert answer["offset"] == written
        assert time.monotonic() - started < 1.0  # one round trip, not the 5 s lease
        status, answer = other.post(
            "/v1/authorize", {"principal": "User:bob", "host": "h",
                              "actions": [action_json(READ, TOPIC, "t")]},
        )  # fmt: skip
        assert (answer["results"], answer["offset"]) == (["ALLOWED"], written)
        plugin.post("/v1/offset/wait", {"after": written, "timeoutMs": 0,
                                        "subscriber": "broker-1", "leaseMs": 0})  # fmt: skip
    finally:
        plugin.close()
        other.close()


def test_a_cache_that_stops_acknowledging_holds_an_apply_back_for_its_lease_at_most(
    node: Node,
) -> None:
    plugin, other = Raw(node), Raw(node)
    try:
        known = _visible(other)
        granted = time.monotonic()
        status, answer = plugin.post(
            "/v1/offset/wait", {"after": known, "timeoutMs": 0, "subscriber": "dead", "leaseMs": 1500}
        )  # fmt: skip
        assert status == 200, answer
        with admin_client(node) as admin:
            written = create_acls(admin, [binding(TOPIC, "t", "User:bob", READ)])
        status, answer = other.post("/v1/offset/wait", {"after": known, "timeoutMs": 10_000})
        seen = time.monotonic() - granted
        assert answer["offset"] == written
        assert 1.2 <= seen < 3.5, seen  # held until the lease ran out, then released
        with admin_client(node) as admin:
            second = create_acls(admin, [binding(TOPIC, "u", "User:bob", READ)])
        started = time.monotonic()
        status, answer = other.post("/v1/offset/wait", {"after": written, "timeoutMs": 10_000})
        assert answer["offset"] == second
        assert time.monotonic() - started < 1.0  # the lapsed lease holds nothing back
        for bad in ({"after": 1, "timeoutMs": 0, "leaseMs": 100},
                    {"after": 1, "timeoutMs": 0, "subscriber": "", "leaseMs": 100},
                    {"after": 1, "timeoutMs": 0, "subscriber": "b", "leaseMs": 10_001}):
            status, answer = other.post("/v1/offset/wait", bad)
            assert status == 400, (bad, answer)
    finally:
        plugin.close()
        other.close()
