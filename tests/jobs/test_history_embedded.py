"""The default install's history: the embedded SQLite log archived through the Python
streaming source, answers compared with the replay (archive and tail)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.common import LogSource
from jobs.history import HistoryArchive
from jobs.history.job import run_archive
from jobs.history.questions import access_intervals, applies_to
from jobs.history.tables import events_path
from store.authorizer import Action
from store.log.embedded import EmbeddedChangeLog
from tests.jobs.history_support import (
    ASKED,
    NAMED,
    REQUEST_HOSTS,
    RESOURCES,
    allowed_intervals,
    random_history,
    replay,
)

pytestmark = [pytest.mark.spark]


def test_the_embedded_log_is_archived_and_answered_like_the_replay(spark: Any, tmp_path: Path) -> None:
    records = random_history(seed=21, count=400)
    archived = 330
    data_dir = tmp_path / "log"
    source = LogSource.embedded(data_dir)
    location = str(tmp_path / "archive")
    with EmbeddedChangeLog(data_dir) as log:
        log.append([(r.key, r.value) for r in records[:archived]])
        run_archive(spark, source, location, str(tmp_path / "cp"), once=True, max_records_per_batch=100)
        log.append([(r.key, r.value) for r in records[archived:]])
    rows = spark.read.format("delta").load(events_path(location)).select("offset").collect()
    assert sorted(r[0] for r in rows) == list(range(archived))
    states = list(replay(records))
    now = HistoryArchive.for_path(spark, location, source=source).snapshot()
    assert now.offset == len(records) - 1
    assert set(now.bindings) == states[-1].bindings and dict(now.settings) == dict(states[-1].settings)
    loaded = HistoryArchive.for_path(spark, location, source=source).intervals()
    for resource_type, name in RESOURCES[:2]:
        relevant = [v for v in loaded.intervals if applies_to(resource_type, name)(v)]
        for principal in NAMED[:3]:
            action = Action(ASKED[0], resource_type, name)
            got = access_intervals(
                relevant, principal=principal, host=REQUEST_HOSTS[0], action=action
            )
            expected = allowed_intervals(states, principal, REQUEST_HOSTS[0], action)
            assert [(i.from_offset, i.to_offset) for i in got] == expected
