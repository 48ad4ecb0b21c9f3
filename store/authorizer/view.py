"""``AclView``: what the decision rules need to read from an ACL store.

The rules in :mod:`store.authorizer.rules` are written against this Protocol so that any
index can serve them: :class:`store.authorizer.memory_index.InMemoryAclIndex` (dicts), or the
replica's RocksDB index.  Which path the rules take is declared by the view, not guessed
from its class: :meth:`AclView.indexed` returns the precomputed in-memory tables
(:class:`IndexedAcls`) that give the allocation-free fast path, or None for the generic path
through ``matching_acls`` / ``acls_for_principal``.

* :class:`~store.authorizer.memory_index.InMemoryAclIndex` (the admin's state, tests) returns
  itself: the fast path.
* The replica's RocksDB view (``replicator.index.IndexView``) returns None: the generic
  path.  Its bindings live on disk so that a replica's memory does not grow with the ACL
  set; the tables are an in-memory structure of every binding, so offering them would mean
  keeping the whole set in memory again.  It answers ``matching_acls`` from an LRU cache
  instead.
* :class:`ScanAclView` (the reference) returns None.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from store.acl import AclBinding, AclBindingFilter, PatternType, ResourcePatternFilter, ResourceType

if TYPE_CHECKING:
    from store.authorizer.memory_index import AclTables, PrincipalAcls


class IndexedAcls(Protocol):
    """The precomputed in-memory tables of :mod:`store.authorizer.memory_index`: the rules' fast path."""

    @property
    def tables(self) -> AclTables:
        """What ``authorize`` reads."""
        ...

    def principal_acls(self, resource_type: ResourceType, principal: str) -> PrincipalAcls | None:
        """What ``authorize_by_resource_type`` reads: one principal's ACLs (None: none)."""
        ...


class AclView(Protocol):
    """A consistent snapshot of ACL bindings, read by the decision rules."""

    def matching_acls(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        """Every binding that applies to the LITERAL resource ``resource_type:name``.

        That is the LITERAL binding of exactly ``name``, the LITERAL wildcard ``*``, and every
        PREFIXED binding whose name is a prefix of ``name`` (found by looking up each prefix
        of ``name``, not by a range scan: Kafka's range scan misbehaves for names that sort
        below ``*``).  Any order; bindings of any principal, host, operation and permission.
        """
        ...

    def acls_for_principal(self, resource_type: ResourceType, principal: str) -> Iterable[AclBinding]:
        """Every binding of ``resource_type`` whose principal text is exactly ``principal``.

        ``User:*`` is not expanded here: callers ask for it separately.
        """
        ...

    def bindings(self) -> Iterable[AclBinding]:
        """Every binding, in any order."""
        ...

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings ``acl_filter`` matches, in Kafka's DescribeAcls order (``sorted``)."""
        ...

    def indexed(self) -> IndexedAcls | None:
        """The precomputed tables the rules' fast path reads, or None for the generic path.

        Both paths give the same decisions (``tests/store/test_differential.py``).
        """
        ...


def describe(view: AclView, acl_filter: AclBindingFilter) -> list[AclBinding]:
    """A generic DescribeAcls over any view: filter every binding, sort in Kafka's order."""
    return sorted(b for b in view.bindings() if acl_filter.matches(b))


class ScanAclView:
    """The simplest AclView: a list scanned on every call.

    ``matching_acls`` asks each binding's pattern through KIP-290's MATCH filter
    (``ResourcePatternFilter.matches``), independently of the indexed tables, which makes it
    a reference for tests and a fallback for small ACL sets.
    """

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self._bindings = list(dict.fromkeys(bindings))

    def matching_acls(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        match = ResourcePatternFilter(resource_type=resource_type, name=name, pattern_type=PatternType.MATCH)
        return [b for b in self._bindings if b.pattern_type.is_specific and match.matches(b.pattern)]

    def acls_for_principal(self, resource_type: ResourceType, principal: str) -> Iterable[AclBinding]:
        return [b for b in self._bindings if b.resource_type is resource_type and b.principal == principal]

    def bindings(self) -> Iterable[AclBinding]:
        return list(self._bindings)

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return describe(self, acl_filter)

    def indexed(self) -> IndexedAcls | None:
        return None
