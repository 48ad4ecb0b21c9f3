"""One contract suite for every ChangeLog backend: the embedded SQLite log and real Kafka.

The compaction test's Kafka topic uses fast-compaction settings (the session broker runs its
cleaner every 250 ms), so it observes the real log cleaner.  Every other test's topic keeps
the store's own settings, under which nothing is compacted for days: on a fast-compaction
topic, a segment rolled between two appends (a pause of 100 ms on a busy machine) is cleaned at
once, and a record the test reads back may already be gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from store.log import (
    ChangeLog,
    EmbeddedChangeLog,
    KafkaChangeLog,
    KafkaLogSettings,
    LogOffsetOutOfRangeError,
    LogRecord,
)

FAST_COMPACTION = KafkaLogSettings(
    segment_ms=100, min_cleanable_dirty_ratio=0.01, delete_retention_ms=100, min_compaction_lag_ms=0
)

LogFactory = Callable[[], ChangeLog]


@pytest.fixture(
    params=["embedded", "embedded-delete", pytest.param("kafka", marks=pytest.mark.kafka)]
)
def open_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogFactory]:
    """A factory of handles on ONE fresh log (every call opens another handle on it);
    ``embedded-delete`` is an embedded log made with ``cleanup.policy=delete`` (the audit
    log's), which stores each append as one row."""
    yield from _handles(request, tmp_path, KafkaLogSettings())


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def open_compacting_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogFactory]:
    """As :func:`open_log`, a Kafka topic compacted as soon as a segment rolls."""
    yield from _handles(request, tmp_path, FAST_COMPACTION)


def _handles(
    request: pytest.FixtureRequest, tmp_path: Path, settings: KafkaLogSettings
) -> Iterator[LogFactory]:
    opened: list[ChangeLog] = []
    if request.param.startswith("embedded"):
        policy = "delete" if request.param == "embedded-delete" else None

        def make() -> ChangeLog:
            log = EmbeddedChangeLog(tmp_path / "data", cleanup_policy=policy)
            opened.append(log)
            return log
    else:
        bootstrap = request.getfixturevalue("kafka_bootstrap")
        topic = request.getfixturevalue("unique_topic")("contract")

        def make() -> ChangeLog:
            log = KafkaChangeLog(bootstrap, topic, settings)
            opened.append(log)
            return log

    yield make
    for log in opened:
        log.close()


def read_all(log: ChangeLog, *, until: int | None = None, timeout: float = 20.0) -> list[LogRecord]:
    """Every record up to the high watermark (or ``until``), through ``read`` alone."""
    high = log.watermarks()[1] if until is None else until
    out: list[LogRecord] = []
    position, deadline = 0, time.monotonic() + timeout
    while position < high:
        assert time.monotonic() < deadline, f"stuck at {position} of {high}"
        batch = log.read(position, timeout=1.0)
        out.extend(batch)
        if batch:
            position = batch[-1].offset + 1
    return out


def test_an_empty_log(open_log: LogFactory) -> None:
    log = open_log()
    assert log.watermarks() == (0, 0)
    assert log.read(0, timeout=0.2) == []
    assert log.append([]) == []


def test_append_returns_dense_offsets_and_read_returns_the_records(open_log: LogFactory) -> None:
    log = open_log()
    before = time.time() * 1000
    first = log.append([(b"a", b"1"), (b"b", b"2"), (b"a", None)])
    second = log.append([(b"c", b"\x00\xff")])
    assert first == [0, 1, 2] and second == [3]
    assert log.watermarks() == (0, 4)
    records = read_all(log)
    assert [(r.offset, r.key, r.value) for r in records] == [
        (0, b"a", b"1"),
        (1, b"b", b"2"),
        (2, b"a", None),
        (3, b"c", b"\x00\xff"),
    ]
    assert all(before - 5_000 <= r.timestamp_ms <= time.time() * 1000 + 5_000 for r in records)


def test_read_from_the_middle_and_in_pages(open_log: LogFactory) -> None:
    log = open_log()
    log.append([(f"k{i}".encode(), f"v{i}".encode()) for i in range(50)])
    page = log.read(10, max_records=7, timeout=5.0)
    assert [r.offset for r in page] == list(range(10, 17))
    rest = read_all(log)
    assert [r.value for r in rest] == [f"v{i}".encode() for i in range(50)]
    assert [r.offset for r in log.read(49, timeout=5.0)] == [49]


def test_read_beyond_the_end_is_an_error_and_at_the_end_is_empty(open_log: LogFactory) -> None:
    log = open_log()
    log.append([(b"a", b"1")])
    assert log.read(1, timeout=0.2) == []
    with pytest.raises(LogOffsetOutOfRangeError, match="offset 5 is beyond the end"):
        log.read(5, timeout=0.2)


def test_another_handle_sees_every_acknowledged_record(open_log: LogFactory) -> None:
    writer = open_log()
    offsets = writer.append([(b"x", b"1"), (b"y", b"2")])
    reader = open_log()  # a fresh process would see exactly this
    assert reader.watermarks()[1] == offsets[-1] + 1
    assert [(r.offset, r.key) for r in read_all(reader)] == [(0, b"x"), (1, b"y")]


def test_a_waiting_reader_gets_a_record_appended_meanwhile(open_log: LogFactory) -> None:
    reader, writer = open_log(), open_log()
    writer.append([(b"first", b"1")])
    assert [r.key for r in reader.read(0, timeout=5.0)] == [b"first"]
    timer = threading.Timer(0.3, lambda: writer.append([(b"later", b"2")]))
    timer.start()
    try:
        got = reader.read(1, timeout=10.0)
    finally:
        timer.join()
    assert [(r.offset, r.key) for r in got] == [(1, b"later")]


def test_concurrent_writers_get_distinct_offsets_in_one_order(open_log: LogFactory) -> None:
    logs = [open_log(), open_log()]
    results: list[list[int]] = [[], []]

    def write(i: int) -> None:
        for n in range(20):
            results[i].extend(logs[i].append([(f"w{i}-{n}".encode(), b"v")]))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    all_offsets = results[0] + results[1]
    assert sorted(all_offsets) == list(range(40))
    assert results[0] == sorted(results[0]) and results[1] == sorted(results[1])
    by_offset = {r.offset: r.key for r in read_all(open_log())}
    for i in range(2):
        assert [by_offset[o] for o in results[i]] == [f"w{i}-{n}".encode() for n in range(20)]


def compact(log: ChangeLog, filler: Callable[[], None], done: Callable[[], bool]) -> None:
    """Run the backend's compaction until ``done()``: the embedded log on demand, Kafka's cleaner
    by rolling segments (``filler`` appends) until it has cleaned."""
    if isinstance(log, EmbeddedChangeLog):
        log.compact(min_compaction_lag_ms=0, delete_retention_ms=0)
        filler()
        log.compact(min_compaction_lag_ms=0, delete_retention_ms=0)
        assert done()
        return
    deadline = time.monotonic() + 90
    while not done():
        assert time.monotonic() < deadline, "the Kafka log cleaner did not compact in 90 s"
        time.sleep(0.3)
        filler()


def test_compaction_keeps_exactly_the_latest_record_per_key(open_compacting_log: LogFactory) -> None:
    open_log = open_compacting_log
    log = open_log()
    log.append([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")])
    log.append([(b"a", b"2"), (b"b", None), (b"d", b"1")])
    log.append([(b"c", None), (b"c", b"3")])  # deleted, then written again: live
    live = {b"a": b"2", b"c": b"3", b"d": b"1"}

    def filler() -> None:
        log.append([(b"filler", b"f")])

    def done() -> bool:
        records = read_all(open_log())
        keys = [r.key for r in records if r.key != b"filler"]
        return len(keys) == len(set(keys)) and all(r.value is not None for r in records)

    compact(log, filler, done)
    fresh = read_all(open_log())  # a fresh reader, after compaction
    state = {r.key: r.value for r in fresh if r.key != b"filler"}
    assert state == live
    assert [r.offset for r in fresh] == sorted(r.offset for r in fresh)
    assert log.watermarks()[0] == 0  # compaction does not move the log start
