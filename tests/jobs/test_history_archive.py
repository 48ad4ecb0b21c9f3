"""The archive job on real Spark and a real broker, and every answer against a replay.

A randomized history is written to a topic; most of it is archived (several micro-batches),
the rest stays as the log's tail.  Each answer (snapshot, who, when, diff, restore, events)
is compared with :mod:`tests.jobs.history_support`'s replay, which asks the pure decision
rules on the live set after every record.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.common import LogSource
from jobs.history import HistoryArchive
from jobs.history.errors import ArchiveStoppedError
from jobs.history.job import run_archive
from jobs.history.questions import access_intervals, applies_to, state_at
from jobs.history.tables import events_path
from store.authorizer import Action
from store.codec import binding_key
from store.log.kafka import KafkaChangeLog, KafkaLogSettings
from tests.jobs.history_support import (
    ASKED,
    NAMED,
    REQUEST_HOSTS,
    RESOURCES,
    Record,
    State,
    allowed_intervals,
    random_binding,
    random_history,
    replay,
)

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

ARCHIVED, TAIL = 1500, 150
FAST_COMPACTION = KafkaLogSettings(
    segment_ms=100, min_cleanable_dirty_ratio=0.01, delete_retention_ms=100, min_compaction_lag_ms=0
)


def append(log: KafkaChangeLog, records: list[Record]) -> list[int]:
    offsets: list[int] = []
    for start in range(0, len(records), 500):
        chunk = records[start : start + 500]
        offsets += log.append([(r.key, r.value) for r in chunk], timeout=30)
    return offsets


def archived_offsets(spark: Any, location: str) -> list[int]:
    rows = spark.read.format("delta").load(events_path(location)).select("offset").collect()
    return sorted(int(r[0]) for r in rows)


@pytest.fixture(scope="module")
def history(
    spark: Any, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LogSource, str, list[State]]]:
    topic = f"history-{os.getpid()}-{time.monotonic_ns()}"
    records = random_history(seed=10, count=ARCHIVED + TAIL)
    log = KafkaChangeLog(kafka_bootstrap, topic)
    try:
        offsets = append(log, records[:ARCHIVED])
        assert offsets == list(range(ARCHIVED))
        source = LogSource.kafka(kafka_bootstrap, topic)
        root = tmp_path_factory.mktemp("archive")
        location = str(root / "archive")
        run_archive(spark, source, location, str(root / "checkpoint"), once=True, max_records_per_batch=750)
        assert archived_offsets(spark, location) == list(range(ARCHIVED))
        append(log, records[ARCHIVED:])  # the tail: in the log, not in the archive
        yield source, location, list(replay(records))
    finally:
        log.close()


def test_snapshots_at_offsets_and_times_match_the_replay(
    spark: Any, history: tuple[LogSource, str, list[State]]
) -> None:
    source, location, states = history
    for state in (states[0], states[700], states[ARCHIVED - 1], states[ARCHIVED + 60], states[-1]):
        answer = HistoryArchive.for_path(spark, location, source=source).snapshot(offset=state.offset)
        assert set(answer.bindings) == state.bindings, state.offset
        assert dict(answer.settings) == dict(state.settings), state.offset
    now = HistoryArchive.for_path(spark, location, source=source).snapshot()
    assert now.offset == states[-1].offset and set(now.bindings) == states[-1].bindings
    # Each record's log time is at or after the previous one's: the last offset at a record's
    # time is the last record written in that millisecond.
    at_time = HistoryArchive.for_path(spark, location, source=source).snapshot(at_ms=now.time_ms)
    assert at_time.offset == states[-1].offset


def test_every_access_interval_matches_the_replay_at_every_change_point(
    spark: Any, history: tuple[LogSource, str, list[State]]
) -> None:
    source, location, states = history
    loaded = HistoryArchive.for_path(spark, location, source=source).intervals()
    assert loaded.offset == states[-1].offset
    checked = 0
    for resource_type, name in RESOURCES:
        relevant = [v for v in loaded.intervals if applies_to(resource_type, name)(v)]
        for operation in ASKED:
            action = Action(operation, resource_type, name)
            for principal in NAMED:
                for host in REQUEST_HOSTS:
                    expected = allowed_intervals(states, principal, host, action)
                    got = access_intervals(relevant, principal=principal, host=host, action=action)
                    assert [(i.from_offset, i.to_offset) for i in got] == expected, (
                        principal, host, operation, resource_type, name,
                    )  # fmt: skip
                    checked += len(expected)
    assert checked > 50  # the history does open and close access often


def test_when_through_spark_reads_only_what_applies_and_matches_the_replay(
    spark: Any, history: tuple[LogSource, str, list[State]]
) -> None:
    source, location, states = history
    logged = {e.offset: e for e in HistoryArchive.for_path(spark, location, source=source).events().events}
    for principal, (resource_type, name) in (("User:bob", RESOURCES[0]), ("User:alice", RESOURCES[3])):
        action = Action(ASKED[0], resource_type, name)
        answer = HistoryArchive.for_path(spark, location, source=source).when(
            principal=principal, host=REQUEST_HOSTS[0], operation=ASKED[0],
            resource_type=resource_type, resource_name=name,
        )  # fmt: skip
        expected = allowed_intervals(states, principal, REQUEST_HOSTS[0], action)
        assert [(i.from_offset, i.to_offset) for i in answer.intervals] == expected
        for interval in answer.intervals:  # the events themselves, as the log has them
            assert interval.opened_by == logged[interval.from_offset]
            if interval.to_offset is not None:
                assert interval.closed_by == logged[interval.to_offset]
        assert answer.offset == states[-1].offset


def test_who_names_exactly_the_principals_the_rules_allow(
    spark: Any, history: tuple[LogSource, str, list[State]]
) -> None:
    source, location, states = history
    rng = random.Random(7)
    for state in (states[400], states[ARCHIVED - 1], states[-1], rng.choice(states)):
        for resource_type, name in RESOURCES[:2]:
            operation = rng.choice(ASKED)
            answer = HistoryArchive.for_path(spark, location, source=source).who(
                resource_type=resource_type, resource_name=name,
                operation=operation, host=REQUEST_HOSTS[1], offset=state.offset,
            )  # fmt: skip
            action = Action(operation, resource_type, name)
            for principal in (*NAMED, "User:nobody-else"):
                by_answer = (
                    principal in answer.super_users
                    or any(e.principal == principal for e in answer.allowed)
                    or (answer.everyone and all(e.principal != principal for e in answer.denied))
                )
                assert by_answer == state.allowed(principal, REQUEST_HOSTS[1], action), (
                    state.offset, principal, operation, name,
                )  # fmt: skip
            assert set(answer.super_users) == state.config().super_users


def test_diff_restore_and_events_match_the_replay(
    spark: Any, history: tuple[LogSource, str, list[State]]
) -> None:
    source, location, states = history
    then, now = states[300], states[-1]
    archive = HistoryArchive.for_path(spark, location, source=source)
    changed = archive.diff(from_offset=then.offset, to_offset=now.offset)
    assert set(changed.added) == now.bindings - then.bindings
    assert set(changed.removed) == then.bindings - now.bindings
    plan = HistoryArchive.for_path(spark, location, source=source).restore(offset=then.offset)
    assert set(plan.creates) == then.bindings - now.bindings
    assert set(plan.deletes) == now.bindings - then.bindings
    assert plan.offset == now.offset
    every = HistoryArchive.for_path(spark, location, source=source).events()
    assert [e.offset for e in every.events] == [s.offset for s in states]
    assert every.offset == now.offset


def test_a_corrupt_record_stops_the_archive_at_its_offset(
    spark: Any, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic = f"history-corrupt-{time.monotonic_ns()}"
    good = random_history(seed=3, count=40)
    with KafkaChangeLog(kafka_bootstrap, topic) as log:
        append(log, good)
        [bad] = log.append([(binding_key(random_binding(random.Random(1))), b"\xc3\x01\x00\x01garbage")])
        append(log, good[:5])
    location = str(tmp_path / "archive")
    with pytest.raises(ArchiveStoppedError) as caught:
        run_archive(spark, LogSource.kafka(kafka_bootstrap, topic), location, str(tmp_path / "cp"), once=True)
    assert caught.value.offset == bad == 40
    assert f"at offset {bad}" in caught.value.message
    assert archived_offsets(spark, location) == list(range(40))


_ARCHIVE_SCRIPT = """
import sys
from jobs.common.session import build_session
from jobs.common import LogSource
from jobs.history.job import run_archive
spark = build_session("archive-killed")
run_archive(spark, LogSource.kafka(sys.argv[1], sys.argv[2]), sys.argv[3], sys.argv[4],
            once=True, max_records_per_batch=150)
"""


def test_an_archive_killed_mid_batch_resumes_without_duplicates_or_gaps(
    spark: Any, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic = f"history-kill-{time.monotonic_ns()}"
    records = random_history(seed=5, count=450)
    with KafkaChangeLog(kafka_bootstrap, topic) as log:
        append(log, records)
    location, checkpoint = str(tmp_path / "archive"), str(tmp_path / "cp")
    delta_log = Path(events_path(location)) / "_delta_log"
    child = subprocess.Popen(
        [sys.executable, "-c", _ARCHIVE_SCRIPT, kafka_bootstrap, topic, location, checkpoint],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        # Version 0 creates the table; kill once the first batch has been appended.
        while not (delta_log / "00000000000000000001.json").exists():
            assert child.poll() is None, "the archive ended before it could be killed"
            assert time.monotonic() < deadline, "the archive wrote no batch in 120 s"
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert len(archived_offsets(spark, location)) < len(records)  # it really stopped midway
    run_archive(spark, LogSource.kafka(kafka_bootstrap, topic), location, checkpoint, once=True,
                max_records_per_batch=150)  # fmt: skip
    assert archived_offsets(spark, location) == list(range(len(records)))
    states = list(replay(records))
    loaded = HistoryArchive.for_path(spark, location, source=None).intervals()
    for state in [*states[::150], states[-1]]:
        bindings, settings = state_at(loaded.intervals, state.offset)
        assert bindings == state.bindings and settings == dict(state.settings)


def test_after_compaction_the_archive_still_holds_every_event(
    spark: Any, kafka_bootstrap: str, tmp_path: Path, unique_topic: Callable[[str], str]
) -> None:
    topic = unique_topic("history-compacted")
    records = random_history(seed=9, count=300)
    location, checkpoint = str(tmp_path / "archive"), str(tmp_path / "cp")
    source = LogSource.kafka(kafka_bootstrap, topic)
    with KafkaChangeLog(kafka_bootstrap, topic, FAST_COMPACTION) as log:
        append(log, records)
        run_archive(spark, source, location, checkpoint, once=True)
        deadline = time.monotonic() + 90
        extra: list[Record] = []
        while len([o for o in _read_all(log) if o < len(records)]) == len(records):
            assert time.monotonic() < deadline, "the log cleaner did not compact within 90 s"
            more = random_history(seed=len(extra), count=3)  # new records roll segments
            append(log, more)
            extra += more
            time.sleep(0.3)
        run_archive(spark, source, location, checkpoint, once=True)
        in_log = _read_all(log)
    archived = archived_offsets(spark, location)
    # The log forgot some of the first values; the archive, which read them, did not.
    assert len([o for o in in_log if o < len(records)]) < len(records)
    assert archived[: len(records)] == list(range(len(records)))
    assert set(in_log) <= set(archived)  # and it took what the log still holds since
    states = list(replay(records))
    answer = HistoryArchive.for_path(spark, location, source=None).snapshot(offset=len(records) - 1)
    assert set(answer.bindings) == states[-1].bindings


def _read_all(log: KafkaChangeLog) -> list[int]:
    offsets: list[int] = []
    position = 0
    _, high = log.watermarks()
    while position < high:
        batch = log.read(position, timeout=2.0)
        if not batch:
            break
        offsets += [r.offset for r in batch]
        position = batch[-1].offset + 1
    return offsets
