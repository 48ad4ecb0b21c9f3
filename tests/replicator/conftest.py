"""Fixtures of the replicator tests: a fresh change log on either backend, a running node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from replica_support import LogFactory
from sidecar_support import start_node

from replicator.server.node import Node
from store.log import ChangeLog, EmbeddedChangeLog, KafkaChangeLog


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def open_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogFactory]:
    """A factory of handles on ONE fresh log: the writer and each replica open their own."""
    opened: list[ChangeLog] = []
    if request.param == "embedded":

        def make() -> ChangeLog:
            log = EmbeddedChangeLog(tmp_path / "log")
            opened.append(log)
            return log

    else:
        bootstrap = request.getfixturevalue("kafka_bootstrap")
        topic = request.getfixturevalue("unique_topic")("replica")

        def make() -> ChangeLog:
            log = KafkaChangeLog(bootstrap, topic)
            opened.append(log)
            return log

    yield make
    for log in opened:
        log.close()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    """A node on the embedded log, stopped after the test (test_cli.py runs its own on both logs)."""
    n = start_node(tmp_path / "node")
    yield n
    n.stop()
