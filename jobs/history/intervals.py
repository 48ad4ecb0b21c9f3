"""The validity intervals a micro-batch opens and closes, folded on the driver over Arrow columns.

A micro-batch comes from one partition of the log, in offset order, and the fold of the
validity intervals is sequential: the driver walks the batch once with
:func:`jobs.history.decode.fold_positions`, against the intervals still open before it, and
names each interval the batch opens or closes by two offsets: the event that opened it and
the one that closed it (none while open).  :func:`fold_batch` turns those pairs into the
validity rows with Arrow's vectorised ``take``: the opening half from the batch's events or
from the intervals carried open from earlier batches (:data:`OPEN_COLUMNS`), the closing half
from the batch.  No per-row Python object is built besides the fold's own walk, and nothing
here touches Spark: the archive reads the batch's columns once (``toArrow``) and hands the
rows back as one DataFrame.

:func:`identity` is the interval's id as a Spark column, for the questions that read
``validity`` without the id (:func:`jobs.history.tables.current_rows`).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jobs.history.decode import BINDING_KIND, SETTING_KIND, fold_positions

BINDING_FIELDS: Final = (
    "resourceType", "name", "patternType", "principal", "host", "operation", "permission",
)  # fmt: skip
OPEN_COLUMNS: Final = (
    "id", "kind", *BINDING_FIELDS, "configName", "configValue",
    "fromOffset", "fromMs", "fromActor", "fromRequestId",
)  # fmt: skip
"""An interval's opening half: the validity table's columns up to ``fromRequestId``."""
OPEN_ARROW_SCHEMA: Final = pa.schema(
    [
        *((name, pa.string()) for name in OPEN_COLUMNS[:11]),
        ("fromOffset", pa.int64()), ("fromMs", pa.int64()),
        ("fromActor", pa.string()), ("fromRequestId", pa.string()),
    ]
)  # fmt: skip
VALIDITY_ARROW_SCHEMA: Final = pa.schema(
    [
        *OPEN_ARROW_SCHEMA,
        ("toOffset", pa.int64()), ("toMs", pa.int64()), ("toActor", pa.string()),
        ("toRequestId", pa.string()), ("toConfigValue", pa.string()),
    ]
)  # fmt: skip
""":data:`jobs.history.tables.VALIDITY_SCHEMA` in Arrow's types."""
def identity() -> Any:
    """Each event's ``id`` as a Spark column: ``binding|<the seven fields>`` or
    ``setting|<name>`` (:func:`jobs.history.decode.identity`, in Spark)."""
    from pyspark.sql import functions as f

    fields = f.concat_ws("\x1f", *(f.col(name) for name in BINDING_FIELDS))
    return f.when(
        f.col("resourceType").isNull(), f.concat(f.lit(SETTING_KIND + "|"), f.col("configName"))
    ).otherwise(f.concat(f.lit(BINDING_KIND + "|"), fields))


def ids(batch: pa.Table) -> pa.Array:
    """Each event's ``id`` (:func:`jobs.history.decode.identity`, over Arrow columns)."""
    fields = pc.binary_join_element_wise(*(batch.column(name) for name in BINDING_FIELDS), "\x1f")
    setting = pc.binary_join_element_wise(SETTING_KIND, batch.column("configName"), "|")
    binding = pc.binary_join_element_wise(BINDING_KIND, fields, "|")
    return pc.if_else(pc.is_null(batch.column("resourceType")), setting, binding)


def no_intervals() -> pa.Table:
    """The intervals open before a new archive's first event: none."""
    return OPEN_ARROW_SCHEMA.empty_table()


def openings(batch: pa.Table, id_column: pa.Array) -> pa.Table:
    """Every event of ``batch`` (the events table's columns) as the opening half of an
    interval, ``id_column`` its ids."""
    kind = pc.if_else(pc.is_null(batch.column("resourceType")), SETTING_KIND, BINDING_KIND)
    columns = {
        "id": id_column, "kind": kind,
        **{name: batch.column(name) for name in (*BINDING_FIELDS, "configName", "configValue")},
        "fromOffset": batch.column("offset"), "fromMs": batch.column("timeMs"),
        "fromActor": batch.column("actor"), "fromRequestId": batch.column("requestId"),
    }  # fmt: skip
    return pa.table(columns, schema=OPEN_ARROW_SCHEMA)


def _positions(sorted_offsets: Any, wanted: Any, what: str) -> Any:
    """Where each of ``wanted`` is in ``sorted_offsets`` (both numpy int64); every one must be."""
    at = np.searchsorted(sorted_offsets, wanted)
    found = at < len(sorted_offsets)
    if not (found.all() and (sorted_offsets[at[found]] == wanted).all()):
        raise ValueError(f"the fold named {what} offsets that are not in the batch or the carried intervals")
    return at


def fold_batch(carried: pa.Table, openers: dict[str, int], batch: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Fold ``batch`` (the events table's columns, in offset order, every offset above the carried
    intervals') into the intervals open before it: ``carried`` (:data:`OPEN_ARROW_SCHEMA`, in
    ``fromOffset`` order) and ``openers`` (each open id's opening offset, updated here to the
    state after the batch).

    Returns the validity rows of the intervals the batch opened or closed, each once in its
    latest form (:data:`VALIDITY_ARROW_SCHEMA`), and the intervals open after it (as
    ``carried``)."""
    offsets = batch.column("offset")
    id_column = ids(batch)
    pairs = fold_positions(
        id_column.to_pylist(), batch.column("type").to_pylist(),
        batch.column("configValue").to_pylist(), openers, offsets.to_pylist(),
    )  # fmt: skip
    opening = pa.concat_tables([carried, openings(batch, id_column)]).combine_chunks()
    starts = opening.column("fromOffset").to_numpy()
    from_at = _positions(starts, np.fromiter((p for p, _ in pairs), np.int64, len(pairs)), "opening")
    closers = pa.array([c for _, c in pairs], pa.int64())
    closed = pc.is_valid(closers)
    to_at = np.zeros(len(pairs), np.int64)
    mask = closed.to_numpy(zero_copy_only=False)
    to_at[mask] = _positions(offsets.to_numpy(), closers.drop_null().to_numpy(), "closing")
    closing_at = pa.array(to_at, mask=~mask)
    opened = opening.take(pa.array(from_at))
    closing = batch.select(["offset", "timeMs", "actor", "requestId", "configValue"]).take(closing_at)
    rows = pa.table(  # a setting's closing event holds its next value; a binding's, none
        [*opened.columns, *closing.columns],
        schema=VALIDITY_ARROW_SCHEMA,
    )  # fmt: skip
    still = pa.array(sorted(openers.values()), pa.int64())
    after = opening.take(pa.array(_positions(starts, still.to_numpy(), "open")))
    return rows, after
