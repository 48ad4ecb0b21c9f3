"""A bounded LRU cache of ``matching_acls`` answers that never serves a stale one.

Each answer is read from a view of one *generation* of the index; a commit that changes a
binding advances the generation and empties the cache.  An answer enters the cache only if
it was read at the current generation, and a view asks only at its own generation, so a
value read before a commit can neither outlive it nor be served to a later view.

Not thread-safe on its own: the index calls it under its lock.
"""

from __future__ import annotations

from collections import OrderedDict

from store.acl import AclBinding

CacheKey = tuple[int, str]
"""(resource type code, resource name)."""


class MatchCache:
    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[CacheKey, tuple[AclBinding, ...]] = OrderedDict()
        self.generation = 0

    def get(self, generation: int, key: CacheKey) -> tuple[AclBinding, ...] | None:
        if generation != self.generation:
            return None
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
        return hit

    def put(self, generation: int, key: CacheKey, value: tuple[AclBinding, ...]) -> None:
        if self._size <= 0 or generation != self.generation:
            return
        self._entries[key] = value
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def advance(self) -> None:
        """A commit changed bindings: a new generation, nothing cached survives."""
        self.generation += 1
        self._entries.clear()

    def clear(self) -> None:
        self._entries.clear()
