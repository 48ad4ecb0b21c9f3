"""History answers as text: ``table`` (aligned columns), ``json`` (issue 10's shapes), ``csv``.

Every answer becomes one :class:`Grid` (a header and rows of strings) for ``table`` and ``csv``;
``json`` is the answer's own ``to_json()``.  A table ends with the line ``(log offset N)``, as
the other ``aclstore`` commands' tables do; CSV carries the offset in an ``offset`` column of
every row, so that a spreadsheet keeps it.  Times print as ISO-8601 UTC with milliseconds.
Pure: strings in, strings out.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobs.history.answers import (
    DiffAnswer,
    HistoryEvent,
    Interval,
    RestorePlan,
    Snapshot,
    WhoAnswer,
)
from jobs.history.timeparse import format_time
from store.acl import AclBinding

FORMATS: Final = ("table", "json", "csv")
BINDING_COLUMNS: Final = (
    "resourceType", "resourceName", "patternType", "principal", "host", "operation",
    "permissionType",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Grid:
    """A header and rows of text cells, each row as long as the header."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f"row {row!r} has {len(row)} cells for {len(self.header)} columns")


def table_text(grid: Grid, offset: int | None) -> str:
    """Left-aligned columns two spaces apart, the header first; then ``(log offset N)``."""
    widths = [len(h) for h in grid.header]
    for row in grid.rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in (grid.header, *grid.rows)
    ]
    if not grid.rows:
        lines.append("(none)")
    if offset is not None:
        lines.append(f"(log offset {offset})")
    return "\n".join(lines) + "\n"


def csv_text(grid: Grid, offset: int | None) -> str:
    """RFC 4180 CSV (``\\r\\n`` line ends), the header first, an ``offset`` column last."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    shown = "" if offset is None else str(offset)
    writer.writerow((*grid.header, "offset"))
    for row in grid.rows:
        writer.writerow((*row, shown))
    return out.getvalue()


def json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def time_cell(ms: int | None) -> str:
    return "" if ms is None else format_time(ms)


def binding_cells(binding: AclBinding | None) -> tuple[str, ...]:
    """The seven binding columns (Kafka's names), blanks for no binding."""
    if binding is None:
        return ("",) * len(BINDING_COLUMNS)
    return (
        binding.resource_type.name, binding.name, binding.pattern_type.name, binding.principal,
        binding.host, binding.operation.name, binding.permission_type.name,
    )  # fmt: skip


def render(fmt: str, grid: Grid, offset: int | None, as_json: Any) -> str:
    """The text of one answer in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "table":
        return table_text(grid, offset)
    if fmt == "csv":
        return csv_text(grid, offset)
    if fmt == "json":
        return json_text(as_json)
    raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")


def cells(*values: object) -> tuple[str, ...]:
    """Text cells: ``None`` as blank, everything else as ``str``."""
    return tuple("" if v is None else str(v) for v in values)


def grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> Grid:
    return Grid(tuple(header), tuple(tuple(r) for r in rows))


# --- each answer as a grid ------------------------------------------------------------------
EVENT_HEADER: Final = ("offset", "time", "type", *BINDING_COLUMNS, "config", "value", "actor")


def events_grid(events: Sequence[HistoryEvent]) -> Grid:
    return grid(
        EVENT_HEADER,
        [
            (
                str(e.offset),
                time_cell(e.time_ms),
                e.type,
                *binding_cells(e.binding),
                *cells(e.config_name, e.config_value, e.actor),
            )
            for e in events
        ],
    )


def event_summary(event: HistoryEvent | None) -> str:
    """One cell for an event: ``<offset> <type> <binding or name=value>``."""
    if event is None:
        return ""
    what = str(event.binding) if event.binding is not None else f"{event.config_name}={event.config_value}"
    return f"{event.offset} {event.type} {what}"


SNAPSHOT_HEADER: Final = ("kind", *BINDING_COLUMNS, "name", "value")


def snapshot_grid(snapshot: Snapshot) -> Grid:
    blank = ("",) * len(BINDING_COLUMNS)
    return grid(
        SNAPSHOT_HEADER,
        [("binding", *binding_cells(b), "", "") for b in sorted(snapshot.bindings)]
        + [("setting", *blank, k, v) for k, v in sorted(snapshot.settings.items())],
    )


WHO_HEADER: Final = ("decision", "principal", "deciding", "binding")


def who_grid(who: WhoAnswer) -> Grid:
    """Super users first, then the principals allowed, then those denied despite an allow."""
    rows: list[tuple[str, ...]] = [("ALLOWED", u, "super.users", "") for u in who.super_users]
    rows += [("ALLOWED", *cells(e.principal, e.deciding, e.binding)) for e in who.allowed]
    rows += [("DENIED", *cells(e.principal, e.deciding, e.binding)) for e in who.denied]
    return grid(WHO_HEADER, rows)


WHEN_HEADER: Final = ("fromOffset", "toOffset", "from", "to", "openedBy", "closedBy")


def when_grid(intervals: Sequence[Interval], *, series: str | None = None) -> Grid:
    """One row per interval; ``toOffset`` and ``to`` blank while it is still open."""
    header = WHEN_HEADER if series is None else ("series", *WHEN_HEADER)
    prefix = () if series is None else (series,)
    return grid(
        header,
        [
            (
                *prefix,
                str(i.from_offset),
                *cells(i.to_offset),
                time_cell(i.from_ms),
                time_cell(i.to_ms),
                event_summary(i.opened_by),
                event_summary(i.closed_by),
            )
            for i in intervals
        ],
    )


DIFF_HEADER: Final = ("change", *BINDING_COLUMNS, "name", "old", "new")


def diff_grid(diff: DiffAnswer) -> Grid:
    blank = ("",) * len(BINDING_COLUMNS)
    return grid(
        DIFF_HEADER,
        [("added", *binding_cells(b), "", "", "") for b in sorted(diff.added)]
        + [("removed", *binding_cells(b), "", "", "") for b in sorted(diff.removed)]
        + [("setting", *blank, *cells(n, o, v)) for n, o, v in diff.settings_changed],
    )


RESTORE_HEADER: Final = ("action", *BINDING_COLUMNS)


def restore_grid(plan: RestorePlan) -> Grid:
    """One row per delete and create, then one per setting set back (``set``: its name in
    the resourceName column, its value, or ``(default)``, in the principal column)."""
    blank = ("",) * (len(BINDING_COLUMNS) - 4)
    return grid(
        RESTORE_HEADER,
        [("delete", *binding_cells(b)) for b in sorted(plan.deletes)]
        + [("create", *binding_cells(b)) for b in sorted(plan.creates)]
        + [("set", "", name, "", "(default)" if v is None else v, *blank) for name, v in plan.settings],
    )
