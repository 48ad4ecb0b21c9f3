"""A consistent read of the index: what the decision rules read through.

A view pairs one RocksDB iterator (an implicit snapshot) with the log position and the
authorizer settings it reflects, so an answer is never assembled from two states.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from replicator.encoding import (
    BY_PATTERN,
    BY_PRINCIPAL,
    LITERAL,
    PREFIXED,
    decode_binding,
    lp,
    pattern_prefix,
)
from replicator.index.records import IndexPosition
from store.acl import (
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourceType,
)


class AnswerCache(Protocol):
    """Where a view keeps ``matching_acls`` answers (the index, over its generation cache)."""

    def cached_match(
        self, generation: int, key: tuple[int, str]
    ) -> tuple[AclBinding, ...] | None: ...

    def remember_match(
        self, generation: int, key: tuple[int, str], value: tuple[AclBinding, ...]
    ) -> None: ...


class IndexView:
    """A consistent read of the index, with the log position and settings it reflects.

    One view serves one request on one thread: its lookups share one RocksDB iterator.

    Implements the decision rules' ``AclView`` protocol (:mod:`store.authorizer`):
    ``matching_acls`` walks the three places Kafka's ``StandardAuthorizerData`` looks (the
    LITERAL name, the LITERAL ``*`` wildcard, each PREFIXED prefix of the name);
    ``acls_for_principal`` scans the by-principal table; ``bindings`` scans everything.
    """

    def __init__(
        self,
        index: AnswerCache,
        *,
        iterator: Any,
        position: IndexPosition,
        config: Mapping[str, str],
        generation: int,
        prefix_lengths: Mapping[int, tuple[int, ...]],
    ) -> None:
        self._index = index
        self._iter = iterator
        self.position = position
        self.config = config
        self._generation = generation
        self._prefix_lengths = prefix_lengths

    def _scan(self, prefix: bytes) -> Iterator[bytes]:
        iterator = self._iter
        iterator.seek(prefix)
        while iterator.valid():
            key: bytes = iterator.key()
            if not key.startswith(prefix):
                return
            yield key
            iterator.next()

    def _pattern_keys(self, resource_type: int, name: str) -> list[bytes]:
        keys = [pattern_prefix(resource_type, LITERAL, name)]
        if name != WILDCARD_RESOURCE:
            keys.append(pattern_prefix(resource_type, LITERAL, WILDCARD_RESOURCE))
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            keys.append(pattern_prefix(resource_type, PREFIXED, name[:length]))
        return keys

    def indexed(self) -> None:
        """None: the decision rules take their generic path over this view.

        The rules' fast path reads in-memory tables of every binding; this index keeps its
        bindings in RocksDB so that memory does not grow with the ACL set, and answers
        ``matching_acls`` from an LRU cache instead (:mod:`store.authorizer.view`).
        """
        return None

    def matching_acls(self, resource_type: ResourceType, name: str) -> tuple[AclBinding, ...]:
        """Every live binding whose pattern applies to the resource ``(resource_type, name)``."""
        cache_key = (int(resource_type), name)
        hit = self._index.cached_match(self._generation, cache_key)
        if hit is not None:
            return hit
        found: list[AclBinding] = []
        for prefix in self._pattern_keys(int(resource_type), name):
            found.extend(decode_binding(key, 1) for key in self._scan(prefix))
        result = tuple(found)
        self._index.remember_match(self._generation, cache_key, result)
        return result

    def acls_for_principal(self, resource_type: ResourceType, principal: str) -> tuple[AclBinding, ...]:
        """Every live binding of ``principal`` (exactly that string) on ``resource_type``."""
        prefix = BY_PRINCIPAL + lp(principal) + bytes((int(resource_type),))
        skip = len(prefix)
        return tuple(decode_binding(key, skip) for key in self._scan(prefix))

    def bindings(self) -> Iterator[AclBinding]:
        """Every live binding, in key order (sort for Kafka's DescribeAcls order)."""
        for key in self._scan(BY_PATTERN):
            yield decode_binding(key, 1)

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The live bindings ``acl_filter`` matches, in Kafka's DescribeAcls order.

        Narrows the scan where the filter allows: one pattern for a specific type, name and
        pattern type; the matching patterns for MATCH; one principal's bindings when the
        filter names a principal; otherwise every binding.
        """
        return sorted(b for b in self._candidates(acl_filter) if acl_filter.matches(b))

    def _candidates(self, acl_filter: AclBindingFilter) -> Iterable[AclBinding]:
        pf, ef = acl_filter.pattern_filter, acl_filter.entry_filter
        specific_type = pf.resource_type not in (ResourceType.ANY, ResourceType.UNKNOWN)
        if specific_type and pf.name is not None:
            rt = int(pf.resource_type)
            if pf.pattern_type is PatternType.MATCH:
                return self.matching_acls(pf.resource_type, pf.name)
            if pf.pattern_type.is_specific:
                return self._pattern(rt, int(pf.pattern_type), pf.name)
            if pf.pattern_type is PatternType.ANY:
                literal = self._pattern(rt, LITERAL, pf.name)
                return literal + self._pattern(rt, PREFIXED, pf.name)
        if ef.principal is not None:
            if specific_type:
                return self.acls_for_principal(pf.resource_type, ef.principal)
            prefix = BY_PRINCIPAL + lp(ef.principal)
            skip = len(prefix) + 1
            return [decode_binding(k, skip) for k in self._scan(prefix)]
        return self.bindings()

    def _pattern(self, resource_type: int, pattern_type: int, name: str) -> list[AclBinding]:
        prefix = pattern_prefix(resource_type, pattern_type, name)
        return [decode_binding(k, 1) for k in self._scan(prefix)]
