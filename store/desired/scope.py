"""Scopes: the part of the ACLs a desired-state file owns.

A file manages only what it declares it owns, so that teams can own their own files: a binding
is in a scope when its principal is one of the scope's principals, or its resource type is a
resource prefix's type and its pattern's name starts with that prefix (whatever the pattern
type), or the scope owns everything.  Bindings outside every scope are left alone by ``plan``
and ``apply`` and reported by ``drift``.  Pure values, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from store.acl import AclBinding, ResourceType


@dataclass(frozen=True, slots=True, order=True)
class ResourcePrefix:
    """The bindings of ``resource_type`` whose pattern name starts with ``prefix``."""

    resource_type: ResourceType
    prefix: str

    def __str__(self) -> str:
        return f"{self.resource_type.name}:{self.prefix}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What a file (or the union of several files) owns; see the module's docstring."""

    everything: bool = False
    principals: frozenset[str] = frozenset()
    resource_prefixes: frozenset[ResourcePrefix] = frozenset()
    _by_type: dict[ResourceType, tuple[str, ...]] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        by_type: dict[ResourceType, list[str]] = {}
        for p in self.resource_prefixes:
            by_type.setdefault(p.resource_type, []).append(p.prefix)
        object.__setattr__(self, "_by_type", {t: tuple(v) for t, v in by_type.items()})

    @property
    def is_empty(self) -> bool:
        return not (self.everything or self.principals or self.resource_prefixes)

    def contains(self, binding: AclBinding) -> bool:
        if self.everything or binding.entry.principal in self.principals:
            return True
        prefixes = self._by_type.get(binding.pattern.resource_type)
        return prefixes is not None and binding.pattern.name.startswith(prefixes)

    def owns_pattern(self, resource_type: ResourceType, name: str) -> bool:
        """Every binding of this pattern is in the scope, whatever its principal (everything,
        or a resource prefix matches); else only those of the scope's principals are."""
        if self.everything:
            return True
        prefixes = self._by_type.get(resource_type)
        return prefixes is not None and name.startswith(prefixes)

    def union(self, other: Scope) -> Scope:
        return Scope(
            everything=self.everything or other.everything,
            principals=self.principals | other.principals,
            resource_prefixes=self.resource_prefixes | other.resource_prefixes,
        )

    @classmethod
    def of_all(cls, scopes: Iterable[Scope]) -> Scope:
        """The union: a binding is in it when it is in any of ``scopes``."""
        out = cls()
        for s in scopes:
            out = out.union(s)
        return out

    def describe(self) -> str:
        if self.everything:
            return "every binding"
        parts = [f"principal {p}" for p in sorted(self.principals)]
        parts += [
            f"{p.resource_type.name} names starting {p.prefix!r}" for p in sorted(self.resource_prefixes)
        ]
        return ", ".join(parts) or "nothing"
