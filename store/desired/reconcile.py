"""The desired state against the live one: what a plan changes and what drift reports.

Within the scope, the bindings the files declare that are not live (to add, or: missing) and
the live bindings the files do not declare (to remove, or: undeclared); the live bindings
outside every scope are left alone and only counted or reported.  Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from store.acl import AclBinding
from store.desired.scope import Scope


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """``to_add`` and ``to_remove`` in DescribeAcls order; ``outside`` the live bindings no
    scope owns, in the order they were given (a listing's is DescribeAcls order; sorting
    every binding of a large store is what a plan would spend most on)."""

    to_add: tuple[AclBinding, ...]
    to_remove: tuple[AclBinding, ...]
    outside: tuple[AclBinding, ...]
    live_in_scope: int

    @property
    def changes(self) -> bool:
        return bool(self.to_add or self.to_remove)


def reconcile(desired: Iterable[AclBinding], scope: Scope, live: Iterable[AclBinding]) -> Reconciliation:
    """What makes the live bindings in ``scope`` exactly ``desired``, leaving the rest."""
    wanted = set(desired)
    inside: set[AclBinding] = set()
    outside: list[AclBinding] = []
    for b in live:
        (inside.add(b) if scope.contains(b) else outside.append(b))
    return Reconciliation(
        to_add=tuple(sorted(wanted - inside)),
        to_remove=tuple(sorted(inside - wanted)),
        outside=tuple(outside),
        live_in_scope=len(inside),
    )


def apply_reconciliation(live: Iterable[AclBinding], r: Reconciliation) -> set[AclBinding]:
    """The live bindings once ``r`` is written (what an apply leaves, for tests and checks)."""
    return (set(live) - set(r.to_remove)) | set(r.to_add)
