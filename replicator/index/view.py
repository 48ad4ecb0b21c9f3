"""A consistent read of the index: what the decision rules read through.

A view pairs one RocksDB iterator (an implicit snapshot) with the log position and the
authorizer settings it reflects, so an answer is never assembled from two states.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from replicator.encoding import (
    BY_PATTERN,
    BY_PRINCIPAL,
    LITERAL,
    PREFIXED,
    decode_binding,
    encode_binding,
    lp,
    order_key,
    pattern_prefix,
)
from replicator.index.listing import ListedResource, plan, scan
from replicator.index.patterns import IndexPatterns
from replicator.index.records import IndexPosition
from store.acl import WILDCARD_RESOURCE, AclBinding, AclBindingFilter, PatternType, ResourceType
from store.authorizer.applicable import applicable_patterns
from store.authorizer.grants import PartialPatternAcls, PatternAcls, pattern_acls
from store.authorizer.principal_acls import PrincipalAcls, principal_acls


class AnswerCache(Protocol):
    """Where a view keeps ``applicable_acls`` answers and the summaries of shared patterns
    (the index, over its generation cache)."""

    def cached_match(self, generation: int, key: tuple[int, str]) -> tuple[PatternAcls, ...] | None: ...

    def remember_match(
        self,
        generation: int,
        key: tuple[int, str],
        value: tuple[PatternAcls, ...],
        patterns: Mapping[tuple[int, int, str], PatternAcls],
    ) -> None: ...

    def cached_patterns(
        self, generation: int, keys: Iterable[tuple[int, int, str]]
    ) -> dict[tuple[int, int, str], PatternAcls]: ...


_ABSENT = PatternAcls()
"""The summary of a pattern without bindings, as the cache keeps it (never filled)."""
WHOLE_PATTERN_KEYS = 64
"""A pattern with at most this many bindings is summarized whole on first read; a larger one,
for a decision, principal by principal (:meth:`IndexView.applicable_acls_of`).  The bound
is what a first touch costs at most: finding that a pattern is large reads this many keys
plus one.  At 512, the first decision on each of the sidecar bench's 1,250-binding prefixes
read 513 keys, and those first touches were the cold p99 at 1M bindings (189 of 588 first
touches over 2 ms; at 64, 2 of 588).  Smaller patterns are still read whole: one scan,
then every principal answered from the cache."""


class IndexView:
    """A consistent read of the index, with the log position and settings it reflects.

    One view serves one request on one thread: its lookups share one RocksDB iterator.

    Implements the decision rules' ``AclView`` protocol (:mod:`store.authorizer`):
    ``applicable_acls`` summarizes the bindings of the patterns that apply to a resource
    (:func:`store.authorizer.applicable.applicable_patterns`, at the PREFIXED lengths the
    index holds), each read by one seek, and keeps the answer in the index's cache;
    ``acls_for_principal`` scans the by-principal table; ``bindings`` scans everything;
    ``listing`` reads DescribeAcls' answer in its order, as it is consumed.
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

    def applicable_acls(self, resource_type: ResourceType, name: str) -> tuple[PatternAcls, ...]:
        """The summaries of the live patterns that apply to the resource ``(resource_type, name)``,
        each whole (a partial one is completed here).

        On a miss, each pattern is read with one seek and summarized, except those the index
        keeps by pattern: the ones that apply to many names (PREFIXED ones and ``*``, an
        absent one as an empty summary).  A LITERAL name applies to itself only, and this
        answer is kept by name.  The cache is asked and told once each per miss.
        """
        return self._applicable(resource_type, name, None)

    def applicable_acls_of(
        self, principals: tuple[str, ...], resource_type: ResourceType, name: str
    ) -> tuple[PatternAcls, ...]:
        """:meth:`applicable_acls` for a request whose ACL principals are ``principals``: a
        pattern of more than :data:`WHOLE_PATTERN_KEYS` bindings is read for those principals
        only (one seek each: the pattern's keys are ordered by principal), into a summary that
        later requests fill further (:class:`~store.authorizer.grants.PartialPatternAcls`).
        A first request on a prefix that thousands of bindings share reads its own few."""
        return self._applicable(resource_type, name, principals)

    def _applicable(
        self, resource_type: ResourceType, name: str, principals: tuple[str, ...] | None
    ) -> tuple[PatternAcls, ...]:
        cache_key = (int(resource_type), name)
        hit = self._index.cached_match(self._generation, cache_key)
        if hit is not None:
            for cached in hit:
                if type(cached) is PartialPatternAcls:
                    self._fill(cached, principals)
            return hit
        rt = int(resource_type)
        keys = [
            (rt, int(pattern_type), pattern)
            for pattern_type, pattern in applicable_patterns(name, self._prefix_lengths.get(rt, ()))
        ]
        shared = [key for key in keys if key[1] == PREFIXED or key[2] == WILDCARD_RESOURCE]
        known = self._index.cached_patterns(self._generation, shared) if shared else {}
        read: dict[tuple[int, int, str], PatternAcls] = {}
        found: list[PatternAcls] = []
        for key in keys:
            summary = known.get(key)
            if summary is None:
                summary = self._read_pattern(*key, principals)
                if key[1] == PREFIXED or key[2] == WILDCARD_RESOURCE:
                    read[key] = summary
            elif type(summary) is PartialPatternAcls:
                self._fill(summary, principals)
            if summary.count or type(summary) is PartialPatternAcls:
                found.append(summary)
        result = tuple(found)
        self._index.remember_match(self._generation, cache_key, result, read)
        return result

    def _read_pattern(
        self, resource_type: int, pattern_type: int, name: str, principals: tuple[str, ...] | None
    ) -> PatternAcls:
        """The summary of one pattern's live bindings (:data:`_ABSENT`: none): whole, or for
        ``principals`` when the pattern has more than :data:`WHOLE_PATTERN_KEYS`."""
        prefix = pattern_prefix(resource_type, pattern_type, name)
        keys: list[bytes] = []
        for key in self._scan(prefix):
            keys.append(key)
            if principals is not None and len(keys) > WHOLE_PATTERN_KEYS:
                summary = PartialPatternAcls(prefix)
                self._fill(summary, principals)
                return summary
        return pattern_acls(decode_binding(k, 1) for k in keys) if keys else _ABSENT

    def _fill(self, summary: PartialPatternAcls, principals: tuple[str, ...] | None) -> None:
        """Load what ``summary`` lacks of ``principals`` (None: every principal) from this
        view's state: a cached summary's pattern has not changed since (a commit that
        changes a pattern drops its summary), so this view reads the state it was read at."""
        if summary.complete:
            return
        prefix = summary.key_prefix
        if principals is None:
            summary.load_all(decode_binding(k, 1) for k in self._scan(prefix))
            return
        for principal in principals:
            if principal not in summary.loaded:
                summary.load(principal, (decode_binding(k, 1) for k in self._scan(prefix + lp(principal))))

    def matching_acls(self, resource_type: ResourceType, name: str) -> tuple[AclBinding, ...]:
        """Every live binding whose pattern applies to the resource ``(resource_type, name)``."""
        return tuple(b for pattern in self.applicable_acls(resource_type, name) for b in pattern.bindings())

    def principal_acls(self, resource_type: ResourceType, principal: str) -> PrincipalAcls | None:
        """The summary of ``principal``'s live bindings on ``resource_type`` (None: none)."""
        return principal_acls(self.acls_for_principal(resource_type, principal), resource_type, principal)

    def acls_for_principal(self, resource_type: ResourceType, principal: str) -> tuple[AclBinding, ...]:
        """Every live binding of ``principal`` (exactly that string) on ``resource_type``."""
        prefix = BY_PRINCIPAL + lp(principal) + bytes((int(resource_type),))
        skip = len(prefix)
        return tuple(decode_binding(key, skip) for key in self._scan(prefix))

    def patterns(self) -> IndexPatterns:
        """The view's bindings pattern by pattern, in name order, read through its iterator
        (:class:`store.access_stream.PatternSource`: the streamed access diff reads them)."""
        return IndexPatterns(lambda: self._iter, self._prefix_lengths, lazy=False)

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

    def listing(
        self, filters: Sequence[AclBindingFilter], after: AclBinding | None = None
    ) -> Iterator[ListedResource]:
        """The bindings any of ``filters`` matches, in Kafka's DescribeAcls order, grouped by
        pattern (:mod:`replicator.index.listing`): read from this view's snapshot as the
        caller consumes them, never gathered.  With ``after``: only the bindings that come
        after it in that order (a cursor: the last binding a reader has; it need not be live)."""
        resume = None if after is None else order_key(encode_binding(after))
        return scan(self._iter, plan(filters, self._prefix_lengths), resume)

    def _pattern(self, resource_type: int, pattern_type: int, name: str) -> list[AclBinding]:
        prefix = pattern_prefix(resource_type, pattern_type, name)
        return [decode_binding(k, 1) for k in self._scan(prefix)]
