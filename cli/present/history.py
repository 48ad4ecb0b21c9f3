"""The history's answers (:mod:`jobs.history.answers`) as the commands show them: a
:class:`~cli.present.render.Grid` each for ``table`` and ``csv``, and each one's JSON document
(issue 10's shapes) for ``json``.

Times are epoch milliseconds in the answers and ISO-8601 UTC (plus the milliseconds) here; a
binding in JSON is the list of its seven Kafka fields, as in the conformance vectors.  Pure:
values in, grids and documents out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from cli.access_output import DELTA_COLUMNS, delta_cells, delta_json, diff_lines
from cli.present.render import (
    BINDING_COLUMNS,
    Grid,
    binding_cells,
    cells,
    csv_text,
    grid,
    json_text,
    time_cell,
)
from cli.present.timeparse import format_time
from jobs.history import (
    AccessChange,
    DiffAnswer,
    EventsAnswer,
    HistoryEvent,
    Interval,
    RestorePlan,
    Snapshot,
    WhenAnswer,
    WhoAnswer,
    WhoEntry,
)
from store.acl import AclBinding

# --- the JSON documents ------------------------------------------------------------------------


def time_json(ms: int | None) -> str | None:
    return None if ms is None else format_time(ms)


def binding_json(binding: AclBinding) -> list[str]:
    """``[resourceType, name, patternType, principal, host, operation, permission]``."""
    return list(binding.fields())


def event_json(event: HistoryEvent) -> dict[str, Any]:
    """One change: ``offset``, ``time``, ``type``, ``binding`` or ``config``, ``actor``,
    ``requestId``."""
    doc: dict[str, Any] = {"offset": event.offset, "time": time_json(event.time_ms), "type": event.type}
    if event.binding is not None:
        doc["binding"] = binding_json(event.binding)
    else:
        doc["config"] = {"name": event.config_name, "value": event.config_value}
    doc["actor"] = event.actor
    doc["requestId"] = event.request_id
    return doc


def events_json(answer: EventsAnswer) -> list[dict[str, Any]]:
    """Issue 10's plain list of events (the offset it reflects is not part of it)."""
    return [event_json(e) for e in answer.events]


def events_page_json(answer: EventsAnswer) -> dict[str, Any]:
    """A page of events (``--limit``/``--after``): ``events``, ``next`` (the next page's
    ``--after``, null on the last page) and ``offset`` (the log offset the answer reflects)."""
    return {"events": events_json(answer), "next": answer.next_after, "offset": answer.offset}


def snapshot_json(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "offset": snapshot.offset,
        "time": time_json(snapshot.time_ms),
        "bindings": [binding_json(b) for b in sorted(snapshot.bindings)],
        "settings": dict(sorted(snapshot.settings.items())),
    }


def who_entry_json(entry: WhoEntry) -> dict[str, Any]:
    return {
        "principal": entry.principal,
        "deciding": entry.deciding,
        "binding": None if entry.binding is None else binding_json(entry.binding),
    }


def who_json(who: WhoAnswer) -> dict[str, Any]:
    return {
        "offset": who.offset,
        "time": time_json(who.time_ms),
        "everyone": who.everyone,
        "allowed": [who_entry_json(e) for e in who.allowed],
        "denied": [who_entry_json(e) for e in who.denied],
        "superUsers": list(who.super_users),
    }


def interval_json(interval: Interval) -> dict[str, Any]:
    return {
        "fromOffset": interval.from_offset,
        "toOffset": interval.to_offset,
        "from": time_json(interval.from_ms),
        "to": time_json(interval.to_ms),
        "openedBy": None if interval.opened_by is None else event_json(interval.opened_by),
        "closedBy": None if interval.closed_by is None else event_json(interval.closed_by),
    }


def when_json(answer: WhenAnswer) -> dict[str, Any]:
    return {"intervals": [interval_json(i) for i in answer.intervals], "offset": answer.offset}


def diff_json(diff: DiffAnswer) -> dict[str, Any]:
    return {
        "fromOffset": diff.from_offset,
        "toOffset": diff.to_offset,
        "added": [binding_json(b) for b in sorted(diff.added)],
        "removed": [binding_json(b) for b in sorted(diff.removed)],
        "settings": [{"name": n, "old": o, "new": v} for n, o, v in diff.settings_changed],
    }


def restore_json(plan: RestorePlan) -> dict[str, Any]:
    return {
        "atOffset": plan.at_offset,
        "offset": plan.offset,
        "deletes": [binding_json(b) for b in sorted(plan.deletes)],
        "creates": [binding_json(b) for b in sorted(plan.creates)],
        "settings": dict(plan.settings),
    }


def access_change_text(fmt: str, change: AccessChange) -> str:
    """``history diff --access`` in ``fmt``: widened access first, then narrowed, rendered as
    ``downgrade-check`` renders them (:mod:`cli.access_output`).  Its JSON is the diff's
    with ``widened`` and ``narrowed`` added."""
    diff, access = change.diff, change.access
    if fmt == "json":
        return json_text({
            **diff_json(diff),
            "widened": [delta_json(r) for r in access.widened],
            "narrowed": [delta_json(r) for r in access.narrowed],
        })  # fmt: skip
    if fmt == "csv":
        rows = [delta_cells(r) for r in (*access.widened, *access.narrowed)]
        return csv_text(grid(DELTA_COLUMNS, rows), diff.to_offset)
    before, after = f"at offset {diff.from_offset}", f"at offset {diff.to_offset}"
    lines = [
        f"Access changed from offset {diff.from_offset} to offset {diff.to_offset}: "
        f"{len(diff.added)} binding(s) added, {len(diff.removed)} removed, "
        f"{len(diff.settings_changed)} setting(s) changed",
        *diff_lines(access, before, after),
        f"(log offset {diff.to_offset})",
    ]
    return "\n".join(lines) + "\n"


# --- each answer as a grid ---------------------------------------------------------------------
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
