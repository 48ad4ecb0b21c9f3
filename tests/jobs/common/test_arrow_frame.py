"""An Arrow table on the driver as a DataFrame: a slice per core, whatever its chunks."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from jobs.common.streaming import ROWS_PER_SLICE, arrow_frame

pytestmark = [pytest.mark.spark]


def chunked(rows: int, chunk_rows: int) -> pa.Table:
    """``rows`` numbered rows in chunks of ``chunk_rows``, as a batch's table arrives."""
    parts = [
        pa.table({"n": pa.array(range(start, min(start + chunk_rows, rows)), pa.int64()),
                  "text": pa.array([f"row {i}" for i in range(start, min(start + chunk_rows, rows))])})
        for start in range(0, rows, chunk_rows)
    ]  # fmt: skip
    return pa.concat_tables(parts)


def test_a_table_in_many_chunks_is_a_slice_per_core(spark: Any) -> None:
    """A table of 2.5 slices' rows in 10,000-row chunks is two partitions of rows (two cores),
    not one per chunk; a small one at most one per core (Spark may spread a single slice over
    the cores); the rows are the table's, in order."""
    cores = spark.sparkContext.defaultParallelism
    assert cores == 2
    large = chunked(ROWS_PER_SLICE * 5 // 2, 10_000)
    assert large["n"].num_chunks == 25
    frame = arrow_frame(spark, large)
    assert rows_per_partition(frame) == [large.num_rows // 2] * 2
    assert [r["n"] for r in frame.select("n").collect()] == list(range(large.num_rows))
    small = chunked(30_000, 1_000)
    frame = arrow_frame(spark, small)
    assert len(rows_per_partition(frame)) <= cores and sum(rows_per_partition(frame)) == small.num_rows
    assert frame.toArrow().equals(small.combine_chunks())


def rows_per_partition(frame: Any) -> list[int]:
    """How many rows each partition of ``frame`` holds, the empty ones left out."""
    return [n for n in frame.rdd.glom().map(len).collect() if n]
