"""The real broker does what the product relies on: compacted topics, idempotent acks=all
produce, and the log cleaner removing overwritten values."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from store.log.kafka import wait_for_leader

pytestmark = pytest.mark.kafka

FAST_TOPIC = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
    "delete.retention.ms": "100",
}


def _create(bootstrap: str, topic: str, config: dict[str, str]) -> AdminClient:
    """Create ``topic`` and wait, as a client must, until the broker knows it (a
    DescribeConfigs right after the create got UNKNOWN_TOPIC_OR_PART once)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config=config)])
    futures[topic].result(timeout=30)
    wait_for_leader(admin, topic, 30)
    return admin


def _read_all(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, low)])
        out: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        position = low
        while position < high and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            out.append((msg.key(), msg.value()))
            position = msg.offset() + 1
        return out
    finally:
        consumer.close()


def test_compacted_topic_setting_reads_back(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    topic = unique_topic("compact")
    admin = _create(kafka_bootstrap, topic, {"cleanup.policy": "compact"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["cleanup.policy"].value == "compact"


def test_idempotent_produce_and_compaction_removes_overwritten_value(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    topic = unique_topic("cleaner")
    _create(kafka_bootstrap, topic, FAST_TOPIC)
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "acks": "all"}
    )
    acked: list[int] = []

    def on_delivery(err: object, msg: object) -> None:
        assert err is None, err
        acked.append(msg.offset())  # type: ignore[attr-defined]

    producer.produce(topic, key=b"k", value=b"old", on_delivery=on_delivery)
    producer.produce(topic, key=b"other", value=b"keep", on_delivery=on_delivery)
    assert producer.flush(30) == 0
    time.sleep(0.3)  # let segment.ms pass so the next write rolls a new segment
    producer.produce(topic, key=b"k", value=b"new", on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert acked == [0, 1, 2]  # idempotent, ordered, acknowledged offsets

    before = _read_all(kafka_bootstrap, topic)
    assert (b"k", b"old") in before  # nothing compacted yet is possible; the old value is there

    # The cleaner never touches the active segment: keep rolling until "old" is gone.
    deadline = time.monotonic() + 90
    after = before
    while time.monotonic() < deadline:
        time.sleep(0.5)
        producer.produce(topic, key=b"filler", value=b"x")
        producer.flush(30)
        after = _read_all(kafka_bootstrap, topic)
        if (b"k", b"old") not in after:
            break
    assert (b"k", b"old") not in after, "the log cleaner did not compact the overwritten value"
    assert (b"k", b"new") in after
    assert (b"other", b"keep") in after
