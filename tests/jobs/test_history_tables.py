"""The validity table's two readers on real Spark: each interval once, whether the archive
appended it open, closed, or open and then closed.

Hand-worked rows: interval A opened at 1 and closed at 5 (an open row and a closed row), B
opened at 2 and still open (an open row), C opened at 3 and closed at 4 in one batch (a
closed row only), and the setting S set at 0 (an open row)."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.history.reading import live_filter
from jobs.history.tables import VALIDITY_SCHEMA, current_rows, open_rows

pytestmark = [pytest.mark.spark]


def _row(key: str, start: int, end: int | None) -> tuple[Any, ...]:
    setting = key == "S"
    binding = (None,) * 7 if setting else (
        "TOPIC", f"t-{key}", "LITERAL", "User:a", "*", "READ", "ALLOW",
    )  # fmt: skip
    closing = (None,) * 5 if end is None else (end, end * 10, "User:admin", f"r{end}", None)
    return (
        key, "setting" if setting else "binding", *binding,
        "super.users" if setting else None, "User:ops" if setting else None,
        start, start * 10, "User:admin", f"r{start}", *closing,
    )  # fmt: skip


ROWS = [_row("A", 1, None), _row("B", 2, None), _row("A", 1, 5), _row("C", 3, 4), _row("S", 0, None)]


def _intervals(frame: Any) -> list[tuple[str, int, int | None]]:
    return sorted((r["id"], r["fromOffset"], r["toOffset"]) for r in frame.collect())


def test_current_rows_reads_each_interval_once_closed_row_first(spark: Any) -> None:
    table = spark.createDataFrame(ROWS, VALIDITY_SCHEMA)
    assert _intervals(current_rows(table)) == [("A", 1, 5), ("B", 2, None), ("C", 3, 4), ("S", 0, None)]
    closed_a = [r for r in current_rows(table).collect() if r["id"] == "A"]
    assert tuple(closed_a[0]) == ROWS[2]  # the closed row, every column


def test_current_rows_live_at_an_offset_leaves_superseded_open_rows_out(spark: Any) -> None:
    table = spark.createDataFrame(ROWS, VALIDITY_SCHEMA)
    # At 4: A (1..5) and B and S are live; C closed at 4; A's open row must not come back.
    at_4 = current_rows(table, where=live_filter(4))
    assert _intervals(at_4) == [("A", 1, 5), ("B", 2, None), ("S", 0, None)]
    # At 5: A closed; only what is still open.
    assert _intervals(current_rows(table, where=live_filter(5))) == [("B", 2, None), ("S", 0, None)]
    settings_only = table["resourceType"].isNull()
    assert _intervals(current_rows(table, scope=settings_only)) == [("S", 0, None)]


def test_open_rows_are_the_intervals_no_closed_row_supersedes(spark: Any) -> None:
    table = spark.createDataFrame(ROWS, VALIDITY_SCHEMA)
    assert _intervals(open_rows(table)) == [("B", 2, None), ("S", 0, None)]


def test_a_new_archive_keeps_statistics_of_the_columns_questions_filter_by(spark: Any, tmp_path: Any) -> None:
    from delta.tables import DeltaTable

    from jobs.history.job import ensure_tables
    from jobs.history.tables import events_path, validity_path

    location = str(tmp_path / "archive")
    assert ensure_tables(spark, location) is True
    expectations = ((events_path(location), "offset,timeMs"),
                    (validity_path(location), "fromOffset,toOffset"))
    for path, expected in expectations:
        properties = DeltaTable.forPath(spark, path).detail().collect()[0]["properties"]
        assert properties.get("delta.dataSkippingStatsColumns") == expected


def test_the_archive_writes_its_distinct_strings_plain_and_the_repeated_ones_in_a_dictionary(
    spark: Any, tmp_path: Any
) -> None:
    """The Parquet file an archive's append writes, read back: the columns of PLAIN_COLUMNS
    have no dictionary page (the table property reached the writer), the other strings do.
    Every column repeats its values here, so that the writer would keep a dictionary for any
    column it is not told to write plain."""
    import pyarrow.parquet as pq

    from jobs.common.rows import EVENTS_SCHEMA
    from jobs.history.job import ensure_tables
    from jobs.history.tables import EVENTS_DIR, PLAIN_COLUMNS, events_path

    location = str(tmp_path / "archive")
    ensure_tables(spark, location)
    rows = [(i, 1000 + i, "2026-11-26", "ACL_CREATED", "TOPIC", f"t-{i % 10}", "LITERAL", "User:a", "*",
             "READ", "ALLOW", None, None, "User:admin", f"r{i % 10}") for i in range(200)]  # fmt: skip
    spark.createDataFrame(rows, EVENTS_SCHEMA).coalesce(1).write.format("delta").mode("append").save(
        events_path(location)
    )
    [written] = list((tmp_path / "archive" / EVENTS_DIR).rglob("*.parquet"))
    group = pq.ParquetFile(written).metadata.row_group(0)
    chunks = map(group.column, range(group.num_columns))
    encodings = {chunk.path_in_schema: chunk.encodings for chunk in chunks}
    for column in ("name", "requestId", "principal", "operation", "actor"):
        dictionary = any("DICTIONARY" in encoding for encoding in encodings[column])
        assert dictionary is (column not in PLAIN_COLUMNS[EVENTS_DIR]), (column, encodings[column])


def test_current_rows_for_the_state_alone_read_the_same_intervals_and_name_them_alike(spark: Any) -> None:
    """``state_only`` leaves the ids and the events' details unread: the same intervals come
    back, each with the id the fold gives it (decode.identity), worked out again in Spark."""
    from jobs.common.events import identity
    from jobs.history.tables import validity_of_row

    table = spark.createDataFrame(ROWS, VALIDITY_SCHEMA)
    full = {(r["fromOffset"], r["toOffset"]): validity_of_row(r) for r in current_rows(table).collect()}
    lean = {(r["fromOffset"], r["toOffset"]): validity_of_row(r)
            for r in current_rows(table, state_only=True).collect()}  # fmt: skip
    assert sorted(lean) == sorted(full) == [(0, None), (1, 5), (2, None), (3, 4)]
    for key, interval in lean.items():
        assert interval.id == identity(full[key].opened)
        assert interval.binding == full[key].binding
        assert interval.opened.config_value == full[key].opened.config_value
        assert interval.to_offset == full[key].to_offset
        assert interval.opened.actor is None and interval.opened.time_ms == 0
    live = current_rows(table, where=live_filter(4), state_only=True).collect()
    assert sorted((r["fromOffset"], r["toOffset"]) for r in live) == [(0, None), (1, 5), (2, None)]
