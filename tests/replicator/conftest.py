"""Fixtures of the replica tests: one fresh change log per test, on either backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from replica_support import LogFactory

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
