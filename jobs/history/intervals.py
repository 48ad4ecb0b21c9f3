"""The validity intervals a micro-batch opens and closes, folded on the driver over Arrow columns.

A micro-batch comes from one partition of the log, in offset order, and the validity
intervals are its sequential fold, against the intervals still open before it.  The driver
folds the batch's columns whole (:func:`jobs.history.validity.fold_codes`: the ids numbered by
one dictionary encoding, each id's events in log order by a stable sort, no Python object per
row) and names each interval the batch opens or closes by two rows: the one that opened it
(of the carried intervals or the batch) and the batch's event that closed it (none while
open).  :func:`fold_batch` turns those pairs into
the validity rows with Arrow's vectorised ``take``: the opening half from the batch's events
or from the intervals carried open from earlier batches (:data:`OPEN_COLUMNS`), the closing
half from the batch.  Nothing here touches Spark: the archive reads the batch's columns once
(``toArrow``) and hands the rows back as one DataFrame.

:class:`OpenIntervals` is the state carried between batches: a state the log is folded into
(:class:`store.replay.AclReplay`), fed whole batches by the archive and event by event through
the replay calls.  :func:`identity` is the interval's id as a Spark column, for the questions
that read ``validity`` without the id (:func:`jobs.history.tables.current_rows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from jobs.common.events import (
    ACL_CREATED,
    ACL_DELETED,
    BINDING_KIND,
    CONFIG_ALTERED,
    SETTING_KIND,
    HistoryEvent,
)
from jobs.common.rows import BINDING_FIELDS
from jobs.history.validity import NO_OPENER, fold_codes, kind_codes
from store.acl import AclBinding

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
    ``setting|<name>`` (:func:`jobs.common.events.identity`, in Spark)."""
    from pyspark.sql import functions as f

    fields = f.concat_ws("\x1f", *(f.col(name) for name in BINDING_FIELDS))
    return f.when(
        f.col("resourceType").isNull(), f.concat(f.lit(SETTING_KIND + "|"), f.col("configName"))
    ).otherwise(f.concat(f.lit(BINDING_KIND + "|"), fields))


def ids(batch: pa.Table) -> pa.Array:
    """Each event's ``id`` (:func:`jobs.common.events.identity`, over Arrow columns)."""
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


def kinds_of(batch: pa.Table) -> npt.NDArray[np.int8]:
    """Each event's kind for :func:`~jobs.history.validity.fold_codes`."""
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
    batch's, and every opening half is labelled by its row in the carried intervals followed
    by the batch (so intervals opened at one offset, as by a snapshot, stay apart)."""
    carried_rows = carried.num_rows
    id_column = ids(batch)
    numbered = pc.dictionary_encode(
        pa.chunked_array([*carried.column("id").chunks, *id_column.chunks], pa.string())
    ).combine_chunks()
    keys = numbered.indices.to_numpy().astype(np.int64)
    open_before = np.full(len(numbered.dictionary), NO_OPENER, np.int64)
    open_before[keys[:carried_rows]] = np.arange(carried_rows, dtype=np.int64)
    labels = np.arange(carried_rows, carried_rows + batch.num_rows, dtype=np.int64)
    folded = fold_codes(keys[carried_rows:], kinds_of(batch), labels, open_before)
    opening = pa.concat_tables([carried, openings(batch, id_column)]).combine_chunks()
    to_at = np.zeros(len(folded.closers), np.int64)
    to_at[folded.closed] = folded.closers[folded.closed] - carried_rows
    closing_at = pa.array(to_at, mask=~folded.closed)
    opened = opening.take(pa.array(folded.openers))
    closing = batch.select(["offset", "timeMs", "actor", "requestId", "configValue"]).take(closing_at)
    rows = pa.table(  # a setting's closing event holds its next value; a binding's, none
        [*opened.columns, *closing.columns],
        schema=VALIDITY_ARROW_SCHEMA,
    )  # fmt: skip
    # rows in label order are in fromOffset order: the carried ones, then the batch's
    still = np.sort(folded.open_after[folded.open_after != NO_OPENER])
    after = opening.take(pa.array(still))
    return rows, after


def events_table(events: Sequence[HistoryEvent]) -> pa.Table:
    """``events`` as the columns of the events table that :func:`fold_batch` reads."""
    fields = [(None,) * 7 if e.binding is None else e.binding.fields() for e in events]
    columns: dict[str, pa.Array] = {
        "offset": pa.array([e.offset for e in events], pa.int64()),
        "timeMs": pa.array([e.time_ms for e in events], pa.int64()),
        "type": pa.array([e.type for e in events], pa.string()),
        **{name: pa.array([f[i] for f in fields], pa.string()) for i, name in enumerate(BINDING_FIELDS)},
        "configName": pa.array([e.config_name for e in events], pa.string()),
        "configValue": pa.array([e.config_value for e in events], pa.string()),
        "actor": pa.array([e.actor for e in events], pa.string()),
        "requestId": pa.array([e.request_id for e in events], pa.string()),
    }
    return pa.table(columns)


class OpenIntervals:
    """The intervals open after the events folded so far: their opening halves (Arrow,
    :data:`OPEN_ARROW_SCHEMA`, in ``fromOffset`` order), about one row per live binding and
    setting.

    A state the log is folded into (:class:`store.replay.AclReplay`): the archive folds whole
    batches of the events table's columns (:meth:`fold`, no Python object per event); the
    replay calls collect events one by one (each call's ``at`` gives the position: offset, log
    time, actor, request id), which :meth:`fold_pending` folds as one batch.
    """

    def __init__(self, rows: pa.Table | None = None) -> None:
        self.rows = no_intervals() if rows is None else rows
        self._pending: list[HistoryEvent] = []

    def fold(self, batch: pa.Table) -> pa.Table:
        """The validity rows (Arrow) of the intervals that ``batch`` (the events table's
        columns, in offset order, after every event folded so far) opens or closes; the
        state moves to the one after it."""
        if self._pending:
            raise RuntimeError("fold the events collected by the replay calls first (fold_pending)")
        rows, self.rows = fold_batch(self.rows, batch)
        return rows

    def fold_pending(self) -> pa.Table:
        """:meth:`fold` of the events the replay calls collected since the last fold."""
        pending, self._pending = self._pending, []
        rows, self.rows = fold_batch(self.rows, events_table(pending))
        return rows

    # -- the replay interface (store.replay.AclReplay) ------------------------------------------

    def load_snapshot(self, bindings: Iterable[AclBinding], settings: Mapping[str, str], offset: int) -> None:
        """Every binding and setting open from ``offset`` (opened by events known by that
        offset and what they opened alone: time 0, no actor)."""
        opened = [HistoryEvent(offset=offset, time_ms=0, type=ACL_CREATED, binding=b) for b in bindings]
        for name, value in settings.items():
            setting = HistoryEvent(offset=offset, time_ms=0, type=CONFIG_ALTERED, config_name=name)
            opened.append(replace(setting, config_value=value))
        table = events_table(opened)
        self.rows, self._pending = openings(table, ids(table)), []

    def _collect(self, at: HistoryEvent, event: HistoryEvent) -> None:
        self._pending.append(at if at == event else event)

    def add_acl(self, binding: AclBinding, at: HistoryEvent) -> None:
        self._collect(at, _at(at, type=ACL_CREATED, binding=binding))

    def remove_acl(self, binding: AclBinding, at: HistoryEvent) -> None:
        self._collect(at, _at(at, type=ACL_DELETED, binding=binding))

    def alter_config(self, name: str, value: str | None, at: HistoryEvent) -> None:
        self._collect(at, _at(at, type=CONFIG_ALTERED, config_name=name, config_value=value))

    def pass_over(self, at: HistoryEvent) -> None:
        """Nothing changes (the archive holds no passed-over record)."""


def _at(
    at: HistoryEvent,
    *,
    type: str,
    binding: AclBinding | None = None,
    config_name: str | None = None,
    config_value: str | None = None,
) -> HistoryEvent:
    """The event of one replay call: what the call says changed, at ``at``'s position."""
    return HistoryEvent(
        offset=at.offset, time_ms=at.time_ms, type=type, binding=binding, config_name=config_name,
        config_value=config_value, actor=at.actor, request_id=at.request_id,
    )  # fmt: skip
