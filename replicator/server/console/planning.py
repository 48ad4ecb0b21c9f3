"""The Safety page's plan: what ``aclstore plan -f FILE`` answers, for a file's text pasted in
the page, computed by the node with the session's credential.

The steps are the command's: the file read as ``plan`` reads it (the same loader, so the same
errors, naming the line), the live bindings of its scope listed from one snapshot, the
reconciliation, and the node's dry run of the change at least as fresh as the listing; when
the dry run's added and removed bindings are not the reconciliation's, the scope moved in
between and the plan is made again.  The answer carries the plan document's fields (kind,
offset, accessJudgedAt, scope, changes, add, remove, widened, narrowed, counts).

The listing and the dry run are passed in (the node's own handlers), so this module does no
I/O of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from replicator.contract.access import DryRunAnswer, access_delta_json
from replicator.contract.bindings import binding_json
from replicator.contract.fields import MAX_ITEMS, BadRequestError
from replicator.contract.scope import scope_json
from store.acl import (
    ANY_FILTER,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    ResourcePatternFilter,
)
from store.desired import DesiredState, Reconciliation, Scope, load_acls_text, reconcile

PLAN_KIND: Final = "aclstore.plan"
PLAN_FORMAT: Final = 1
ATTEMPTS: Final = 3
MAX_TEXT: Final = 4 * 1024 * 1024
"""Characters of a pasted file, at most."""

ListScope = Callable[[Sequence[AclBindingFilter], Scope], tuple[list[AclBinding], int]]
"""The live bindings in a scope (listed with filters covering it) and the snapshot's offset."""
DryRun = Callable[[Sequence[AclBinding], Sequence[AclBinding], int], DryRunAnswer]
"""The node's dry run of adding and removing bindings, judged at that offset at least."""


def covering_filters(scope: Scope) -> list[AclBindingFilter]:
    """Listing filters whose union holds every binding of ``scope``: one per principal and
    one per resource type of its prefixes (the node then keeps only what the scope holds)."""
    if scope.everything:
        return [ANY_FILTER]
    by_principal = [
        AclBindingFilter(entry_filter=AccessControlEntryFilter(principal=principal))
        for principal in sorted(scope.principals)
    ]
    types = sorted({prefix.resource_type for prefix in scope.resource_prefixes})
    by_type = [AclBindingFilter(pattern_filter=ResourcePatternFilter(resource_type=t)) for t in types]
    return by_principal + by_type


def read_text(text: Any, source: str) -> DesiredState:
    """The pasted file as ``plan -f`` reads one file."""
    if not isinstance(text, str) or not text.strip():
        raise BadRequestError("text: paste the ACLs file (YAML or JSON, as aclstore plan -f reads)")
    if len(text) > MAX_TEXT:
        raise BadRequestError(f"text: {len(text)} characters, more than {MAX_TEXT}; plan it with the CLI")
    return DesiredState.of([load_acls_text(text, source)])


def plan_document(desired: DesiredState, list_scope: ListScope, dry_run: DryRun) -> dict[str, Any]:
    """The plan of ``desired`` against the live state, as the plan document's fields."""
    filters = covering_filters(desired.scope)
    for _ in range(ATTEMPTS):
        live, offset = list_scope(filters, desired.scope)
        r = reconcile(desired.bindings, desired.scope, live)
        if not r.changes:
            return _document(desired, r, offset, None, None)
        if len(r.to_add) > MAX_ITEMS or len(r.to_remove) > MAX_ITEMS:
            raise BadRequestError(
                f"{len(r.to_add)} to add and {len(r.to_remove)} to remove: one dry run takes at "
                f"most {MAX_ITEMS} of each; narrow the file's scope, or plan it in steps"
            )
        answer = dry_run(r.to_add, r.to_remove, offset)
        if set(answer.added) == set(r.to_add) and set(answer.removed) == set(r.to_remove):
            return _document(desired, r, offset, answer.offset, answer)
    raise BadRequestError(
        f"the scope kept changing while it was planned ({ATTEMPTS} attempts): plan again"
    )


def _document(
    desired: DesiredState, r: Reconciliation, offset: int, judged_at: int | None,
    answer: DryRunAnswer | None,
) -> dict[str, Any]:  # fmt: skip
    widened = [] if answer is None else [access_delta_json(d) for d in answer.widened]
    narrowed = [] if answer is None else [access_delta_json(d) for d in answer.narrowed]
    return {
        "kind": PLAN_KIND, "formatVersion": PLAN_FORMAT, "offset": offset,
        "accessJudgedAt": judged_at, "files": [f.source for f in desired.files],
        "scope": scope_json(desired.scope), "changes": r.changes,
        "add": [binding_json(b) for b in r.to_add],
        "remove": [binding_json(b) for b in r.to_remove],
        "widened": widened, "narrowed": narrowed,
        "counts": {
            "declared": len(desired.bindings), "liveInScope": r.live_in_scope,
            "add": len(r.to_add), "remove": len(r.to_remove), "widened": len(widened),
            "narrowed": len(narrowed),
        },
    }  # fmt: skip
