"""The archive's two Delta tables under one location URI, their schemas and row forms.

* ``<location>/events``: every change, append-only, partitioned by the UTC day of its log
  time (audits ask about days; a partition holds a day's changes whatever their rate);
* ``<location>/validity``: one row per binding per interval it was live and per setting per
  value it held (``toOffset`` null while it holds), partitioned by resource type (settings
  under null), so a question about one resource reads one partition's few rows.  The table
  is append-only: the batch that opens an interval appends it open, and the batch that
  closes it appends it again, complete; the closed row supersedes the open one with the
  same ``id`` and ``fromOffset`` (:func:`current_rows` reads each interval once).  An
  archive written when intervals were updated in place holds no superseded rows, so it
  reads the same.

A location may be any Hadoop-compatible URI (``file:``, ``hdfs:``, ``s3a:``...).  Rows are
plain tuples in schema order: an event's as every job decodes it (:mod:`jobs.common.rows`),
an interval's built and read here only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from jobs.common.events import (
    ACL_CREATED,
    ACL_DELETED,
    BINDING_KIND,
    CONFIG_ALTERED,
    SETTING_KIND,
    HistoryEvent,
)
from jobs.common.rows import BINDING_COLUMNS, binding_at, binding_fields
from jobs.history.intervals import identity
from jobs.history.validity import Validity

EVENTS_DIR: Final = "events"
VALIDITY_DIR: Final = "validity"

EVENTS_PARTITIONING: Final = ("day",)

VALIDITY_SCHEMA: Final = (
    f"id STRING, kind STRING, {BINDING_COLUMNS}, configName STRING, configValue STRING, "
    "fromOffset BIGINT, fromMs BIGINT, fromActor STRING, fromRequestId STRING, "
    "toOffset BIGINT, toMs BIGINT, toActor STRING, toRequestId STRING, toConfigValue STRING"
)
VALIDITY_PARTITIONING: Final = ("resourceType",)

STATS_COLUMNS: Final = {EVENTS_DIR: "offset,timeMs", VALIDITY_DIR: "fromOffset,toOffset"}
"""The columns each table keeps per-file statistics of (``delta.dataSkippingStatsColumns``):
the ones questions filter files by.  Delta's default, the first 32 columns, costs the archive's
writes the minimum, maximum and null count of every string column of every row, which no
question can skip a file by (each file holds many names and principals).
Set when a table is created; an archive created earlier keeps its own setting."""


PLAIN_COLUMNS: Final = {
    EVENTS_DIR: ("name", "requestId"),
    VALIDITY_DIR: ("id", "name", "fromRequestId", "toRequestId"),
}
"""The string columns each table writes without Parquet's dictionary encoding
(``parquet.enable.dictionary#<column>``): nearly every value differs from the others (a
binding's id, a request id, a resource name), so the dictionary only grows until the writer
gives it up, after hashing and comparing every value; written plain they are faster to
append and the files are no larger.  The other columns (types,
operations, hosts, principals, actors) repeat, and keep it.  Set when a table is created, as
table properties, which Delta hands to the Parquet writer."""


def table_properties(table: str) -> dict[str, str]:
    """The Delta table properties of ``table`` (:data:`EVENTS_DIR` or :data:`VALIDITY_DIR`)."""
    return {
        "delta.dataSkippingStatsColumns": STATS_COLUMNS[table],
        **{f"parquet.enable.dictionary#{column}": "false" for column in PLAIN_COLUMNS[table]},
    }


def events_path(location: str) -> str:
    return f"{location.rstrip('/')}/{EVENTS_DIR}"


def validity_path(location: str) -> str:
    return f"{location.rstrip('/')}/{VALIDITY_DIR}"


def validity_row(interval: Validity) -> tuple[Any, ...]:
    opened, closed = interval.opened, interval.closed
    return (
        interval.id,
        BINDING_KIND if opened.binding is not None else SETTING_KIND,
        *binding_fields(opened.binding),
        opened.config_name,
        opened.config_value,
        opened.offset,
        opened.time_ms,
        opened.actor,
        opened.request_id,
        None if closed is None else closed.offset,
        None if closed is None else closed.time_ms,
        None if closed is None else closed.actor,
        None if closed is None else closed.request_id,
        None if closed is None else closed.config_value,
    )


def validity_of_row(row: Sequence[Any]) -> Validity:
    """The inverse of :func:`validity_row`."""
    binding = binding_at(row, 2)
    opened = HistoryEvent(
        offset=row[11],
        time_ms=row[12],
        type=ACL_CREATED if binding is not None else CONFIG_ALTERED,
        binding=binding,
        config_name=row[9],
        config_value=row[10],
        actor=row[13],
        request_id=row[14],
    )
    closed = None
    if row[15] is not None:
        closed = HistoryEvent(
            offset=row[15],
            time_ms=row[16],
            type=ACL_DELETED if binding is not None else CONFIG_ALTERED,
            binding=binding,
            config_name=row[9],
            config_value=None if binding is not None else row[19],
            actor=row[17],
            request_id=row[18],
        )
    return Validity(id=row[0], opened=opened, closed=closed)


CLOSING_COLUMNS: Final = ("toOffset", "toMs", "toActor", "toRequestId", "toConfigValue")
"""The validity columns an interval's open row leaves null and its closed row fills."""


STATE_ONLY_DROPPED: Final = ("id", "fromMs", "fromActor", "fromRequestId", "toMs", "toActor", "toRequestId")
"""What :func:`current_rows` leaves unread with ``state_only``: the interval's id (its binding's
fields or setting's name say it again) and its events' times, actors and request ids."""


def current_rows(
    table: Any, scope: Any | None = None, where: Any | None = None, *, state_only: bool = False
) -> Any:
    """The validity rows that ``scope`` and ``where`` select, each interval once.

    The archive appends an interval's row when it opens and again, complete, when it
    closes: both rows carry the same opening columns, and the open row's closing columns
    (:data:`CLOSING_COLUMNS`) are null.  Grouping the rows by the opening columns and taking
    each closing column's maximum gives the closed row where there is one, the open row
    where there is not, in one scan of the table.  ``where`` applies to that result; Spark
    moves its conditions on opening columns (``fromOffset <= N``) below the grouping, into
    the scan.  ``scope`` must select by what an interval is (its binding or setting), so
    both rows of one interval pass it alike.  For a whole table, :func:`open_rows` is cheaper.

    ``state_only``: for answers made of the live state alone (which bindings and settings,
    over which offsets), the columns :data:`STATE_ONLY_DROPPED` are not read; the rows come
    back with ``id`` worked out again (:func:`jobs.history.intervals.identity`), times 0 and
    no actors or request ids.  The scan then reads about half the bytes (the id and request
    ids are long strings, one per row) and groups narrower rows.
    """
    from pyspark.sql import functions as f

    columns = table.columns
    if state_only:
        table = table.select(*(c for c in columns if c not in STATE_ONLY_DROPPED))
    scoped = table if scope is None else table.filter(scope)
    closing = [c for c in CLOSING_COLUMNS if c in table.columns]
    opening = [c for c in table.columns if c not in CLOSING_COLUMNS]
    grouped = scoped.groupBy(*opening).agg(*(f.max(c).alias(c) for c in closing))
    if state_only:
        filled = {"id": identity(), "fromMs": f.lit(0).cast("bigint"), "toMs": f.when(
            f.col("toOffset").isNotNull(), f.lit(0).cast("bigint"))}  # fmt: skip
        grouped = grouped.select("*", *(
            filled.get(c, f.lit(None).cast("string")).alias(c) for c in STATE_ONLY_DROPPED
        ))  # fmt: skip
    rows = grouped.select(*columns)
    return rows if where is None else rows.filter(where)


def open_rows(table: Any) -> Any:
    """The validity rows of the intervals still open (each once): the open rows that no
    closed row of the same ``id`` and ``fromOffset`` supersedes.

    Over a whole table (the archive reads it once per run) an anti-join of two scans costs
    less than grouping every row as :func:`current_rows` does."""
    from pyspark.sql import functions as f

    closed = f.col("toOffset").isNotNull()
    ended = table.filter(closed).select("id", "fromOffset")
    return table.filter(~closed).join(ended, ["id", "fromOffset"], "left_anti").select(*table.columns)
