"""An Arrow table on the driver as a DataFrame: a slice per core, whatever its chunks, read in
the tasks."""

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


def rows_per_partition(frame: Any) -> list[int]:
    """How many rows each partition of ``frame`` holds."""
    return list(frame.rdd.glom().map(len).collect())


def test_a_table_in_many_chunks_is_a_slice_per_core(spark: Any) -> None:
    """250,000 rows in 25 chunks are two partitions of half each (two cores), not one per
    chunk; fewer rows than two slices' are one partition; the rows are the table's, in
    order.  A small table is an RDD's partition too, not rows kept in the plan (which Spark
    spreads over every core)."""
    assert spark.sparkContext.defaultParallelism == 2
    large = chunked(250_000, 10_000)
    assert large["n"].num_chunks == 25
    frame = arrow_frame(spark, large)
    assert rows_per_partition(frame) == [125_000, 125_000]
    assert [r["n"] for r in frame.select("n").collect()] == list(range(large.num_rows))
    small = chunked(ROWS_PER_SLICE + ROWS_PER_SLICE // 2, 100)
    frame = arrow_frame(spark, small)
    assert rows_per_partition(frame) == [small.num_rows]
    assert frame.toArrow().equals(small.combine_chunks())
    assert "LocalTableScan" not in frame._jdf.queryExecution().executedPlan().toString()
