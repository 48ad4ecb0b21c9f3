"""The feed's pages on a real archive (the embedded log, archived, and a tail after it): each
page is the unpaged answer's slice after its cursor; and the archive's layout lets a page's
offset window skip files: Delta reads only the files whose offset statistics overlap it (the
scan's own count of files read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import jobs.history.paging
from jobs.common import LogSource
from jobs.history import HistoryArchive
from jobs.history.job import run_archive
from jobs.history.tables import events_path
from store.log.embedded import EmbeddedChangeLog
from tests.jobs.history_support import random_history

pytestmark = [pytest.mark.spark]


def _files_read(query: Any) -> int:
    """The files the executed query's Parquet scan read (its ``numFiles`` metric)."""
    query.collect()
    found: list[int] = []

    def walk(node: Any) -> None:
        metrics = node.metrics()
        if node.nodeName().startswith("Scan parquet") and metrics.contains("numFiles"):
            found.append(int(metrics.apply("numFiles").value()))
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(query._jdf.queryExecution().executedPlan())
    assert len(found) == 1, found
    return found[0]


def test_pages_are_slices_of_the_answer_and_read_only_their_files(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.sql import functions as f

    monkeypatch.setattr(jobs.history.paging, "FIRST_WINDOW", 1)  # windows of 4 pages, growing
    records = random_history(seed=37, count=460)
    archived = 400
    source = LogSource.embedded(tmp_path / "log")
    location = str(tmp_path / "archive")
    with EmbeddedChangeLog(tmp_path / "log") as log:
        # two runs of the archive, 200 records each: at least two files of disjoint offsets
        # (one batch's rows may be written as a single file)
        for start in range(0, archived, 200):
            log.append([(r.key, r.value) for r in records[start : start + 200]])
            run_archive(spark, source, location, str(tmp_path / "cp"), once=True)
        log.append([(r.key, r.value) for r in records[archived:]])
    archive = HistoryArchive.for_path(spark, location, source=source)
    whole = archive.events()
    offsets = [e.offset for e in whole.events]
    assert offsets == list(range(len(records)))  # one event a record, the tail's included
    for after, limit in ((None, 7), (3, 1), (95, 10), (390, 25), (455, 9), (459, 3)):
        page = archive.events(after=after, limit=limit)
        rest = [e for e in whole.events if after is None or e.offset > after]
        assert page.events == tuple(rest[:limit]), (after, limit)
        assert page.next_after == (rest[limit - 1].offset if len(rest) > limit else None)
        assert page.offset == whole.offset == len(records) - 1

    table = spark.read.format("delta").load(events_path(location))
    spans = sorted(
        (r["low"], r["high"])
        for r in table.groupBy(f.input_file_name().alias("file"))
        .agg(f.min("offset").alias("low"), f.max("offset").alias("high"))
        .collect()
    )
    assert len(spans) >= 2 and spans[0][0] == 0 and spans[-1][1] == archived - 1, spans
    low, high = spans[0][0] + 1, spans[0][1] - 1  # a window inside the first file's offsets
    window = table.filter((f.col("offset") > low) & (f.col("offset") <= high)).orderBy("offset").limit(11)
    assert _files_read(window) == 1  # that file alone
    assert _files_read(table.orderBy("offset").limit(11)) == len(spans)  # no window: every file
