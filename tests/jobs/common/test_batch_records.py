"""A micro-batch's records on the driver: from the embedded log itself, the records the batch's
DataFrame holds, batch after batch and across restarts; the query's offset log read as Spark
writes it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from jobs.common import LogSource
from jobs.common.sqlite_source import batch_range
from jobs.common.streaming import (
    OffsetLog,
    OffsetLogError,
    run_micro_batches,
    source_offsets,
)
from store.log import EmbeddedChangeLog

METADATA = '{"batchWatermarkMs":0,"batchTimestampMs":1795944322216,"conf":{}}'


@pytest.mark.unit
def test_an_offset_log_entry_names_each_sources_end() -> None:
    assert source_offsets(f'v1\n{METADATA}\n{{"offset": 2000}}') == ['{"offset": 2000}']
    assert source_offsets(f'v1\n{METADATA}\n{{"offset": 4}}\n-\n') == ['{"offset": 4}', None]
    broken = ("", "v1", f"v1\n{METADATA}", f'{METADATA}\n{{"offset": 4}}', 'v1\nnot json\n{"offset": 4}')
    for entry in broken:
        with pytest.raises(OffsetLogError):
            source_offsets(entry)


def append(log_dir: Path, rng: random.Random, appends: int) -> None:
    """``appends`` appends of 1 to 300 records (keys and values of random sizes, some empty,
    some tombstones), as the audit log's senders append."""
    with EmbeddedChangeLog(log_dir, cleanup_policy="delete") as log:
        for _ in range(appends):
            log.append([
                (rng.randbytes(rng.randrange(0, 40)),
                 None if rng.random() < 0.05 else rng.randbytes(rng.randrange(0, 400)))
                for _ in range(rng.randrange(1, 300))
            ])  # fmt: skip


@pytest.mark.spark
def test_a_batch_read_from_the_log_is_the_batchs_dataframe(spark: Any, tmp_path: Path) -> None:
    """Four runs of one query over a log appended to between them (the first run finds it
    empty): each batch read from the log equals the batch's DataFrame collected, row for row,
    and together they are the whole log once, as the log's own reading gives it."""
    rng = random.Random(20261129)
    log_dir, checkpoint = tmp_path / "log", str(tmp_path / "cp")
    EmbeddedChangeLog(log_dir, cleanup_policy="delete").close()
    source = LogSource.embedded(log_dir)
    read = source.batch_records(spark, checkpoint)
    seen: list[tuple[int, Any]] = []

    def each_batch(batch: Any, batch_id: int) -> None:
        from_log = read(batch, batch_id)
        collected = batch.toArrow()
        assert from_log.schema == collected.schema
        assert from_log.to_pylist() == collected.to_pylist(), batch_id
        seen.append((batch_id, from_log))

    for appends in (0, 3, 40, 7):
        append(log_dir, rng, appends)
        stream = source.stream(spark, 1_000)
        run_micro_batches(stream, each_batch, checkpoint=checkpoint, name="batch_records", once=True)
    with EmbeddedChangeLog(log_dir) as log:
        end = log.watermarks()[1]
        everything = log.read(0, max_records=end + 1)
    assert [b for b, _ in seen] == [0, 1, 2, 3] and seen[0][1].num_rows == 0
    assert sum(t.num_rows for _, t in seen) == end
    offsets = [o for _, t in seen for o in t.column("offset").to_pylist()]
    assert offsets == list(range(end))
    by_offset = {r.offset: (r.key, r.value) for r in everything}
    rows = [row for _, t in seen for row in t.to_pylist()]
    assert all(by_offset[row["offset"]] == (row["key"], row["value"]) for row in rows)
    ends = [sum(t.num_rows for _, t in seen[: i + 1]) for i in range(len(seen))]
    ranges = [batch_range(OffsetLog(spark, checkpoint), b) for b, _ in seen]
    assert ranges == list(zip([0, *ends[:-1]], ends, strict=True))
    with pytest.raises(OffsetLogError, match="no batch 4"):
        batch_range(OffsetLog(spark, checkpoint), 4)
