"""The plugin on a real broker: Kafka clients are authorized by ``aclstore serve``.

A KRaft broker with SASL/PLAIN users admin, alice and bob runs the plugin as its authorizer;
the sidecar is the product's ``aclstore serve`` on the embedded log.  Expected outcomes are
Kafka's error codes for what each principal is granted, worked out by hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from broker_support import Sidecar, consume_one, plugin_broker, produce, wait_until
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from devtools.kafka_process import LocalKafka

pytestmark = pytest.mark.kafka

DENIED_TOPIC = KafkaError.TOPIC_AUTHORIZATION_FAILED


@pytest.fixture(scope="module")
def sidecar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    s = Sidecar(tmp_path_factory.mktemp("sidecar") / "data")
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, sidecar: Sidecar) -> Iterator[LocalKafka]:
    b = plugin_broker(tmp_path_factory.mktemp("kafka"), sidecar)
    b.start()
    try:
        admin = AdminClient(b.client_config("admin"))
        futures = admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "payments")])
        for future in futures.values():
            future.result(timeout=30)
        yield b
    finally:
        b.stop()


def _eventually_produce(broker: LocalKafka, user: str, topic: str, expected: int) -> None:
    """The sidecar applies a change a few ms after ``acls`` returns: retry for a few seconds."""
    seen: list[int] = []

    def check() -> bool:
        seen.append(produce(broker, user, topic, timeout=5))
        return seen[-1] == expected

    wait_until(check, 20, f"{user}'s produce to {topic} to give code {expected} (saw {seen})")


def test_grants_and_revocations_in_the_store_decide_produce(
    broker: LocalKafka, sidecar: Sidecar
) -> None:
    assert produce(broker, "alice", "orders") == DENIED_TOPIC
    assert produce(broker, "admin", "orders") == 0  # a super user, decided in the plugin
    sidecar.cli("acls", "--add", "--allow-principal", "User:alice", "--producer", "--topic", "orders")
    _eventually_produce(broker, "alice", "orders", 0)
    assert produce(broker, "alice", "payments") == DENIED_TOPIC
    assert produce(broker, "bob", "orders") == DENIED_TOPIC
    sidecar.cli("acls", "--remove", "--force", "--allow-principal", "User:alice", "--producer",
                "--topic", "orders")  # fmt: skip
    _eventually_produce(broker, "alice", "orders", DENIED_TOPIC)


def test_without_the_sidecar_the_broker_fails_closed_and_recovers_without_a_restart(
    broker: LocalKafka, sidecar: Sidecar
) -> None:
    sidecar.cli("acls", "--add", "--allow-principal", "User:alice", "--producer", "--topic", "payments")
    _eventually_produce(broker, "alice", "payments", 0)
    sidecar.stop()
    try:
        assert produce(broker, "alice", "payments") == DENIED_TOPIC
        assert produce(broker, "admin", "payments") == 0
        log = broker.log_path.read_text(errors="replace")
        assert re.search(r"failing closed: denied \d+ action\(s\) of User:alice", log), log[-3000:]
    finally:
        sidecar.start()
    _eventually_produce(broker, "alice", "payments", 0)
    assert "answers again" in broker.log_path.read_text(errors="replace")
    assert consume_one(broker, "bob", "payments", "bob-group") != 0  # bob holds nothing
