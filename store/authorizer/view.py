"""What the decision rules read from an ACL store (``DecisionView``), and what else a store lists.

The rules (:mod:`store.authorizer.rules`) read one narrow view, in the shape of the
``AclCache`` behind Kafka's ``StandardAuthorizerData``: the grant summaries
(:mod:`store.authorizer.grants`) of the patterns that apply to a resource, and one
principal's summary for ``authorize_by_resource_type``.  Every store supplies them, however
it keeps its bindings, and every decision goes through the one procedure
(:mod:`store.authorizer.engine`):

* :class:`~store.authorizer.memory_index.InMemoryAclIndex` (the admin's state, the history
  questions) keeps the summaries as its tables;
* the replica's RocksDB view (``replicator.index.IndexView``) builds them from the bindings of
  each applicable pattern, and caches them, so that its memory does not grow with the set;
* :class:`ScanAclView` (the reference) builds them from the bindings KIP-290's MATCH filter
  accepts, independently of the lookup by name.

:class:`AclView` adds what the admin API and the tests list: bindings by resource, by
principal, all of them, and DescribeAcls.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from store.acl import (
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)
from store.authorizer.grants import PatternAcls, pattern_acls
from store.authorizer.principal_acls import PrincipalAcls, principal_acls


class DecisionView(Protocol):
    """A consistent snapshot of ACLs, as the decision rules read it."""

    def applicable_acls(self, resource_type: ResourceType, name: str) -> Sequence[PatternAcls]:
        """The summaries of the patterns that apply to the LITERAL resource
        ``resource_type:name`` (:func:`store.authorizer.applicable.applicable`), one per
        pattern that has ACLs, in the order: the LITERAL name, the PREFIXED prefixes from
        the shortest, the LITERAL ``*``.  The order decides only which ACL explains a
        decision, never the decision."""
        ...

    def applicable_acls_of(
        self, principals: tuple[str, ...], resource_type: ResourceType, name: str
    ) -> Sequence[PatternAcls]:
        """:meth:`applicable_acls` for a request whose ACL principals are ``principals``
        (its own and ``User:*``): a summary may then hold only those principals' ACLs (a view
        that reads a large pattern principal by principal), and must hold all of theirs."""
        ...

    def principal_acls(self, resource_type: ResourceType, principal: str) -> PrincipalAcls | None:
        """The summary of the ACLs of ``resource_type`` whose principal text is exactly
        ``principal`` (``User:*`` is not expanded: callers ask for it separately), or None."""
        ...


class AclView(DecisionView, Protocol):
    """A consistent snapshot of ACL bindings: what the rules read, and listings."""

    def matching_acls(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        """Every binding that applies to the LITERAL resource ``resource_type:name``: the
        bindings of :meth:`applicable_acls`' patterns, in any order."""
        ...

    def acls_for_principal(self, resource_type: ResourceType, principal: str) -> Iterable[AclBinding]:
        """Every binding of ``resource_type`` whose principal text is exactly ``principal``."""
        ...

    def bindings(self) -> Iterable[AclBinding]:
        """Every binding, in any order."""
        ...

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings ``acl_filter`` matches, in Kafka's DescribeAcls order (``sorted``)."""
        ...


def describe(view: AclView, acl_filter: AclBindingFilter) -> list[AclBinding]:
    """A generic DescribeAcls over any view: filter every binding, sort in Kafka's order."""
    return sorted(b for b in view.bindings() if acl_filter.matches(b))


def _rules_order(pattern: tuple[PatternType, str]) -> tuple[int, int]:
    """The LITERAL name, then the PREFIXED patterns from the shortest, then the LITERAL ``*``."""
    pattern_type, name = pattern
    if pattern_type is PatternType.PREFIXED:
        return 1, len(name)
    return (2 if name == WILDCARD_RESOURCE else 0), 0


class ScanAclView:
    """The simplest AclView: a list scanned on every call.

    ``matching_acls`` asks each binding's pattern through KIP-290's MATCH filter
    (``ResourcePatternFilter.matches``), independently of the lookup by name, which makes it
    a reference for tests and a fallback for small ACL sets; ``applicable_acls`` summarizes
    what it finds, pattern by pattern.
    """

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self._bindings = list(dict.fromkeys(bindings))

    def matching_acls(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        match = ResourcePatternFilter(resource_type=resource_type, name=name, pattern_type=PatternType.MATCH)
        return [b for b in self._bindings if b.pattern_type.is_specific and match.matches(b.pattern)]

    def applicable_acls_of(
        self, principals: tuple[str, ...], resource_type: ResourceType, name: str
    ) -> list[PatternAcls]:
        return self.applicable_acls(resource_type, name)

    def applicable_acls(self, resource_type: ResourceType, name: str) -> list[PatternAcls]:
        by_pattern: dict[tuple[PatternType, str], list[AclBinding]] = {}
        for binding in self.matching_acls(resource_type, name):
            by_pattern.setdefault((binding.pattern_type, binding.name), []).append(binding)
        return [pattern_acls(by_pattern[key]) for key in sorted(by_pattern, key=_rules_order)]

    def acls_for_principal(self, resource_type: ResourceType, principal: str) -> list[AclBinding]:
        return [b for b in self._bindings if b.resource_type is resource_type and b.principal == principal]

    def principal_acls(self, resource_type: ResourceType, principal: str) -> PrincipalAcls | None:
        return principal_acls(self.acls_for_principal(resource_type, principal), resource_type, principal)

    def bindings(self) -> Iterable[AclBinding]:
        return list(self._bindings)

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return describe(self, acl_filter)
