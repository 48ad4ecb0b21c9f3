"""A streaming job's writes: each micro-batch at most once in each Delta table, across runs and
within one, and after a run's first write without Delta's look at the table's state.

What a table holds is read back through Delta, and what each commit carries from the commit
files themselves (``_delta_log/*.json``), independently of the writer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.common.streaming import BatchWrites, batch_mark, last_marked_batch

APP = "aclstore-test-0123456789abcdef"


@pytest.mark.unit
def test_the_newest_mark_of_the_job_names_the_last_batch() -> None:
    """Marks are read newest first; another job's marks, unmarked commits and text that only
    looks like a mark are passed over."""
    assert batch_mark(APP, 7) == f"{APP} batch 7"
    marks = [None, "aclstore-other batch 90", f"{APP} batch 12x", f"{APP} batch 12", f"{APP} batch 11"]
    assert last_marked_batch(APP, marks) == 12
    assert last_marked_batch(APP, marks[:3]) is None
    assert last_marked_batch(APP, []) is None
    assert last_marked_batch(APP, [f"note: {APP} batch 3"]) is None


def frame(spark: Any, batch_id: int, rows: int = 3) -> Any:
    return spark.createDataFrame([(batch_id, i) for i in range(rows)], "batch INT, n INT")


def batches_held(spark: Any, path: str) -> dict[int, int]:
    """Rows per batch in the table at ``path``."""
    counts = spark.read.format("delta").load(path).groupBy("batch").count().collect()
    return {int(row["batch"]): int(row["count"]) for row in counts}


def commits(path: str) -> list[dict[str, Any]]:
    """Each commit's actions by kind (``commitInfo``, ``txn``, ``add``...), oldest first,
    read from the commit files."""
    out = []
    for name in sorted((Path(path) / "_delta_log").glob("*.json")):
        kinds: dict[str, Any] = {}
        for line in name.read_text().splitlines():
            action = json.loads(line)
            for kind, body in action.items():
                kinds.setdefault(kind, []).append(body)
        out.append(kinds)
    return out


def user_metadata(commit: dict[str, Any]) -> Any:
    return commit["commitInfo"][0].get("userMetadata")


@pytest.mark.spark
def test_a_replayed_batch_is_skipped_across_runs_and_within_one(spark: Any, tmp_path: Path) -> None:
    """A run writes batches 0 to 2 and is asked batch 1 again; the next run starts with batch 2
    again (a crash after its commit, before the query's), then goes on.  Each batch is held
    once.  Only each run's first commit carries Delta's pair (its state is read for that one
    alone), not the skipped batch; every commit is marked."""
    path = str(tmp_path / "table")
    first_run = BatchWrites(spark, APP)
    for batch_id in (0, 1, 2, 1):
        first_run.write(frame(spark, batch_id), path, batch_id)
    second_run = BatchWrites(spark, APP)
    for batch_id in (2, 3, 4):
        second_run.write(frame(spark, batch_id), path, batch_id)

    assert batches_held(spark, path) == {0: 3, 1: 3, 2: 3, 3: 3, 4: 3}
    written = commits(path)
    assert [user_metadata(c) for c in written] == [batch_mark(APP, b) for b in (0, 1, 2, 3, 4)]
    assert [c.get("txn") for c in written] == [
        [{"appId": APP, "version": 0, "lastUpdated": written[0]["txn"][0]["lastUpdated"]}], None, None,
        [{"appId": APP, "version": 3, "lastUpdated": written[3]["txn"][0]["lastUpdated"]}], None,
    ]  # fmt: skip


@pytest.mark.spark
def test_a_table_written_with_deltas_pair_alone_is_still_written_once(spark: Any, tmp_path: Path) -> None:
    """A table the job before this one wrote (Delta's pair, no marks): the replayed batch is
    skipped by Delta's pair, and the batches after it are written once."""
    path = str(tmp_path / "table")
    for batch_id in (0, 1):
        (frame(spark, batch_id).write.format("delta").mode("append").option("txnAppId", APP)
         .option("txnVersion", batch_id).save(path))  # fmt: skip
    writes = BatchWrites(spark, APP)
    for batch_id in (1, 2, 2, 3):
        writes.write(frame(spark, batch_id), path, batch_id)
    assert batches_held(spark, path) == {0: 3, 1: 3, 2: 3, 3: 3}


@pytest.mark.spark
def test_the_mark_is_found_behind_other_writers_commits(spark: Any, tmp_path: Path) -> None:
    """Commits of another writer (unmarked) and of another job after the job's last: the
    mark is still found, pages of history back (two commits a page here), so the replay is
    skipped; an overwrite is marked and skipped the same way."""
    path = str(tmp_path / "table")
    BatchWrites(spark, APP).write(frame(spark, 5), path, 5)
    for n in range(3):
        frame(spark, 100 + n, rows=1).write.format("delta").mode("append").save(path)
    BatchWrites(spark, "aclstore-other").write(frame(spark, 200, rows=1), path, 9)
    writes = BatchWrites(spark, APP)
    writes.HISTORY_PAGES = (2, 4)  # type: ignore[misc]
    assert writes.last_written(path) == 5
    writes.write(frame(spark, 5), path, 5)
    assert batches_held(spark, path) == {5: 3, 100: 1, 101: 1, 102: 1, 200: 1}

    writes.write(frame(spark, 6), path, 6, mode="overwrite")
    BatchWrites(spark, APP).write(frame(spark, 6, rows=5), path, 6, mode="overwrite")
    assert batches_held(spark, path) == {6: 3}
    assert BatchWrites(spark, "aclstore-new").last_written(path) is None
