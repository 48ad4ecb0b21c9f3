"""Real Spark reads the real broker through Spark's Kafka source (Structured Streaming)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_structured_streaming_reads_topic_into_memory_sink(
    spark: Any, kafka_bootstrap: str, unique_topic: Callable[[str], str], checkpoint_dir: Path
) -> None:
    topic = unique_topic("spark")
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all"})
    sent = {f"key-{i}": f"value-{i * i}" for i in range(25)}
    for key, value in sent.items():
        producer.produce(topic, key=key.encode(), value=value.encode())
    assert producer.flush(30) == 0

    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "offset")
    )
    query = (
        stream.writeStream.format("memory")
        .queryName("smoke_" + topic.replace("-", "_"))
        .option("checkpointLocation", str(checkpoint_dir))
        .start()
    )
    try:
        query.processAllAvailable()
        rows = spark.sql(f"SELECT key, value, offset FROM smoke_{topic.replace('-', '_')}").collect()
    finally:
        query.stop()
    assert {row.key: row.value for row in rows} == sent
    assert sorted(row.offset for row in rows) == list(range(len(sent)))
