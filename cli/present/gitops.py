"""Plans and drift as the commands print them: one stable JSON document each (``--format
json``, the document a CI reads; a saved plan is the same document) and the tables.

Plan document (``"kind": "aclstore.plan"``, ``"formatVersion": 1``): ``offset`` (the live state
reconciled, which ``apply`` guards with), ``accessJudgedAt``, ``store``, ``files``, ``scope``,
``changes``, ``add`` and ``remove`` (bindings), ``widened`` and ``narrowed`` (access sets with a
witness each, :func:`cli.access_output.delta_json`), ``counts``.  Pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from cli import acl_command as ac
from cli.access_output import delta_json, diff_lines
from cli.gitops import Plan
from cli.present.timeparse import format_time
from replicator.contract.bindings import binding_json
from replicator.contract.scope import scope_json
from store.access_diff import AccessDiff
from store.desired.replay import Flip

PLAN_KIND: Final = "aclstore.plan"
PLAN_FORMAT: Final = 1


def plan_document(plan: Plan, store: str) -> dict[str, Any]:
    r = plan.reconciliation
    return {
        "kind": PLAN_KIND,
        "formatVersion": PLAN_FORMAT,
        "store": store,
        "offset": plan.offset,
        "accessJudgedAt": plan.judged_at,
        "files": [f.source for f in plan.desired.files],
        "scope": scope_json(plan.desired.scope),
        "changes": r.changes,
        "add": [binding_json(b) for b in r.to_add],
        "remove": [binding_json(b) for b in r.to_remove],
        "widened": [delta_json(d) for d in plan.widened],
        "narrowed": [delta_json(d) for d in plan.narrowed],
        "counts": {
            "declared": len(plan.desired.bindings), "liveInScope": r.live_in_scope,
            "add": len(r.to_add), "remove": len(r.to_remove), "widened": len(plan.widened),
            "narrowed": len(plan.narrowed),
        },
    }  # fmt: skip


def plan_lines(plan: Plan) -> Iterator[str]:
    r = plan.reconciliation
    if not r.changes:
        yield (
            f"No changes: the {r.live_in_scope} live binding(s) in scope ({plan.desired.scope.describe()}) "
            "are the declared ones."
        )
        yield f"(planned at log offset {plan.offset})"
        return
    scope = plan.desired.scope.describe()
    yield f"Plan: {len(r.to_add)} to add, {len(r.to_remove)} to remove (scope: {scope})"
    for b in r.to_add:
        at = plan.desired.declared_at(b)
        yield f"  + {ac.binding_text(b)}" + (f"  # {at}" if at else "")
    for b in r.to_remove:
        yield f"  - {ac.binding_text(b)}  # live, not declared"
    yield from diff_lines(AccessDiff(plan.widened, plan.narrowed), "now", "after")
    yield f"(planned at log offset {plan.offset}; access judged at offset {plan.judged_at})"


def flip_json(f: Flip) -> dict[str, Any]:
    r = f.request
    return {
        "principal": r.principal, "host": r.host, "operation": r.operation.name,
        "resourceType": r.resource_type.name, "resourceName": r.resource_name,
        "audited": r.audited, "now": f.now, "planned": f.planned, "count": r.count,
        "lastSeen": format_time(r.last_seen_ms),
    }  # fmt: skip


def replay_lines(replay: dict[str, Any]) -> Iterator[str]:
    flips = replay["flips"]
    yield (
        f"Recent traffic since {format_time(replay['sinceMs'])}: {replay['requestsSeen']} distinct "
        f"request(s) in {replay['auditedDecisions']} audited decision(s); {len(flips)} would flip"
    )
    for f in flips:
        yield (
            f"  {f['now']} -> {f['planned']}  {f['principal']} from {f['host']}: {f['operation']} "
            f"{f['resourceType']} {f['resourceName']!r}  seen {f['count']} time(s) ({f['audited']}), "
            f"last {f['lastSeen']}"
        )
    yield f"  coverage: {replay['coverage']}"
