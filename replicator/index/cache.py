"""A bounded LRU cache of ``matching_acls`` answers that never serves a stale one.

Each answer is read from a view of one *generation* of the index; every commit that changes
a binding advances the generation and drops exactly the answers the change can affect: those
on its resource type whose name the changed pattern matches (the LITERAL name itself, every
name for the LITERAL ``*``, every name starting with a PREFIXED prefix).  The other answers
stay, since no binding they are made of changed.

An answer enters only if it was read at the current generation (a commit in between may
have changed it), and is served only to views at its generation or later (an older view
reads an older snapshot, which the answer may postdate).  So a view never sees an answer
from another state than its own.

Not thread-safe on its own: the index calls it under its lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass

from store.acl import WILDCARD_RESOURCE, AclBinding, PatternType

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
        self._entries: OrderedDict[CacheKey, tuple[int, tuple[AclBinding, ...]]] = OrderedDict()
        self.generation = 0
        self._hits = 0
        self._misses = 0
        self._invalidated = 0

    def get(self, generation: int, key: CacheKey) -> tuple[AclBinding, ...] | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] > generation:
            self._misses += 1
            return None
        self._entries.move_to_end(key)
        self._hits += 1
        return entry[1]

    def put(self, generation: int, key: CacheKey, value: tuple[AclBinding, ...]) -> None:
        if self._size <= 0 or generation != self.generation:
            return
        self._entries[key] = (generation, value)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def advance(self, changed: Collection[Pattern] | None) -> None:
        """A commit changed the bindings of ``changed`` patterns (None: too many to list)."""
        self.generation += 1
        if changed is None:
            self._invalidated += len(self._entries)
            self._entries.clear()
            return
        wildcard: set[int] = set()
        literals: set[CacheKey] = set()
        prefixes: dict[int, set[str]] = {}
        for resource_type, pattern_type, name in changed:
            if pattern_type == _LITERAL and name == WILDCARD_RESOURCE:
                wildcard.add(resource_type)
            elif pattern_type == _LITERAL:
                literals.add((resource_type, name))
            elif pattern_type == _PREFIXED:
                prefixes.setdefault(resource_type, set()).add(name)
        if not wildcard and not prefixes:
            for key in literals:
                if self._entries.pop(key, None) is not None:
                    self._invalidated += 1
            return
        lengths = {rt: sorted({len(p) for p in ps}) for rt, ps in prefixes.items()}
        doomed = [
            key
            for key in self._entries
            if key[0] in wildcard
            or key in literals
            or any(
                key[1][:length] in prefixes[key[0]]
                for length in lengths.get(key[0], ())
                if length <= len(key[1])
            )
        ]
        for key in doomed:
            del self._entries[key]
        self._invalidated += len(doomed)

    def clear(self) -> None:
        self._entries.clear()

    def figures(self) -> CacheFigures:
        return CacheFigures(
            size=len(self._entries),
            capacity=self._size,
            hits=self._hits,
            misses=self._misses,
            evicted_by_changes=self._invalidated,
        )
