"""Answers as text: ``table`` (aligned columns), ``json`` (one document), ``csv``.

Every answer becomes one :class:`Grid` (a header and rows of strings) for ``table`` and ``csv``
(:mod:`cli.present.history`, :mod:`cli.present.audit` build them); ``json`` is the answer's
JSON document, built beside its grid.  A table ends with the line ``(log offset N)``, as the
other ``aclstore`` commands' tables do; CSV carries the offset in an ``offset`` column of every
row, so that a spreadsheet keeps it.  Times print as ISO-8601 UTC with milliseconds.
Pure: strings in, strings out.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from cli.present.timeparse import format_time
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
