"""A streaming job's progress, read from Spark's own batch reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.common import LogSource
from jobs.common.streaming import StreamProgress, progress_of
from jobs.history.job import run_archive
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import JsonEventCodec, event_key
from store.events import AclCreated
from store.log.embedded import EmbeddedChangeLog


def _report(
    batch: int, rows: int, end: str | None, latest: str | None, start: str | None = None
) -> dict[str, Any]:
    """A report shaped as pyspark gives it: offsets as JSON text, "None" when absent."""
    source = {"startOffset": str(start), "endOffset": str(end), "latestOffset": str(latest)}
    return {"batchId": batch, "numInputRows": rows, "sources": [source]}


@pytest.mark.unit
def test_progress_counts_each_batch_once_and_reads_both_offset_shapes() -> None:
    kafka = [
        _report(7, 100, '{"t":{"0":100,"1":50}}', '{"t":{"0":400,"1":200}}'),
        _report(8, 150, '{"t":{"0":200,"1":100}}', '{"t":{"0":400,"1":200}}'),
        _report(8, 150, '{"t":{"0":200,"1":100}}', '{"t":{"0":400,"1":200}}'),  # seen twice
    ]
    assert progress_of(kafka) == StreamProgress(records=250, position=300, end=600)
    assert progress_of(kafka).remaining == 300
    embedded = [_report(0, 10, '{"offset": 10}', '{"offset": 25}'), _report(1, 0, None, None)]
    assert progress_of(embedded) == StreamProgress(records=10, position=10, end=25)
    # Batches read from the log itself: Spark counts no row, their offsets say 10, then 15 (a
    # query's first batch has no start in its report: the log's offset 0).  Kafka's offsets
    # are never taken for a count.
    read_by_the_job = [_report(0, 0, '{"offset": 10}', '{"offset": 25}', None),
                       _report(1, 0, '{"offset": 25}', '{"offset": 25}', '{"offset": 10}')]  # fmt: skip
    assert progress_of(read_by_the_job) == StreamProgress(records=25, position=25, end=25)
    assert progress_of([_report(0, 0, '{"t":{"0":100}}', '{"t":{"0":100}}', None)]).records == 0
    assert progress_of([]) == StreamProgress(records=0, position=None, end=None)
    assert progress_of([]).remaining is None


T0 = 1_700_000_000_000


def _records(count: int) -> list[tuple[bytes, bytes]]:
    codec = JsonEventCodec()
    out = []
    for i in range(count):
        binding = AclBinding.of(ResourceType.TOPIC, f"t{i}", PatternType.LITERAL, "User:a", "*",
                                AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
        event = AclCreated(binding=binding, actor="User:admin", request_id=f"r{i}", time_ms=T0 + i)
        out.append((event_key(event), codec.encode(event)))
    return out


@pytest.mark.spark
def test_the_archive_reports_its_progress_to_the_end(spark: Any, tmp_path: Path) -> None:
    """250 records in batches of 100: the last report says 250 read and none to go."""
    with EmbeddedChangeLog(tmp_path / "log") as log:
        log.append(_records(250))
    seen: list[StreamProgress] = []
    source, history, checkpoint = LogSource.embedded(tmp_path / "log"), tmp_path / "history", tmp_path / "cp"
    run_archive(spark, source, str(history), str(checkpoint), once=True, max_records_per_batch=100,
                on_progress=seen.append)  # fmt: skip
    assert seen[-1] == StreamProgress(records=250, position=250, end=250)
    assert [p.records for p in seen] == sorted(p.records for p in seen)
