"""An access diff (:class:`store.access_diff.AccessDiff`) as the commands print it.

One rendering for every command that shows changed access: ``downgrade-check``, ``acls
--dry-run`` and ``history diff --access``.  A row is one symbolic set of requests: the
operation on a resource type's name set, for a principal (or any principal but those named)
from a host (or any host but those named), with a concrete witness request.

* :func:`delta_json`: the JSON document of a row (``--format json``);
* :func:`diff_lines` / :func:`print_diff_table`: widened access first, then narrowed, one
  line per row (the tables);
* :data:`DELTA_COLUMNS` / :func:`delta_cells`: one CSV row per row (lists joined by ``;``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from store.access_diff import ANY, AccessDelta, AccessDiff


def delta_json(row: AccessDelta) -> dict[str, Any]:
    w = row.witness
    out: dict[str, Any] = {
        "resourceType": row.resource_type.name,
        "names": {
            "patternType": row.names.pattern_type.name,
            "name": row.names.name,
            "exceptNames": list(row.names.except_names),
            "exceptPrefixes": list(row.names.except_prefixes),
        },
        "operation": row.operation.name,
        "principal": row.principal,
        "principalType": row.principal_type,
        "principalExcept": list(row.principal_except),
        "host": row.host,
        "hostExcept": list(row.host_except),
        "witness": {
            "principal": w.principal,
            "host": w.host,
            "operation": w.operation.name,
            "resourceType": w.resource_type.name,
            "resourceName": w.resource_name,
        },
    }
    return out


def delta_text(row: AccessDelta) -> str:
    if row.principal == ANY:
        who = f"any {row.principal_type} principal" if row.principal_type else "any principal"
        if row.principal_except:
            who += f" but {', '.join(row.principal_except)}"
    else:
        who = row.principal
    where = "any host" if row.host == ANY else row.host
    if row.host == ANY and row.host_except:
        where += f" but {', '.join(row.host_except)}"
    w = row.witness
    return (
        f"{row.operation.name} on {row.resource_type.name} {row.names} for {who} from {where}"
        f"  (e.g. {w.principal} from {w.host}: {w.operation.name} {w.resource_type.name} "
        f"{w.resource_name!r})"
    )


def diff_lines(diff: AccessDiff, before: str, after: str) -> Iterator[str]:
    """Widened access first, then narrowed: a title with the count, then one line per set."""
    for title, rows in (
        (f"WIDENED ({before} DENIED, {after} ALLOWED)", diff.widened),
        (f"NARROWED ({before} ALLOWED, {after} DENIED)", diff.narrowed),
    ):
        yield f"{title}: {len(rows)}"
        for row in rows:
            yield f"  {delta_text(row)}"


def print_diff_table(diff: AccessDiff, before: str, after: str) -> None:
    """:func:`diff_lines` on stdout."""
    for line in diff_lines(diff, before, after):
        print(line)


DELTA_COLUMNS: Final = (
    "change", "resourceType", "patternType", "name", "exceptNames", "exceptPrefixes",
    "operation", "principal", "principalType", "principalExcept", "host", "hostExcept",
    "witnessPrincipal", "witnessHost", "witnessResourceName",
)  # fmt: skip


def delta_cells(row: AccessDelta) -> tuple[str, ...]:
    """One CSV row of :data:`DELTA_COLUMNS` (the witness's operation and type are the row's)."""
    w = row.witness
    return (
        row.change.value, row.resource_type.name, row.names.pattern_type.name, row.names.name,
        ";".join(row.names.except_names), ";".join(row.names.except_prefixes),
        row.operation.name, row.principal, row.principal_type or "",
        ";".join(row.principal_except), row.host, ";".join(row.host_except),
        w.principal, w.host, w.resource_name,
    )  # fmt: skip
