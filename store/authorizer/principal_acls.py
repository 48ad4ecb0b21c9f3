"""Per-principal summaries: what ``authorize_by_resource_type`` (KIP-679) reads.

A :class:`PrincipalAcls` holds one principal's ACLs of one resource type, the ALLOW/DENY
LITERAL/PREFIXED names bucketed by (host, operation) (:class:`TypeBucket`), so the question
reads only the requesting principal's and ``User:*``'s ACLs.
:class:`~store.authorizer.memory_index.InMemoryAclIndex` keeps a :class:`PrincipalIndex` of
every binding; a view that stores bindings elsewhere builds one principal's summary from its
bindings with :func:`principal_acls`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

from store.acl import AclBinding, AclPermissionType, PatternType, ResourceType
from store.authorizer.grants import TYPE_SLOTS


class TypeBucket:
    """One principal's ALLOW/DENY names of one resource type for one (host, operation).

    Besides the name dicts it keeps the ALLOW names in sorted lists, built on the first
    ``authorize_by_resource_type`` that needs them and then kept sorted on every change
    (``bisect``), so that a DENY prefix dominating thousands of ALLOW names is skipped as
    one range instead of name by name.
    """

    __slots__ = (
        "_sorted_allow_literal",
        "_sorted_allow_prefixed",
        "allow_literal",
        "allow_prefixed",
        "deny_literal",
        "deny_prefixed",
    )

    def __init__(self) -> None:
        self.allow_literal: dict[str, AclBinding] = {}
        self.allow_prefixed: dict[str, AclBinding] = {}
        self.deny_literal: dict[str, AclBinding] = {}
        self.deny_prefixed: dict[str, AclBinding] = {}
        self._sorted_allow_literal: list[str] | None = None
        self._sorted_allow_prefixed: list[str] | None = None

    def add(self, binding: AclBinding) -> None:
        name = binding.name
        if binding.permission_type is not AclPermissionType.ALLOW:
            self._denies(binding)[name] = binding
        elif binding.pattern_type is PatternType.LITERAL:
            self.allow_literal[name] = binding
            if self._sorted_allow_literal is not None:
                bisect.insort(self._sorted_allow_literal, name)
        else:
            self.allow_prefixed[name] = binding
            if self._sorted_allow_prefixed is not None:
                bisect.insort(self._sorted_allow_prefixed, name)

    def remove(self, binding: AclBinding) -> None:
        name = binding.name
        if binding.permission_type is not AclPermissionType.ALLOW:
            del (self.deny_literal if binding.pattern_type is PatternType.LITERAL else self.deny_prefixed)[
                name
            ]
        elif binding.pattern_type is PatternType.LITERAL:
            del self.allow_literal[name]
            _remove_sorted(self._sorted_allow_literal, name)
        else:
            del self.allow_prefixed[name]
            _remove_sorted(self._sorted_allow_prefixed, name)

    def _denies(self, binding: AclBinding) -> dict[str, AclBinding]:
        return self.deny_literal if binding.pattern_type is PatternType.LITERAL else self.deny_prefixed

    def sorted_allow_literal(self) -> list[str]:
        if self._sorted_allow_literal is None:
            self._sorted_allow_literal = sorted(self.allow_literal)
        return self._sorted_allow_literal

    def sorted_allow_prefixed(self) -> list[str]:
        if self._sorted_allow_prefixed is None:
            self._sorted_allow_prefixed = sorted(self.allow_prefixed)
        return self._sorted_allow_prefixed

    def __bool__(self) -> bool:
        return bool(self.allow_literal or self.allow_prefixed or self.deny_literal or self.deny_prefixed)

    def bindings(self) -> Iterator[AclBinding]:
        yield from self.allow_literal.values()
        yield from self.allow_prefixed.values()
        yield from self.deny_literal.values()
        yield from self.deny_prefixed.values()


def _remove_sorted(names: list[str] | None, name: str) -> None:
    if names is not None:
        del names[bisect.bisect_left(names, name)]


class PrincipalAcls:
    """One principal's ACLs of one resource type: ``buckets[(host, operation code)]``.

    ACLs that ``authorizeByResourceType`` ignores (UNKNOWN pattern or permission types) sit
    in ``others`` so that :meth:`InMemoryAclIndex.acls_for_principal` still lists them.
    """

    __slots__ = ("buckets", "count", "others")

    def __init__(self) -> None:
        self.count = 0
        self.buckets: dict[tuple[str, int], TypeBucket] = {}
        self.others: set[AclBinding] = set()

    def bindings(self) -> Iterator[AclBinding]:
        for bucket in self.buckets.values():
            yield from bucket.bindings()
        yield from self.others


def _by_type_indexable(binding: AclBinding) -> bool:
    pattern_type, permission = binding.pattern.pattern_type, binding.entry.permission_type
    return (pattern_type is PatternType.LITERAL or pattern_type is PatternType.PREFIXED) and (
        permission is AclPermissionType.ALLOW or permission is AclPermissionType.DENY
    )


class PrincipalIndex:
    """Every binding by resource type code and principal text: what by-type queries read."""

    __slots__ = ("by_type",)

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self.by_type: list[dict[str, PrincipalAcls]] = [{} for _ in range(TYPE_SLOTS)]
        for binding in bindings:
            self.add(binding)

    def add(self, binding: AclBinding) -> None:
        per_type = self.by_type[binding.pattern.resource_type]
        principal = binding.entry.principal
        acls = per_type.get(principal)
        if acls is None:
            acls = per_type[principal] = PrincipalAcls()
        acls.count += 1
        if not _by_type_indexable(binding):
            acls.others.add(binding)
            return
        key = (binding.entry.host, int(binding.entry.operation))
        bucket = acls.buckets.get(key)
        if bucket is None:
            bucket = acls.buckets[key] = TypeBucket()
        bucket.add(binding)

    def remove(self, binding: AclBinding) -> None:
        per_type = self.by_type[binding.pattern.resource_type]
        acls = per_type[binding.entry.principal]
        if _by_type_indexable(binding):
            key = (binding.entry.host, int(binding.entry.operation))
            bucket = acls.buckets[key]
            bucket.remove(binding)
            if not bucket:
                del acls.buckets[key]
        else:
            acls.others.discard(binding)
        acls.count -= 1
        if acls.count == 0:
            del per_type[binding.entry.principal]


def principal_acls(
    bindings: Iterable[AclBinding], resource_type: ResourceType, principal: str
) -> PrincipalAcls | None:
    """The summary of ``principal``'s ACLs of ``resource_type`` among ``bindings`` (None: none)."""
    return PrincipalIndex(bindings).by_type[resource_type].get(principal)
