"""The embedded log's cleanup policy, on real SQLite files: ``compact`` (the change log: one row
a record, an index by key) and ``delete`` (the audit log: one row an append, no index).

The expectations are written by hand, and the earlier version's log is made with SQL alone
(:mod:`embedded_log_support`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from embedded_log_support import earlier_embedded_log, indexes, row_counts

from store.log import EmbeddedChangeLog, LogNotCompactedError, LogRecord
from store.log.embedded import DELETE_LOG_PAGE_BYTES

pytestmark = pytest.mark.unit

EARLIER = [(b"e0", b"v0", 1000), (b"e1", None, 1001), (b"e0", b"v2", 1002)]


def page_size(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA page_size").fetchone()[0])
    finally:
        db.close()


def every_record(log: EmbeddedChangeLog, page: int = 10_000) -> list[LogRecord]:
    out: list[LogRecord] = []
    while batch := log.read(len(out) and out[-1].offset + 1, max_records=page, timeout=0.0):
        out.extend(batch)
    return out


def test_a_delete_log_has_no_key_index_and_stores_an_append_as_one_row(tmp_path: Path) -> None:
    with EmbeddedChangeLog(tmp_path, cleanup_policy="delete") as log:
        assert log.append([(b"a", b"1"), (b"b", None)]) == [0, 1]
        assert log.append([(b"c", b"")]) == [2]
        assert log.append([(b"", b"\x00\xff" * 300)] * 4) == [3, 4, 5, 6]
    assert indexes(log.path) == set()
    assert row_counts(log.path) == (0, 3)
    assert page_size(log.path) == DELETE_LOG_PAGE_BYTES == 65536  # SQLite's default: 4096
    with EmbeddedChangeLog(tmp_path) as reopened:  # no policy named: the file's
        assert reopened.cleanup_policy == "delete"
        records = every_record(reopened, page=2)
        assert reopened.watermarks() == (0, 7)
        assert [r.timestamp_ms for r in reopened.read(3, timeout=0.0)] == [records[3].timestamp_ms] * 4
    assert indexes(log.path) == set()
    assert [(r.offset, r.key, r.value) for r in records] == [
        (0, b"a", b"1"), (1, b"b", None), (2, b"c", b""),
        *((i, b"", b"\x00\xff" * 300) for i in range(3, 7)),
    ]  # fmt: skip


def test_a_log_of_an_earlier_version_becomes_delete_with_its_records_untouched(tmp_path: Path) -> None:
    path = earlier_embedded_log(tmp_path, EARLIER)
    assert indexes(path) == {"records_by_key"}
    with EmbeddedChangeLog(tmp_path, cleanup_policy="delete") as log:
        assert indexes(path) == set()
        assert log.append([(b"n3", b"v3"), (b"n4", b"v4")]) == [3, 4]
        assert log.append([(b"n5", b"v5")]) == [5]
        # Read across both ways of storing, in pages that start inside a batch.
        assert [r.offset for r in log.read(2, max_records=2, timeout=0.0)] == [2, 3]
        assert [r.offset for r in log.read(4, max_records=5, timeout=0.0)] == [4, 5]
        records = every_record(log, page=1)
    assert row_counts(path) == (3, 2)
    assert page_size(path) == 4096  # set when the file was made
    assert [(r.offset, r.key, r.value, r.timestamp_ms) for r in records[:3]] == [
        (0, b"e0", b"v0", 1000), (1, b"e1", None, 1001), (2, b"e0", b"v2", 1002),
    ]  # fmt: skip
    assert [(r.offset, r.key, r.value) for r in records[3:]] == [
        (3, b"n3", b"v3"), (4, b"n4", b"v4"), (5, b"n5", b"v5"),
    ]  # fmt: skip


def test_a_log_of_an_earlier_version_opened_without_a_policy_stays_compacted(tmp_path: Path) -> None:
    path = earlier_embedded_log(tmp_path, EARLIER)
    with EmbeddedChangeLog(tmp_path) as log:
        assert log.cleanup_policy == "compact"
        assert log.append([(b"e1", b"v3")]) == [3]
        removed = log.compact(now_ms=10**13, min_compaction_lag_ms=0, delete_retention_ms=0)
        kept = [(r.offset, r.key) for r in every_record(log)]
    assert indexes(path) == {"records_by_key"}
    assert row_counts(path) == (2, 0)
    assert (removed, kept) == (2, [(2, b"e0"), (3, b"e1")])  # e0@0 and e1@1 superseded


def test_compacting_a_delete_log_is_refused_until_it_is_made_compact(tmp_path: Path) -> None:
    with EmbeddedChangeLog(tmp_path, cleanup_policy="delete") as log:
        log.append([(b"a", b"1"), (b"b", b"2")])
        log.append([(b"a", b"3")])
        with pytest.raises(LogNotCompactedError, match=r"cleanup\.policy=delete.*cleanup_policy='compact'"):
            log.compact(now_ms=10**13, min_compaction_lag_ms=0, delete_retention_ms=0)
        assert [(r.offset, r.value) for r in every_record(log)] == [(0, b"1"), (1, b"2"), (2, b"3")]
    with EmbeddedChangeLog(tmp_path, cleanup_policy="compact") as log:
        assert indexes(log.path) == {"records_by_key"}
        assert row_counts(log.path) == (3, 0)  # the batches became one row a record
        assert log.compact(now_ms=10**13, min_compaction_lag_ms=0, delete_retention_ms=0) == 1
        assert [(r.offset, r.key, r.value) for r in every_record(log)] == [(1, b"b", b"2"), (2, b"a", b"3")]


def test_a_handle_opened_before_a_conversion_appends_as_the_log_now_is(tmp_path: Path) -> None:
    """The policy is the file's, read in each append's transaction: a sender that opened the
    log as ``delete`` keeps no batch in a log made ``compact`` since (its records could not be
    compacted otherwise)."""
    with EmbeddedChangeLog(tmp_path, cleanup_policy="delete") as stale:
        stale.append([(b"a", b"1")])
        with EmbeddedChangeLog(tmp_path, cleanup_policy="compact"):
            pass
        stale.append([(b"a", b"2"), (b"b", b"3")])
        assert row_counts(stale.path) == (3, 0)
        assert [(r.offset, r.value) for r in every_record(stale)] == [(0, b"1"), (1, b"2"), (2, b"3")]
        assert stale.compact(now_ms=10**13, min_compaction_lag_ms=0, delete_retention_ms=0) == 1


def test_an_unknown_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cleanup_policy must be 'compact' or 'delete', got 'keep'"):
        EmbeddedChangeLog(tmp_path, cleanup_policy="keep")  # type: ignore[arg-type]
