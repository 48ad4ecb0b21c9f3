"""``aclstore audit report`` as text: the report (:class:`jobs.audit.report.AuditReport`) as
tables, CSV sections or one JSON document.

The JSON document::

    {"totals": {"ALLOWED": n, "DENIED": n}, "newDenials": [...], "unusedGrants": [...],
     "throughOffset": n, "topDeniedPrincipals": [...], "topDeniedResources": [...]}

each new denial with its ``cause`` (the causing change as the history prints an event, plus
``allowedFromOffset``) and ``causeStatus``.  A table or CSV shows the new denials first, then
the unused grants and the most denied principals and resources (CSV: each section after a
blank line, with its own header).  Pure: values in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from cli.present.history import event_json
from cli.present.render import Grid, cells, grid, render
from cli.present.timeparse import format_time
from jobs.audit.cause import Cause
from jobs.audit.report import AuditReport, NewDenial
from jobs.audit.unused import BINDING_COLUMNS, UnusedGrant

DENIAL_HEADER: Final = (
    "principal", "resourceType", "resourceName", "operation", "time", "rule", "aclOffset",
    "cause", "causeOffset", "causeTime", "causeType", "causeChange", "causeActor",
)  # fmt: skip
UNUSED_HEADER: Final = (*BINDING_COLUMNS, "grantedOffset", "granted", "grantedBy", "lastUsed")
PRINCIPALS_HEADER: Final = ("principal", "denials")
RESOURCES_HEADER: Final = ("resourceType", "resourceName", "denials")


def cause_json(cause: Cause) -> dict[str, Any] | None:
    """The causing event as the history prints events, plus ``allowedFromOffset``; None if
    there is none."""
    if cause.event is None:
        return None
    doc = event_json(cause.event)
    doc["allowedFromOffset"] = None if cause.allowed_by is None else cause.allowed_by.offset
    return doc


def new_denial_json(denial: NewDenial) -> dict[str, Any]:
    cause = denial.cause
    return {
        "principal": denial.principal, "resourceType": denial.resource_type,
        "resourceName": denial.resource_name, "operation": denial.operation,
        "time": denial.time.isoformat(timespec="microseconds"), "rule": denial.rule,
        "aclOffset": denial.acl_offset, "eventId": denial.event_id,
        "cause": None if cause is None else cause_json(cause),
        "causeStatus": None if cause is None else cause.status.name,
    }  # fmt: skip


def unused_json(grants: Sequence[UnusedGrant]) -> list[dict[str, Any]]:
    """The report's ``unusedGrants`` entries (the binding as the history prints one: its seven
    fields in Kafka's order)."""
    return [
        {
            "binding": list(g.binding.fields()),
            "grantedOffset": g.granted_offset,
            "granted": format_time(g.granted_ms),
            "grantedBy": g.granted_by,
            "lastUsed": None if g.last_used is None else g.last_used.isoformat(timespec="microseconds"),
        }
        for g in grants
    ]


def report_json(report: AuditReport) -> dict[str, Any]:
    """The report as ``--format json`` prints it."""
    return {
        "totals": dict(report.totals),
        "newDenials": [new_denial_json(d) for d in report.new_denials],
        "unusedGrants": unused_json(report.unused_grants),
        "throughOffset": report.through_offset,
        "topDeniedPrincipals": [
            {"principal": p.principal, "denials": p.denials} for p in report.top_denied_principals
        ],
        "topDeniedResources": [
            {"resourceType": r.resource_type, "resourceName": r.resource_name, "denials": r.denials}
            for r in report.top_denied_resources
        ],
    }


def denials_grid(denials: Sequence[NewDenial]) -> Grid:
    """The new denials with their causes as a table: ``cause`` is the status (FOUND,
    NEVER_ALLOWED...), then the causing change's offset, time, type, what it changed (the
    binding, or ``name=value``) and actor."""
    rows = []
    for d in denials:
        status = None if d.cause is None else d.cause.status.name
        event = None if d.cause is None else d.cause.event
        if event is None:
            change: tuple[object, ...] = (None,) * 5
        else:
            setting = f"{event.config_name}={event.config_value}"
            what = str(event.binding) if event.binding is not None else setting
            change = (event.offset, format_time(event.time_ms), event.type, what, event.actor)
        rows.append(cells(
            d.principal, d.resource_type, d.resource_name, d.operation,
            d.time.isoformat(timespec="microseconds"), d.rule, d.acl_offset, status, *change,
        ))  # fmt: skip
    return grid(DENIAL_HEADER, rows)


def unused_grid(grants: Sequence[UnusedGrant]) -> Grid:
    return grid(UNUSED_HEADER, [
        cells(*g.binding.fields(), g.granted_offset, format_time(g.granted_ms), g.granted_by,
              None if g.last_used is None else g.last_used.isoformat(timespec="microseconds"))
        for g in grants
    ])  # fmt: skip


def report_text(fmt: str, report: AuditReport) -> str:
    """The whole report in ``fmt``: ``json`` one document; ``table`` and ``csv`` the new
    denials, then the unused grants and the top sections, each ending in the offset."""
    through = report.through_offset
    out: list[str] = []
    if fmt == "table":
        totals = report.totals
        out.append(f"decisions: ALLOWED {totals['ALLOWED']}, DENIED {totals['DENIED']} "
                   "(every denial is recorded; allows are sampled)\nnew denials:\n")  # fmt: skip
    out.append(render(fmt, denials_grid(report.new_denials), through, report_json(report)))
    if fmt == "json":
        return "".join(out)
    out.append("\nunused grants (each grant's first use per hour is recorded):\n" if fmt == "table" else "\n")
    out.append(render(fmt, unused_grid(report.unused_grants), through, None))
    sections = (
        ("top denied principals", grid(PRINCIPALS_HEADER, [
            cells(p.principal, p.denials) for p in report.top_denied_principals])),
        ("top denied resources", grid(RESOURCES_HEADER, [
            cells(r.resource_type, r.resource_name, r.denials) for r in report.top_denied_resources])),
    )  # fmt: skip
    for title, section in sections:
        out.append(f"\n{title}:\n" if fmt == "table" else "\n")
        out.append(render(fmt, section, through, None))
    return "".join(out)
