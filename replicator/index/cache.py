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

Two bounds keep its memory steady: a number of answers (and as many pattern summaries), and
an estimate of the bytes of both (:mod:`.sizes`), which an operator sets as a memory budget.
The number alone did not bound the memory: an answer costs a few hundred bytes or, when its
patterns hold thousands of bindings, megabytes.

Not thread-safe on its own: the index calls it under its lock.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass

from replicator.index.sizes import answer_slot_bytes, pattern_slot_bytes, summary_bytes
from store.acl import WILDCARD_RESOURCE, PatternType
from store.authorizer.grants import PartialPatternAcls, PatternAcls

CacheKey = tuple[int, str]
"""(resource type code, resource name)."""

Pattern = tuple[int, int, str]
"""(resource type code, pattern type code, name) of a binding that changed."""

_LITERAL = int(PatternType.LITERAL)
_PREFIXED = int(PatternType.PREFIXED)
DEFAULT_CACHE_MAX_BYTES = 128 << 20
"""The estimated bytes a cache holds at most by default (128 MiB; ``aclstore serve
--replica-cache-mb``): what a process answering decisions adds to its memory once its
cache is full."""


@dataclass(frozen=True, slots=True)
class CacheFigures:
    size: int
    capacity: int
    hits: int
    misses: int
    evicted_by_changes: int
    bytes: int = 0
    """The estimated bytes of what the cache holds (:mod:`.sizes`)."""
    max_bytes: int = 0
    patterns: int = 0
    """Summaries of single patterns kept beside the answers."""
    evicted_by_bounds: int = 0
    """Answers and pattern summaries dropped to stay within ``capacity`` and ``max_bytes``."""


class _Slot:
    """One cached answer (its summaries) or one pattern's summary (a tuple of one)."""

    __slots__ = ("bytes", "generation", "partial", "tick", "value")

    def __init__(self, generation: int, value: tuple[PatternAcls, ...], tick: int, size: int) -> None:
        self.generation = generation
        self.value = value
        self.tick = tick
        """When it was last put or served: the older of the two LRU heads is evicted first."""
        self.bytes = size
        """The slot's own estimated bytes; its summaries are counted in ``_held``."""
        self.partial = any(type(summary) is PartialPatternAcls for summary in value)


class _Held:
    """A summary some slots hold, its estimated bytes and how many slots hold it: a summary
    shared by many answers (a prefix's, ``*``'s) is counted once."""

    __slots__ = ("bytes", "holders", "summary")

    def __init__(self, summary: PatternAcls) -> None:
        self.summary = summary  # keeps its id() unique while it is held
        self.bytes = summary_bytes(summary)
        self.holders = 0


class MatchCache:
    """``size`` bounds the answers and, apart, the pattern summaries kept; ``max_bytes`` the
    estimated bytes of both together (:mod:`.sizes`, each summary counted once however many
    answers share it).  Past either bound the least recently used answer or pattern summary
    goes first.  A partial summary grows as requests fill it: its bytes are counted again each
    time it is served from here (and the bound applied then), so the count lags its last fill."""

    def __init__(self, size: int, max_bytes: int = DEFAULT_CACHE_MAX_BYTES) -> None:
        if size < 0 or max_bytes < 0:
            raise ValueError(f"a cache's size and max_bytes are >= 0, got {size} and {max_bytes}")
        self._size = size
        self._max_bytes = max_bytes
        self._entries: OrderedDict[CacheKey, _Slot] = OrderedDict()
        # The cached names of each resource type, sorted: the names under a prefix are one run.
        self._names: dict[int, list[str]] = {}
        self._patterns: OrderedDict[Pattern, _Slot] = OrderedDict()
        self._held: dict[int, _Held] = {}
        self._bytes = 0
        self._tick = 0
        self.generation = 0
        self._hits = 0
        self._misses = 0
        self._invalidated = 0
        self._evicted = 0

    @property
    def enabled(self) -> bool:
        return self._size > 0 and self._max_bytes > 0

    def get(self, generation: int, key: CacheKey) -> tuple[PatternAcls, ...] | None:
        slot = self._entries.get(key)
        if slot is None or slot.generation > generation:
            self._misses += 1
            return None
        self._entries.move_to_end(key)
        self._hits += 1
        self._touch(slot)
        return slot.value

    def put(self, generation: int, key: CacheKey, value: tuple[PatternAcls, ...]) -> None:
        if not self.enabled or generation != self.generation:
            return
        old = self._entries.pop(key, None)
        if old is None:
            bisect.insort(self._names.setdefault(key[0], []), key[1])
        else:
            self._release(old)
        self._entries[key] = self._hold(generation, value, answer_slot_bytes(key[1]))
        self._bound()

    def get_pattern(self, generation: int, key: Pattern) -> PatternAcls | None:
        """The summary of one pattern read at ``generation`` or before it, if kept."""
        slot = self._patterns.get(key)
        if slot is None or slot.generation > generation:
            return None
        self._patterns.move_to_end(key)
        self._touch(slot)
        return slot.value[0]

    def put_pattern(self, generation: int, key: Pattern, value: PatternAcls) -> None:
        if not self.enabled or generation != self.generation:
            return
        old = self._patterns.pop(key, None)
        if old is not None:
            self._release(old)
        self._patterns[key] = self._hold(generation, (value,), pattern_slot_bytes(key[2]))
        self._bound()

    # -- the bounds ----------------------------------------------------------------------------

    def _hold(self, generation: int, value: tuple[PatternAcls, ...], size: int) -> _Slot:
        self._tick += 1
        slot = _Slot(generation, value, self._tick, size)
        self._bytes += size
        for summary in value:
            held = self._held.get(id(summary))
            if held is None:
                held = self._held[id(summary)] = _Held(summary)
                self._bytes += held.bytes
            held.holders += 1
        return slot

    def _release(self, slot: _Slot) -> None:
        self._bytes -= slot.bytes
        for summary in slot.value:
            held = self._held[id(summary)]
            held.holders -= 1
            if held.holders == 0:
                del self._held[id(summary)]
                self._bytes -= held.bytes

    def _touch(self, slot: _Slot) -> None:
        self._tick += 1
        slot.tick = self._tick
        if slot.partial:  # filled since it was counted, maybe
            for summary in slot.value:
                held = self._held[id(summary)]
                grown = summary_bytes(summary) - held.bytes
                held.bytes += grown
                self._bytes += grown
            self._bound()

    def _bound(self) -> None:
        """Evict least recently used slots until both bounds hold."""
        entries, patterns = self._entries, self._patterns
        while len(entries) > self._size:
            self._evict_answer()
        while len(patterns) > self._size:
            self._evict_pattern()
        while self._bytes > self._max_bytes and (entries or patterns):
            oldest_answer = next(iter(entries.values())).tick if entries else None
            oldest_pattern = next(iter(patterns.values())).tick if patterns else None
            if oldest_pattern is None or (oldest_answer is not None and oldest_answer < oldest_pattern):
                self._evict_answer()
            else:
                self._evict_pattern()

    def _evict_answer(self) -> None:
        key, slot = self._entries.popitem(last=False)
        self._unlist(key)
        self._release(slot)
        self._evicted += 1

    def _evict_pattern(self) -> None:
        _, slot = self._patterns.popitem(last=False)
        self._release(slot)
        self._evicted += 1

    # -- changes -------------------------------------------------------------------------------

    def _unlist(self, key: CacheKey) -> None:
        names = self._names[key[0]]
        del names[bisect.bisect_left(names, key[1])]

    def _drop(self, keys: Collection[CacheKey]) -> None:
        for key in keys:
            slot = self._entries.pop(key, None)
            if slot is not None:
                self._unlist(key)
                self._release(slot)
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
            slot = self._patterns.pop(pattern, None)
            if slot is not None:
                self._release(slot)
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
        self._held.clear()
        self._bytes = 0

    def figures(self) -> CacheFigures:
        return CacheFigures(
            size=len(self._entries),
            capacity=self._size,
            hits=self._hits,
            misses=self._misses,
            evicted_by_changes=self._invalidated,
            bytes=self._bytes,
            max_bytes=self._max_bytes,
            patterns=len(self._patterns),
            evicted_by_bounds=self._evicted,
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
