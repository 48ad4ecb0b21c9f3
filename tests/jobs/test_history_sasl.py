"""The history jobs on a SASL-only broker: ``--log-config`` reaches Spark's Kafka source and the
reader of the tail.

The broker has no PLAINTEXT listener, so nothing is archived or answered unless both clients
log in.  The properties file is written in librdkafka's form (``sasl.username`` and
``sasl.password``), so Spark's JVM client gets the JAAS configuration aclstore builds from it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cli
from devtools.java import SHORT_RUN_JVM_OPTIONS
from devtools.kafka_process import INTER_BROKER_USER, LocalKafka
from jobs.common import LogSource
from jobs.history import HistoryArchive
from jobs.history.tables import events_path
from replicator.properties import read_properties
from store.log.client_properties import KafkaClientProperties
from store.log.kafka import KafkaChangeLog
from tests.jobs.history_support import random_history, replay

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

USERS = {INTER_BROKER_USER: "admin-secret", "historian": 'a "quoted" \\ secret'}


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka]:
    broker = LocalKafka(tmp_path_factory.mktemp("sasl-kafka"), sasl_users=USERS,
                        jvm_options=SHORT_RUN_JVM_OPTIONS)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def test_archive_and_tail_read_a_sasl_broker_with_the_log_config(
    spark: Any, sasl_broker: LocalKafka, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "historian.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=historian\n"
        # Java properties escaping: a backslash is written twice.
        'sasl.password=a "quoted" \\\\ secret\n'
    )
    client = KafkaClientProperties.from_java(read_properties(config), source=str(config))
    assert dict(client.settings)["sasl.password"] == USERS["historian"]
    topic = f"sasl-history-{os.getpid()}-{time.monotonic_ns()}"
    records = random_history(seed=31, count=300)
    archived = 240
    with KafkaChangeLog(sasl_broker.bootstrap_servers, topic, client=client) as log:
        log.append([(r.key, r.value) for r in records[:archived]], timeout=30)
        location = str(tmp_path / "archive")
        code = cli.main([
            "history", "archive", "--once", "--bootstrap-servers", sasl_broker.bootstrap_servers,
            "--topic", topic, "--log-config", str(config), "--archive", location,
        ])  # fmt: skip
        assert code == 0, capsys.readouterr()
        log.append([(r.key, r.value) for r in records[archived:]], timeout=30)

    rows = spark.read.format("delta").load(events_path(location)).select("offset").collect()
    assert sorted(r[0] for r in rows) == list(range(archived))
    states = list(replay(records))
    source = LogSource.kafka(sasl_broker.bootstrap_servers, topic, client=client)
    now = HistoryArchive.for_path(spark, location, source=source).snapshot()  # archive + tail, with SASL
    assert now.offset == len(records) - 1
    assert set(now.bindings) == states[-1].bindings
    assert dict(now.settings) == dict(states[-1].settings)


@pytest.mark.unit
def test_a_log_config_without_a_kafka_log_is_refused_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\n")
    for argv in (["history", "events", "--log-config", str(config)],
                 ["audit", "run", "--once", "--log-config", str(config)]):  # fmt: skip
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["error: --log-config needs --bootstrap-servers (it configures the Kafka "
                       "log's clients)"], err  # fmt: skip
