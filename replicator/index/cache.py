"""A bounded LRU cache of ``applicable_acls`` answers that never serves a stale one.

Each answer is read from a view of one *generation* of the index; every commit that changes
a binding advances the generation and drops exactly the answers the change can affect: those
on its resource type whose name the changed pattern matches (the LITERAL name itself, every
name for the LITERAL ``*``, every name starting with a PREFIXED prefix).  The other answers
stay, since no binding they are made of changed.

An answer enters only if it was read at the current generation (a commit in between may
have changed it), and is served only to views at its generation or later (an older view
reads an older snapshot, which the answer may postdate).  So a view never sees an answer
from another state than its own.

Beside the answers it keeps the summaries of single patterns by pattern, under the same
rules (each dropped by a commit that changes its pattern), so that a pattern shared by many
names (``*``, a broad prefix) is read from RocksDB and summarized once, not once per name.

Not thread-safe on its own: the index calls it under its lock.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass

from store.acl import WILDCARD_RESOURCE, PatternType
from store.authorizer.grants import PatternAcls

CacheKey = tuple[int, str]
"""(resource type code, resource name)."""

Pattern = tuple[int, int, str]
"""(resource type code, pattern type code, name) of a binding that changed."""

_LITERAL = int(PatternType.LITERAL)
_PREFIXED = int(PatternType.PREFIXED)


@dataclass(frozen=True, slots=True)
class CacheFigures:
    size: int
    capacity: int
    hits: int
    misses: int
    evicted_by_changes: int


class MatchCache:
    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[CacheKey, tuple[int, tuple[PatternAcls, ...]]] = OrderedDict()
        # The cached names of each resource type, sorted: the names under a prefix are one run.
        self._names: dict[int, list[str]] = {}
        self._patterns: OrderedDict[Pattern, tuple[int, PatternAcls]] = OrderedDict()
        self.generation = 0
        self._hits = 0
        self._misses = 0
        self._invalidated = 0

    def get(self, generation: int, key: CacheKey) -> tuple[PatternAcls, ...] | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] > generation:
            self._misses += 1
            return None
        self._entries.move_to_end(key)
        self._hits += 1
        return entry[1]

    def put(self, generation: int, key: CacheKey, value: tuple[PatternAcls, ...]) -> None:
        if self._size <= 0 or generation != self.generation:
            return
        if key not in self._entries:
            bisect.insort(self._names.setdefault(key[0], []), key[1])
        self._entries[key] = (generation, value)
        if len(self._entries) > self._size:
            evicted, _ = self._entries.popitem(last=False)
            self._unlist(evicted)

    def get_pattern(self, generation: int, key: Pattern) -> PatternAcls | None:
        """The summary of one pattern read at ``generation`` or before it, if kept."""
        entry = self._patterns.get(key)
        if entry is None or entry[0] > generation:
            return None
        self._patterns.move_to_end(key)
        return entry[1]

    def put_pattern(self, generation: int, key: Pattern, value: PatternAcls) -> None:
        if self._size <= 0 or generation != self.generation:
            return
        self._patterns[key] = (generation, value)
        if len(self._patterns) > self._size:
            self._patterns.popitem(last=False)

    def _unlist(self, key: CacheKey) -> None:
        names = self._names[key[0]]
        del names[bisect.bisect_left(names, key[1])]

    def _drop(self, keys: Collection[CacheKey]) -> None:
        for key in keys:
            if self._entries.pop(key, None) is not None:
                self._unlist(key)
                self._invalidated += 1

    def advance(self, changed: Collection[Pattern] | None) -> None:
        """A commit changed the bindings of ``changed`` patterns (None: too many to list)."""
        self.generation += 1
        if changed is None:
            self._invalidated += len(self._entries)
            self.clear()
            return
        doomed: set[CacheKey] = set()
        for pattern in changed:
            self._patterns.pop(pattern, None)
        for resource_type, pattern_type, name in changed:
            names = self._names.get(resource_type, [])
            if pattern_type == _LITERAL and name == WILDCARD_RESOURCE:
                doomed.update((resource_type, n) for n in names)
            elif pattern_type == _LITERAL:
                doomed.add((resource_type, name))
            elif pattern_type == _PREFIXED:
                at = bisect.bisect_left(names, name)
                while at < len(names) and names[at].startswith(name):
                    doomed.add((resource_type, names[at]))
                    at += 1
        self._drop(doomed)

    def clear(self) -> None:
        self._entries.clear()
        self._names.clear()
        self._patterns.clear()

    def figures(self) -> CacheFigures:
        return CacheFigures(
            size=len(self._entries),
            capacity=self._size,
            hits=self._hits,
            misses=self._misses,
            evicted_by_changes=self._invalidated,
        )


class CachedAnswers:
    """What a view asks of its index's cache (:class:`~replicator.index.view.AnswerCache`),
    under the index's lock (``_cache_lock``): the writer's index and a follower share it."""

    _cache: MatchCache
    _cache_lock: AbstractContextManager[object]

    def cached_match(self, generation: int, key: CacheKey) -> tuple[PatternAcls, ...] | None:
        with self._cache_lock:
            return self._cache.get(generation, key)

    def cached_patterns(self, generation: int, keys: Iterable[Pattern]) -> dict[Pattern, PatternAcls]:
        """The summaries kept of the patterns ``keys`` (those kept: see :class:`MatchCache`)."""
        get = self._cache.get_pattern
        with self._cache_lock:
            return {key: found for key in keys if (found := get(generation, key)) is not None}

    def cache_figures(self) -> CacheFigures:
        with self._cache_lock:
            return self._cache.figures()

    def remember_match(
        self,
        generation: int,
        key: CacheKey,
        value: tuple[PatternAcls, ...],
        patterns: Mapping[Pattern, PatternAcls],
    ) -> None:
        """Keep an answer read at ``generation``, and the summaries of single ``patterns``
        read for it that apply to many names."""
        with self._cache_lock:
            self._cache.put(generation, key, value)
            for pattern, summary in patterns.items():
                self._cache.put_pattern(generation, pattern, summary)
