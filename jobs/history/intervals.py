"""The validity intervals a batch of events opens and closes, as Arrow columns.

A micro-batch comes from one partition of the log, in offset order, so its intervals need no
shuffle: :func:`jobs.history.decode.fold_positions` (the rules :func:`fold_validity` also
uses) walks the batch's ids once, on the driver, against the intervals still open before
it; this module only gathers the rows it names, column by column (``take``), from the batch
and from those open intervals.  Pure: pyarrow tables in, pyarrow tables out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from jobs.history.decode import BINDING_KIND, SETTING_KIND, fold_positions

BINDING_FIELDS: Final = (
    "resourceType", "name", "patternType", "principal", "host", "operation", "permission",
)  # fmt: skip
_FROM: Final = (
    ("offset", "fromOffset"), ("timeMs", "fromMs"), ("actor", "fromActor"), ("requestId", "fromRequestId"),
)  # fmt: skip
_TO: Final = (
    ("offset", "toOffset"), ("timeMs", "toMs"), ("actor", "toActor"), ("requestId", "toRequestId"),
)  # fmt: skip
OPEN_SCHEMA: Final = pa.schema(
    [
        ("id", pa.string()), ("kind", pa.string()),
        *((name, pa.string()) for name in (*BINDING_FIELDS, "configName", "configValue")),
        ("fromOffset", pa.int64()), ("fromMs", pa.int64()), ("fromActor", pa.string()),
        ("fromRequestId", pa.string()),
    ]
)  # fmt: skip
"""An interval's opening half: the validity table's columns up to ``fromRequestId``."""
VALIDITY_ARROW_SCHEMA: Final = pa.schema(
    [
        *OPEN_SCHEMA,
        ("toOffset", pa.int64()), ("toMs", pa.int64()), ("toActor", pa.string()),
        ("toRequestId", pa.string()), ("toConfigValue", pa.string()),
    ]
)  # fmt: skip
"""The validity table's columns (:data:`jobs.history.tables.VALIDITY_SCHEMA`) in Arrow."""


@dataclass(frozen=True, slots=True)
class OpenIntervals:
    """The intervals open after some offset: their opening rows and, per id, its row."""

    rows: pa.Table = field(default_factory=OPEN_SCHEMA.empty_table)
    positions: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: pa.Table) -> OpenIntervals:
        """From opening rows (:data:`OPEN_SCHEMA`'s columns, one per id)."""
        rows = rows.select(OPEN_SCHEMA.names).cast(OPEN_SCHEMA)
        return cls(rows, {key: row for row, key in enumerate(rows.column("id").to_pylist())})


def identities(events: pa.Table) -> pa.ChunkedArray:
    """Each event's ``id``: ``binding|<the seven fields>`` or ``setting|<name>``
    (:func:`jobs.history.decode.identity`, column-wise)."""
    fields = pc.binary_join_element_wise(*(events.column(name) for name in BINDING_FIELDS), "\x1f")
    is_setting = pc.is_null(events.column("resourceType"))
    return pc.if_else(
        is_setting,
        pc.binary_join_element_wise(SETTING_KIND, events.column("configName"), "|"),
        pc.binary_join_element_wise(BINDING_KIND, fields, "|"),
    )


def openings(events: pa.Table, ids: pa.ChunkedArray) -> pa.Table:
    """Every event as the opening half of an interval (:data:`OPEN_SCHEMA`)."""
    kinds = pc.if_else(pc.is_null(events.column("resourceType")), SETTING_KIND, BINDING_KIND)
    columns = [ids, kinds, *(events.column(n) for n in (*BINDING_FIELDS, "configName", "configValue"))]
    columns += [events.column(source) for source, _ in _FROM]
    return pa.Table.from_arrays(columns, schema=OPEN_SCHEMA)


def changed_intervals(events: pa.Table, still_open: OpenIntervals) -> tuple[pa.Table, OpenIntervals]:
    """The validity rows (:data:`VALIDITY_ARROW_SCHEMA`) that ``events`` (events-table
    columns, in offset order) open or close, each once in its latest form, and the intervals
    open after them.  An interval opened before the batch and untouched by it is not returned.
    """
    ids = identities(events)
    openers = {key: -1 - row for key, row in still_open.positions.items()}
    changes = fold_positions(
        ids.to_pylist(), events.column("type").to_pylist(), events.column("configValue").to_pylist(),
        openers,
    )  # fmt: skip
    opened_here = openings(events, ids)
    here = [(opener, closer) for opener, closer in changes if opener >= 0]
    before = [(-1 - opener, closer) for opener, closer in changes if opener < 0]
    opened = pa.concat_tables(
        [_take(opened_here, [o for o, _ in here]), _take(still_open.rows, [o for o, _ in before])]
    )
    closers = [c for _, c in here] + [c for _, c in before]
    closing = _take(events.select([source for source, _ in _TO] + ["configValue"]), closers)
    is_setting = pc.equal(opened.column("kind"), SETTING_KIND)
    to_value = pc.if_else(is_setting, closing.column("configValue"), pa.scalar(None, pa.string()))
    changed = pa.Table.from_arrays(
        [*opened.columns, *(closing.column(source) for source, _ in _TO), to_value],
        schema=VALIDITY_ARROW_SCHEMA,
    )
    keys = list(openers)
    kept = pa.concat_tables(
        [
            _take(still_open.rows, [-1 - openers[k] for k in keys if openers[k] < 0]),
            _take(opened_here, [openers[k] for k in keys if openers[k] >= 0]),
        ]
    )
    order = [k for k in keys if openers[k] < 0] + [k for k in keys if openers[k] >= 0]
    return changed, OpenIntervals(kept, {key: row for row, key in enumerate(order)})


def _take(table: pa.Table, rows: list[int] | list[int | None]) -> pa.Table:
    """``table``'s ``rows`` in that order; a None row is a row of nulls."""
    return table.take(pa.array(rows, type=pa.int64()))
