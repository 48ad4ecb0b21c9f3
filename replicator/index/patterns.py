"""The index's bindings pattern by pattern, in name order: what the streamed access diff
reads (:class:`store.access_stream.PatternSource`).

The by-pattern table (``B | rt | pt | len | name | ...``, :mod:`replicator.encoding`) is
sorted by resource type, pattern type and name *length* first, so a type's names in name
order are the merge of one sorted run per (pattern type, length) that occurs.  The runs are
found by skipping from length to length (one seek per length in use), and the names under a
prefix by seeking, in each run, to the prefix: a subtree is a few seeks and a scan of its
own keys, never of the table.

Two ways to read: ``lazy`` gives each run an iterator of its own (a secondary instance,
which nothing writes to while it is read, or any read where each run may be a separate
snapshot); otherwise every read goes through the one iterator given, and a subtree's runs
are read into memory before they are merged (a consistent read of the primary, whose
iterators are each a snapshot of their own: a small subtree, bounded by the caller).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from replicator.encoding import BY_PATTERN, pattern_prefix
from store.access_stream import Listed, merge_by_name
from store.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

_U32 = struct.Struct(">I")
_HEAD = 7  # B, rt, pt, the name's length
_ORDER = (int(PatternType.PREFIXED), int(PatternType.LITERAL))
_TYPES = {int(v): v for v in ResourceType}
_PATTERNS = {int(v): v for v in PatternType}
_OPERATIONS = {int(v): v for v in AclOperation}
_PERMISSIONS = {int(v): v for v in AclPermissionType}
_ENTRIES_KEPT = 200_000
"""Distinct entries (principal, host, operation, permission) decoded once and reused; the
memo is emptied beyond this, so that it stays bounded on any state."""


class BindingDecoder:
    """``B`` keys to bindings, each pattern built once per run of keys and each entry
    (principal, host, operation, permission) once while the memo holds it: a state's
    bindings share far fewer entries than there are bindings."""

    def __init__(self) -> None:
        self._entries: dict[bytes, AccessControlEntry] = {}

    def pattern(self, key: bytes) -> ResourcePattern:
        size = _U32.unpack_from(key, 3)[0]
        name = key[_HEAD : _HEAD + size].decode("utf-8", "surrogatepass")
        return ResourcePattern(
            resource_type=_TYPES.get(key[1], ResourceType.UNKNOWN), name=name,
            pattern_type=_PATTERNS.get(key[2], PatternType.UNKNOWN),
        )  # fmt: skip

    def binding(self, key: bytes, pattern: ResourcePattern, at: int) -> AclBinding:
        """The binding of ``key``, whose entry starts at ``at`` (after the name)."""
        tail = key[at:]
        entry = self._entries.get(tail)
        if entry is None:
            size = _U32.unpack_from(tail, 0)[0]
            principal = tail[4 : 4 + size].decode("utf-8", "surrogatepass")
            pos = 4 + size
            size = _U32.unpack_from(tail, pos)[0]
            host = tail[pos + 4 : pos + 4 + size].decode("utf-8", "surrogatepass")
            pos += 4 + size
            entry = AccessControlEntry(
                principal=principal, host=host,
                operation=_OPERATIONS.get(tail[pos], AclOperation.UNKNOWN),
                permission_type=_PERMISSIONS.get(tail[pos + 1], AclPermissionType.UNKNOWN),
            )  # fmt: skip
            if len(self._entries) >= _ENTRIES_KEPT:
                self._entries.clear()
            self._entries[tail] = entry
        return AclBinding(pattern=pattern, entry=entry)

    def listed(self, keys: list[bytes]) -> list[AclBinding]:
        """The bindings of one pattern's keys (:meth:`IndexPatterns.raw_patterns`)."""
        if not keys:
            return []
        pattern = self.pattern(keys[0])
        end = _HEAD + _U32.unpack_from(keys[0], 3)[0]
        return [self.binding(key, pattern, end) for key in keys]


RawListed = tuple[PatternType, str, list[bytes]]
"""A pattern and its bindings' ``B`` keys, undecoded."""


class IndexPatterns:
    """A :class:`store.access_stream.PatternSource` over the ``acl`` column family.

    ``iterator`` makes a RocksDB iterator over the column family (``lazy``: one per run;
    otherwise it is called once and that iterator reads everything); ``prefix_lengths`` are
    the PREFIXED name lengths in use per resource type code (the index's meta).
    """

    def __init__(
        self,
        iterator: Callable[[], Any],
        prefix_lengths: Mapping[int, Sequence[int]],
        *,
        lazy: bool,
        decoder: BindingDecoder | None = None,
    ) -> None:
        self._new = iterator
        self._lazy = lazy
        self._shared = None if lazy else iterator()
        self._lengths = prefix_lengths
        self.decoder = decoder or BindingDecoder()

    def _iterator(self) -> Any:
        return self._new() if self._shared is None else self._shared

    def resource_types(self) -> Iterable[ResourceType]:
        found: list[ResourceType] = []
        it = self._iterator()
        code = 0
        while code < 256:
            it.seek(BY_PATTERN + bytes((code,)))
            if not it.valid():
                break
            key: bytes = it.key()
            if not key.startswith(BY_PATTERN):
                break
            code = key[1]
            found.append(_TYPES.get(code, ResourceType.UNKNOWN))
            code += 1
        return found

    def prefix_lengths(self, resource_type: ResourceType) -> Sequence[int]:
        return tuple(self._lengths.get(int(resource_type), ()))

    def bindings_of(
        self, resource_type: ResourceType, pattern_type: PatternType, name: str
    ) -> list[AclBinding]:
        it = self._iterator()
        prefix = pattern_prefix(int(resource_type), int(pattern_type), name)
        it.seek(prefix)
        out: list[AclBinding] = []
        pattern: ResourcePattern | None = None
        while it.valid():
            key: bytes = it.key()
            if not key.startswith(prefix):
                break
            if pattern is None:
                pattern = self.decoder.pattern(key)
            out.append(self.decoder.binding(key, pattern, len(prefix)))
            it.next()
        return out

    def patterns(self, resource_type: ResourceType, under: str) -> Iterator[Listed]:
        runs: list[Iterator[Listed]] = []
        for start in self._run_starts(resource_type, under):
            if self._lazy:
                runs.append(self._run(self._new(), start))
            else:  # one iterator for all: read the run now
                runs.append(iter(list(self._run(self._shared, start))))
        return merge_by_name(runs)

    def raw_patterns(self, resource_type: ResourceType, under: str) -> Iterator[RawListed]:
        """:meth:`patterns` with each pattern's bindings as their keys, undecoded (see
        :meth:`BindingDecoder.listed`): what a reader that hands patterns on to other
        processes reads.  ``lazy`` sources only."""
        if not self._lazy:
            raise ValueError("raw patterns are read from a lazy source (an iterator per run)")
        return merge_by_name(
            ((p.pattern_type, p.name, keys) for p, keys in self._raw_run(self._new(), start))
            for start in self._run_starts(resource_type, under)
        )

    def _run_starts(self, resource_type: ResourceType, under: str) -> list[bytes]:
        """Where each (pattern type, length) run's names under ``under`` start."""
        under_bytes = under.encode("utf-8", "surrogatepass")
        starts: list[bytes] = []
        for pt in _ORDER:
            head = BY_PATTERN + bytes((int(resource_type), pt))
            starts.extend(head + _U32.pack(length) + under_bytes
                          for length in self._lengths_with(head, under_bytes))  # fmt: skip
        return starts

    def _lengths_with(self, head: bytes, under: bytes) -> list[int]:
        """The name lengths (bytes) of the runs of ``head`` that hold a name under ``under``."""
        it = self._iterator()
        found: list[int] = []
        length = len(under)
        while True:
            it.seek(head + _U32.pack(length) + under)
            if not it.valid():
                return found
            key: bytes = it.key()
            if not key.startswith(head):
                return found
            at = _U32.unpack_from(key, 3)[0]
            if at != length:  # no name of this length under it: go to the next length in use
                length = at
                continue
            if key[_HEAD : _HEAD + length].startswith(under):
                found.append(length)
            length += 1

    def _raw_run(self, it: Any, start: bytes) -> Iterator[tuple[ResourcePattern, list[bytes]]]:
        """One run's patterns from ``start`` (a run's head and the prefix they are under),
        each with its keys."""
        it.seek(start)
        end = _HEAD + _U32.unpack_from(start, 3)[0]
        group = b""
        pattern: ResourcePattern | None = None
        keys: list[bytes] = []
        while it.valid():
            key: bytes = it.key()
            if not key.startswith(start):
                break
            if pattern is None or not key.startswith(group):
                if pattern is not None:
                    yield pattern, keys
                group = key[:end]
                pattern = self.decoder.pattern(key)
                keys = []
            keys.append(key)
            it.next()
        if pattern is not None:
            yield pattern, keys

    def _run(self, it: Any, start: bytes) -> Iterator[Listed]:
        """One run's patterns from ``start``, decoded."""
        binding = self.decoder.binding
        end = _HEAD + _U32.unpack_from(start, 3)[0]
        for pattern, keys in self._raw_run(it, start):
            yield pattern.pattern_type, pattern.name, [binding(key, pattern, end) for key in keys]

    def count_under(self, resource_type: ResourceType, under: str, limit: int) -> int:
        """How many bindings of the type have a pattern name under ``under``, counted up to
        ``limit`` (more: ``limit``)."""
        it = self._iterator()
        count = 0
        for start in self._run_starts(resource_type, under):
            it.seek(start)
            while it.valid() and it.key().startswith(start):
                count += 1
                if count >= limit:
                    return limit
                it.next()
        return count
