"""The validity intervals a micro-batch opens and closes, folded on the driver over Arrow columns.

A micro-batch comes from one partition of the log, in offset order, and the validity
intervals are its sequential fold, against the intervals still open before it.  The driver
folds the batch's columns whole (:func:`jobs.history.decode.fold_codes`: the ids numbered by
one dictionary encoding, each id's events in log order by a stable sort, no Python object per
row) and names each interval the batch opens or closes by two offsets: the event that opened
it and the one that closed it (none while open).  :func:`fold_batch` turns those pairs into
the validity rows with Arrow's vectorised ``take``: the opening half from the batch's events
or from the intervals carried open from earlier batches (:data:`OPEN_COLUMNS`), the closing
half from the batch.  Nothing here touches Spark: the archive reads the batch's columns once
(``toArrow``) and hands the rows back as one DataFrame.

:func:`identity` is the interval's id as a Spark column, for the questions that read
``validity`` without the id (:func:`jobs.history.tables.current_rows`).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from jobs.history.answers import ACL_DELETED, CONFIG_ALTERED
from jobs.history.decode import BINDING_KIND, NO_OPENER, SETTING_KIND, fold_codes, kind_codes

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


def kinds_of(batch: pa.Table) -> npt.NDArray[np.int8]:
    """Each event's kind for :func:`~jobs.history.decode.fold_codes`."""
    kind = batch.column("type")
    return kind_codes(
        pc.equal(kind, ACL_DELETED).to_numpy(zero_copy_only=False),
        pc.equal(kind, CONFIG_ALTERED).to_numpy(zero_copy_only=False),
        pc.is_valid(batch.column("configValue")).to_numpy(zero_copy_only=False),
    )


def fold_batch(carried: pa.Table, batch: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Fold ``batch`` (the events table's columns, in offset order, every offset above the carried
    intervals') into the intervals open before it, ``carried`` (:data:`OPEN_ARROW_SCHEMA`, in
    ``fromOffset`` order).

    Returns the validity rows of the intervals the batch opened or closed, each once in its
    latest form (:data:`VALIDITY_ARROW_SCHEMA`), and the intervals open after it (as
    ``carried``).  The ids are numbered by one dictionary encoding of the carried ids and the
    batch's, and every row is labelled by its offset."""
    offsets = batch.column("offset")
    id_column = ids(batch)
    numbered = pc.dictionary_encode(
        pa.chunked_array([*carried.column("id").chunks, *id_column.chunks], pa.string())
    ).combine_chunks()
    keys = numbered.indices.to_numpy().astype(np.int64)
    open_before = np.full(len(numbered.dictionary), NO_OPENER, np.int64)
    open_before[keys[: carried.num_rows]] = carried.column("fromOffset").to_numpy()
    folded = fold_codes(keys[carried.num_rows :], kinds_of(batch), offsets.to_numpy(), open_before)
    opening = pa.concat_tables([carried, openings(batch, id_column)]).combine_chunks()
    starts = opening.column("fromOffset").to_numpy()
    from_at = _positions(starts, folded.openers, "opening")
    to_at = np.zeros(len(folded.closers), np.int64)
    to_at[folded.closed] = _positions(offsets.to_numpy(), folded.closers[folded.closed], "closing")
    closing_at = pa.array(to_at, mask=~folded.closed)
    opened = opening.take(pa.array(from_at))
    closing = batch.select(["offset", "timeMs", "actor", "requestId", "configValue"]).take(closing_at)
    rows = pa.table(  # a setting's closing event holds its next value; a binding's, none
        [*opened.columns, *closing.columns],
        schema=VALIDITY_ARROW_SCHEMA,
    )  # fmt: skip
    still = np.sort(folded.open_after[folded.open_after != NO_OPENER])
    after = opening.take(pa.array(_positions(starts, still, "open")))
    return rows, after
