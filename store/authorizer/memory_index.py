"""``InMemoryAclIndex``: an :class:`~store.authorizer.view.AclView` over plain dicts.

Two indexes of the same bindings, each shaped for one question:

* :class:`AclTables` answers ``authorize``: per resource type, the grant summaries
  (:class:`~store.authorizer.grants.PatternAcls`) of the LITERAL and PREFIXED patterns by
  exact name.  The applicable ones are a handful of dict lookups
  (:func:`~store.authorizer.applicable.applicable`): the exact name, ``*``, and each prefix
  of the name whose length some PREFIXED pattern has.
* :class:`~store.authorizer.principal_acls.PrincipalIndex` answers
  ``authorize_by_resource_type``: per resource type and principal, the ALLOW/DENY
  LITERAL/PREFIXED names bucketed by (host, operation), so the question reads only the
  requesting principal's and ``User:*``'s ACLs.

Bindings whose pattern type is UNKNOWN (written by a newer Kafka) are stored and listed but
never applied: Kafka's range scan happens to treat them like PREFIXED; we do not guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from store.acl import AclBinding, AclBindingFilter, PatternType, ResourceType
from store.authorizer.applicable import applicable
from store.authorizer.grants import TYPE_SLOTS, Grant, PatternAcls
from store.authorizer.principal_acls import PrincipalAcls, PrincipalIndex


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

    def applicable_acls(self, resource_type: ResourceType, name: str) -> list[PatternAcls]:
        """The summaries of the patterns that apply to ``resource_type:name``: this index's
        own tables, looked up at the PREFIXED lengths they hold."""
        tables = self.tables
        return applicable(
            name, tables.literal[resource_type], tables.prefixed[resource_type],
            tables.prefix_lengths[resource_type],
        )  # fmt: skip

    def applicable_acls_of(
        self, principals: tuple[str, ...], resource_type: ResourceType, name: str
    ) -> list[PatternAcls]:
        """Every summary here is whole: :meth:`applicable_acls`."""
        return self.applicable_acls(resource_type, name)

    def matching_acls(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        for pattern in self.applicable_acls(resource_type, name):
            yield from pattern.bindings()

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
                tables = self.tables
                lengths = tables.prefix_lengths[rt]
                for pattern in applicable(pf.name, tables.literal[rt], tables.prefixed[rt], lengths):
                    yield from pattern.bindings()
            else:
                for table in (self.tables.literal[rt], self.tables.prefixed[rt]):
                    found = table.get(pf.name)
                    if found is not None:
                        yield from found.bindings()
