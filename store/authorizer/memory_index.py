"""``InMemoryAclIndex``: an :class:`~store.authorizer.view.AclView` over plain dicts.

Two indexes of the same bindings, each shaped for one question:

* :class:`AclTables` answers ``authorize``: per resource type, LITERAL and PREFIXED patterns
  by exact name, then principal, then host, down to a :class:`Grant` holding bit masks of
  the operations its ACLs allow and deny.  A decision is a handful of dict lookups: the
  exact name, ``*``, and each prefix of the name whose length some PREFIXED pattern has.
* :class:`PrincipalAcls` answers ``authorize_by_resource_type``: per resource type and
  principal, the ALLOW/DENY LITERAL/PREFIXED names bucketed by (host, operation), so the
  question reads only the requesting principal's and ``User:*``'s ACLs.

Bindings whose pattern type is UNKNOWN (written by a newer Kafka) are stored and listed but
never applied: Kafka's range scan happens to treat them like PREFIXED; we do not guess.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

from store.acl import (
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.authorizer.decision import (
    ALLOWED,
    COVERED,
    DENIED,
    Decision,
    DecisionRule,
)

TYPE_SLOTS = max(ResourceType) + 1
"""Tables are lists indexed by the resource type's int8 code."""


class Grant:
    """The ACLs of one resource pattern for one (principal, host): their operation masks.

    ``deny_mask`` / ``allow_mask`` hold a bit per requested operation the ACLs cover (see
    :func:`~store.authorizer.decision.covered_operations`).  Within a grant an ACL is fixed
    by its operation and permission, which key ``decisions``; each ACL keeps a ready-made
    :class:`Decision` so that answering allocates nothing.
    """

    __slots__ = ("allow_mask", "decisions", "deny_mask")

    def __init__(self) -> None:
        self.allow_mask = 0
        self.deny_mask = 0
        self.decisions: dict[int, Decision] = {}

    @staticmethod
    def key(binding: AclBinding) -> int:
        entry = binding.entry
        return entry.operation << 3 | entry.permission_type

    def add(self, binding: AclBinding) -> bool:
        entry = binding.entry
        operation, permission = entry.operation, entry.permission_type
        key = operation << 3 | permission
        if key in self.decisions:
            return False
        # The decision goes in before the mask bit and leaves after it, so that a reader
        # never sees a bit without its decision.
        mask = COVERED[permission][operation]
        if permission is AclPermissionType.ALLOW:
            self.decisions[key] = Decision(ALLOWED, DecisionRule.MATCHING_ACL, binding)
            self.allow_mask |= mask
        else:  # DENY (Kafka also treats UNKNOWN permission types as DENY)
            self.decisions[key] = Decision(DENIED, DecisionRule.MATCHING_ACL, binding)
            self.deny_mask |= mask
        return True

    def remove(self, binding: AclBinding) -> bool:
        key = self.key(binding)
        if key not in self.decisions:
            return False
        allow_mask = deny_mask = 0
        for other_key, decision in self.decisions.items():
            if other_key != key:
                if decision.result is ALLOWED:
                    allow_mask |= _mask_of(decision)
                else:
                    deny_mask |= _mask_of(decision)
        self.allow_mask, self.deny_mask = allow_mask, deny_mask
        del self.decisions[key]
        return True

    def decision_for(self, op_bit: int, result: object) -> Decision:
        """The decision of an ACL here with ``result`` covering ``op_bit`` (which must exist)."""
        for decision in self.decisions.values():
            if decision.result is result and _mask_of(decision) & op_bit:
                return decision
        raise LookupError("no ACL covers the operation")  # masks and decisions disagree

    def bindings(self) -> Iterator[AclBinding]:
        for decision in self.decisions.values():
            if decision.binding is not None:
                yield decision.binding


def _mask_of(decision: Decision) -> int:
    binding = decision.binding
    assert binding is not None
    return COVERED[binding.permission_type][binding.operation]


class PatternAcls:
    """All ACLs of one resource pattern: ``grants[principal][host]``."""

    __slots__ = ("count", "grants")

    def __init__(self) -> None:
        self.count = 0
        self.grants: dict[str, dict[str, Grant]] = {}

    def bindings(self) -> Iterator[AclBinding]:
        for by_host in self.grants.values():
            for grant in by_host.values():
                yield from grant.bindings()


class AclTables:
    """Per resource type code: LITERAL and PREFIXED patterns by name, and PREFIXED lengths."""

    __slots__ = ("_length_counts", "literal", "prefix_lengths", "prefixed")

    def __init__(self) -> None:
        self.literal: list[dict[str, PatternAcls]] = [{} for _ in range(TYPE_SLOTS)]
        self.prefixed: list[dict[str, PatternAcls]] = [{} for _ in range(TYPE_SLOTS)]
        self.prefix_lengths: list[tuple[int, ...]] = [() for _ in range(TYPE_SLOTS)]
        self._length_counts: list[dict[int, int]] = [{} for _ in range(TYPE_SLOTS)]

    def table(self, resource_type: ResourceType, pattern_type: PatternType) -> dict[str, PatternAcls]:
        if pattern_type is PatternType.LITERAL:
            return self.literal[resource_type]
        return self.prefixed[resource_type]

    def pattern_added(self, resource_type: int, pattern_type: PatternType, name: str) -> None:
        if pattern_type is PatternType.PREFIXED:
            counts = self._length_counts[resource_type]
            counts[len(name)] = counts.get(len(name), 0) + 1
            if counts[len(name)] == 1:
                self.prefix_lengths[resource_type] = tuple(sorted(counts))

    def pattern_removed(self, resource_type: int, pattern_type: PatternType, name: str) -> None:
        if pattern_type is PatternType.PREFIXED:
            counts = self._length_counts[resource_type]
            counts[len(name)] -= 1
            if counts[len(name)] == 0:
                del counts[len(name)]
                self.prefix_lengths[resource_type] = tuple(sorted(counts))

    def applicable(self, resource_type: int, name: str) -> Iterator[PatternAcls]:
        """The patterns that apply to LITERAL ``name``: exact, each stored prefix, then ``*``."""
        found = self.literal[resource_type].get(name)
        if found is not None:
            yield found
        prefixed = self.prefixed[resource_type]
        for length in self.prefix_lengths[resource_type]:
            if length > len(name):
                break
            found = prefixed.get(name[:length])
            if found is not None:
                yield found
        if name != WILDCARD_RESOURCE:
            found = self.literal[resource_type].get(WILDCARD_RESOURCE)
            if found is not None:
                yield found


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


class InMemoryAclIndex:
    """A mutable, dict-backed :class:`~store.authorizer.view.AclView`.

    ``add``/``remove`` are O(1) (plus a sort of the distinct PREFIXED name lengths when a
    new length appears, and a ``bisect`` insert once a by-type query has sorted a bucket);
    adding a binding twice keeps one copy, as Kafka's ACL set does.  One writer at a time;
    ``authorize`` may run while it writes (each step leaves the tables consistent), but
    ``authorize_by_resource_type`` and iterating ``bindings()``/``acls()`` must not overlap
    a write.

    The by-principal index (:class:`PrincipalIndex`) is built on the first by-type query
    (or :meth:`prepare_by_resource_type`) and maintained from then on, so a write-only user
    such as the admin API's projection never pays for it.
    """

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self.tables = AclTables()
        self._principal_index: PrincipalIndex | None = None
        self._unindexed: set[AclBinding] = set()
        self._count = 0
        for binding in bindings:
            self.add(binding)

    # --- mutation ------------------------------------------------------------------------

    def add(self, binding: AclBinding) -> bool:
        """Add ``binding``; False when it was already present."""
        pattern_type = binding.pattern.pattern_type
        if pattern_type is PatternType.LITERAL or pattern_type is PatternType.PREFIXED:
            if not self._add_to_tables(binding):
                return False
        else:
            if binding in self._unindexed:
                return False
            self._unindexed.add(binding)
        if self._principal_index is not None:
            self._principal_index.add(binding)
        self._count += 1
        return True

    def remove(self, binding: AclBinding) -> bool:
        """Remove ``binding``; False when it was not present."""
        if not binding.pattern.pattern_type.is_specific:
            if binding not in self._unindexed:
                return False
            self._unindexed.discard(binding)
        else:
            if not self._remove_from_tables(binding):
                return False
        if self._principal_index is not None:
            self._principal_index.remove(binding)
        self._count -= 1
        return True

    # A reader may decide while these run: a new pattern is published only once it holds its
    # ACL, and a pattern losing its last ACL is unpublished before it is emptied.

    def _add_to_tables(self, binding: AclBinding) -> bool:
        resource, entry = binding.pattern, binding.entry
        name, pattern_type = resource.name, resource.pattern_type
        if pattern_type is PatternType.LITERAL:
            table = self.tables.literal[resource.resource_type]
        else:
            table = self.tables.prefixed[resource.resource_type]
        pattern = table.get(name)
        published = pattern is not None
        if pattern is None:
            pattern = PatternAcls()
        by_host = pattern.grants.get(entry.principal)
        if by_host is None:
            by_host = pattern.grants[entry.principal] = {}
        grant = by_host.get(entry.host)
        if grant is None:
            grant = by_host[entry.host] = Grant()
        if not grant.add(binding):
            return False
        pattern.count += 1
        if not published:
            table[name] = pattern
            self.tables.pattern_added(int(resource.resource_type), pattern_type, name)
        return True

    def _remove_from_tables(self, binding: AclBinding) -> bool:
        table = self.tables.table(binding.resource_type, binding.pattern_type)
        pattern = table.get(binding.name)
        by_host = pattern.grants.get(binding.principal) if pattern else None
        grant = by_host.get(binding.host) if by_host else None
        if pattern is None or by_host is None or grant is None:
            return False
        if Grant.key(binding) not in grant.decisions:
            return False
        if pattern.count == 1:
            del table[binding.name]
            self.tables.pattern_removed(int(binding.resource_type), binding.pattern_type, binding.name)
        grant.remove(binding)
        pattern.count -= 1
        if not grant.decisions:
            del by_host[binding.host]
            if not by_host:
                del pattern.grants[binding.principal]
        return True

    def prepare_by_resource_type(self) -> PrincipalIndex:
        """The by-principal index, built now if no by-type query has built it yet.

        Building reads every binding, so it must not overlap a write (as by-type queries).
        Two readers that both find it missing build equal copies; one of them is kept.
        """
        index = self._principal_index
        if index is None:
            index = self._principal_index = PrincipalIndex(self.bindings())
        return index

    # --- reading -------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._count

    def __contains__(self, binding: object) -> bool:
        if not isinstance(binding, AclBinding):
            return False
        if not binding.pattern_type.is_specific:
            return binding in self._unindexed
        pattern = self.tables.table(binding.resource_type, binding.pattern_type).get(binding.name)
        by_host = pattern.grants.get(binding.principal) if pattern else None
        grant = by_host.get(binding.host) if by_host else None
        return grant is not None and Grant.key(binding) in grant.decisions

    def __iter__(self) -> Iterator[AclBinding]:
        return self.bindings()

    def bindings(self) -> Iterator[AclBinding]:
        for tables in (self.tables.literal, self.tables.prefixed):
            for by_name in tables:
                for pattern in by_name.values():
                    yield from pattern.bindings()
        yield from self._unindexed

    def matching_acls(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        for pattern in self.tables.applicable(int(resource_type), name):
            yield from pattern.bindings()

    def indexed(self) -> InMemoryAclIndex:
        """The decision rules' fast path reads this index's own tables."""
        return self

    def principal_acls(self, resource_type: ResourceType, principal: str) -> PrincipalAcls | None:
        """The by-type index of one principal (exact text), or None when it has no ACLs."""
        return self.prepare_by_resource_type().by_type[resource_type].get(principal)

    def acls_for_principal(self, resource_type: ResourceType, principal: str) -> Iterator[AclBinding]:
        acls = self.prepare_by_resource_type().by_type[resource_type].get(principal)
        if acls is not None:
            yield from acls.bindings()

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """DescribeAcls: the matching bindings in Kafka's order, reading only candidate patterns."""
        return sorted(b for b in self._candidates(acl_filter) if acl_filter.matches(b))

    def _candidates(self, acl_filter: AclBindingFilter) -> Iterator[AclBinding]:
        pf = acl_filter.pattern_filter
        yield from self._unindexed
        if pf.resource_type is ResourceType.ANY:
            types = range(TYPE_SLOTS)
        else:
            types = range(int(pf.resource_type), int(pf.resource_type) + 1)
        for rt in types:
            if pf.name is None or pf.pattern_type not in (
                PatternType.LITERAL,
                PatternType.PREFIXED,
                PatternType.ANY,
                PatternType.MATCH,
            ):
                for table in (self.tables.literal[rt], self.tables.prefixed[rt]):
                    for pattern in table.values():
                        yield from pattern.bindings()
            elif pf.pattern_type is PatternType.MATCH:
                for pattern in self.tables.applicable(rt, pf.name):
                    yield from pattern.bindings()
            else:
                for table in (self.tables.literal[rt], self.tables.prefixed[rt]):
                    found = table.get(pf.name)
                    if found is not None:
                        yield from found.bindings()
