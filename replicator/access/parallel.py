"""A downgrade check (or the format gate's) walked by several processes at once.

The walk of a large state is CPU work in Python, so one process uses one core.  Here the
worker's process reads its secondary instance of the index once, in walk order, each
pattern with its bindings' keys undecoded (:meth:`IndexPatterns.raw_patterns`); cuts each
resource type's patterns into parts between the root's subtrees
(:func:`store.access_stream.type_parts`); and hands the parts to a pool of processes, which
decode them, walk them (:func:`store.access_stream.walk_part`) and answer with their rows
as JSON text and the bindings the older reader ignores.  The parts' answers are taken in
part order; each type's root region is closed here, last (:func:`close_root`).  The rows are
the one-process walk's (:func:`store.access_stream.parted_diff` is this, in one process, and
the tests hold both to the pure engine); only their order follows the cut.

Every process reads the one state the reader read: the parts carry their bindings, so no
process opens the index again.  A few parts per process are in flight (:data:`IN_FLIGHT`:
enough that a slow part does not leave a process waiting), so the reader holds a few parts
of keys, and the answer is kept as text, not as objects.  Spawned (not
forked: the reader holds RocksDB open), the pool's processes inherit the worker's lower CPU
priority.
"""

from __future__ import annotations

import heapq
import itertools
import json
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from replicator.contract.access import DowngradeCheckAnswer, access_delta_json
from replicator.contract.bindings import binding_json
from replicator.index.patterns import BindingDecoder, IndexPatterns, RawListed
from store.access_diff import AccessDelta, Change
from store.access_stream import (
    CONCRETE_TYPES,
    DEFAULT_BUDGET,
    PREFIXED,
    Pattern,
    PatternSource,
    RowKey,
    StateChange,
    TypeFrame,
    close_root,
    type_frame,
    type_parts,
    walk_part,
)
from store.acl import AclBinding, ResourceType
from store.downgrade import SHOWN, DowngradeVerdict, refusal_for

PART_SIZE = 20_000
"""Bindings per part, at least (a subtree of the root is never cut)."""
IN_FLIGHT = 6
"""Parts handed to each process and not yet answered, at most."""
_COMPACT = (",", ":")

SortedText = tuple[tuple[Any, ...], str]
"""A binding's DescribeAcls sort key and its JSON text."""


@dataclass(slots=True)
class PartAnswer:
    """What one part (or a type's root) adds to the answer."""

    read: int = 0
    widened: list[str] = field(default_factory=list)
    """The widened rows' JSON text (with ``encode``; else none)."""
    narrowed: list[str] = field(default_factory=list)
    widened_count: int = 0
    narrowed_count: int = 0
    shown: list[AccessDelta] = field(default_factory=list)
    """The first widened rows (the gate's refusal names them)."""
    ignored: list[SortedText] = field(default_factory=list)
    """The bindings the older reader ignores, sorted (with ``encode``; else none)."""
    ignored_count: int = 0
    first_ignored: AclBinding | None = None
    held: dict[RowKey, list[AccessDelta]] = field(default_factory=dict)
    resource_type: ResourceType = ResourceType.UNKNOWN
    last: bool = False
    """The type's end (an empty part): its root is closed now."""


def part_answer(rows: list[AccessDelta], ignored: list[AclBinding], *, encode: bool) -> PartAnswer:
    """The rows and ignored bindings of a part as its answer (JSON text with ``encode``)."""
    out = PartAnswer(ignored_count=len(ignored))
    dumps = json.JSONEncoder(ensure_ascii=False, separators=_COMPACT).encode
    for row in rows:
        if row.change is Change.WIDENED:
            out.widened_count += 1
            if len(out.shown) < SHOWN:
                out.shown.append(row)
            if encode:
                out.widened.append(dumps(access_delta_json(row)))
        else:
            out.narrowed_count += 1
            if encode:
                out.narrowed.append(dumps(access_delta_json(row)))
    if ignored:
        keyed = sorted((b.sort_key(), b) for b in ignored)
        out.first_ignored = keyed[0][1]
        if encode:
            out.ignored = [(key, dumps(binding_json(b))) for key, b in keyed]
    return out


# --- a process of the pool --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Settings:
    change: StateChange
    budget: int
    encode: bool


_pool_settings: _Settings | None = None
_decoder = BindingDecoder()


def _start(settings: _Settings) -> None:
    global _pool_settings
    _pool_settings = settings


def decide_part(task: tuple[TypeFrame, list[RawListed]]) -> PartAnswer:
    """A pool process's work: one part decoded, walked and answered."""
    settings = _pool_settings
    assert settings is not None, "the pool's processes start with _start"
    frame, raw = task
    listed = [(pt, name, _decoder.listed(keys)) for pt, name, keys in raw]
    ignored: list[AclBinding] = []
    rows, held = walk_part(frame, settings.change, listed, budget=settings.budget,
                           on_dropped=ignored.append)  # fmt: skip
    answer = part_answer(rows, ignored, encode=settings.encode)
    answer.read = sum(len(bindings) for _, _, bindings in listed)
    answer.held, answer.resource_type, answer.last = held, frame.resource_type, not raw
    return answer


# --- the reader --------------------------------------------------------------------------------


@dataclass(slots=True)
class DowngradeDocument:
    """A downgrade check's answer as text, in parts (:func:`downgrade_in_parts`, or one part
    from a walk in one process: :meth:`of_answer`)."""

    to: int
    offset: int
    parts: list[PartAnswer]

    @classmethod
    def of_answer(cls, answer: DowngradeCheckAnswer) -> DowngradeDocument:
        rows = [*answer.widened, *answer.narrowed]
        return cls(answer.to, answer.offset, [part_answer(rows, answer.ignored, encode=True)])

    def summary(self) -> dict[str, Any]:
        """What a client needs before the rows: the verdict, how many bindings an older
        reader ignores, the offset (the node sends them as headers: ``Aclstore-Safe``...)."""
        return {"safe": self.widened == 0, "stopping": self.ignored, "offset": self.offset}

    @property
    def widened(self) -> int:
        return sum(p.widened_count for p in self.parts)

    @property
    def ignored(self) -> int:
        return sum(p.ignored_count for p in self.parts)

    def verdict(self) -> DowngradeVerdict:
        """The format gate's verdict (:meth:`DowngradeVerdict.of` of the same analysis)."""
        shown = [row for p in self.parts for row in p.shown][:SHOWN]
        firsts = [p.first_ignored for p in self.parts if p.first_ignored is not None]
        first = [min(firsts, key=AclBinding.sort_key)] if firsts else []
        widened, ignored = self.widened, self.ignored
        return DowngradeVerdict(refusal_for(self.to, ignored, first, widened, shown), ignored, widened)

    def write(self, out: BinaryIO) -> None:
        """The answer's body (a :class:`~replicator.contract.access.DowngradeCheckAnswer`),
        written piece by piece, each item of its lists on a line of its own (so that a
        client can print it as it comes and it still reads well); the ignored bindings
        merged into DescribeAcls order."""

        def write_list(key: str, texts: Iterator[str]) -> None:
            out.write(f',"{key}":['.encode())
            first = True
            for text in texts:
                out.write((b"\n" if first else b",\n") + text.encode("utf-8"))
                first = False
            out.write(b"]" if first else b"\n]")

        out.write(f'{{"safe":{json.dumps(self.widened == 0)},"to":{self.to}'.encode())
        write_list("ignored", (text for _, text in heapq.merge(*(p.ignored for p in self.parts))))
        out.write(f',"stopping":{self.ignored}'.encode())
        write_list("widened", (text for p in self.parts for text in p.widened))
        write_list("narrowed", (text for p in self.parts for text in p.narrowed))
        out.write(f',"offset":{self.offset}}}'.encode())


@dataclass(slots=True)
class _TypeWalk:
    """What the reader keeps of one type's walk for its root's close."""

    frame: TypeFrame
    ignored: list[AclBinding] = field(default_factory=list)
    """The frame's own bindings the older reader ignores (``*``'s and ``""``'s)."""
    carved: list[Pattern] = field(default_factory=list)
    held: dict[RowKey, list[AccessDelta]] = field(default_factory=dict)


class _Reader:
    """The pool's tasks: every type's parts in walk order (at least one per type, so that
    each type's root is closed), each handed out once a slot is free; read by the pool's
    feeding thread."""

    def __init__(self, patterns: IndexPatterns, source: PatternSource, change: StateChange,
                 part_size: int, slots: int) -> None:  # fmt: skip
        self.patterns, self.source, self.change, self.part_size = patterns, source, change, part_size
        self.slots = threading.BoundedSemaphore(slots)
        self.walks: dict[ResourceType, _TypeWalk] = {}

    def tasks(self) -> Iterator[tuple[TypeFrame, list[RawListed]]]:
        change = self.change
        types = set(self.source.resource_types())
        if change.settings_changed:  # a setting applies to the types without bindings too
            types |= set(CONCRETE_TYPES)
        for rt in sorted(types, key=int):
            ignored: list[AclBinding] = []
            frame = type_frame(self.source, change, rt, on_dropped=ignored.append)
            walk = self.walks[rt] = _TypeWalk(frame, ignored)
            parts = type_parts(self.patterns.raw_patterns(rt, ""), len, self.part_size)
            for part in itertools.chain(parts, [[]]):  # the last, empty: the type's end
                if frame.keys:
                    walk.carved.extend((pt, name) for pt, name, _ in part if (pt, name) != (PREFIXED, ""))
                self.slots.acquire()
                yield frame, part


def downgrade_in_parts(
    patterns: IndexPatterns,
    source: PatternSource,
    change: StateChange,
    to: int,
    offset: int,
    *,
    processes: int,
    encode: bool,
    part_size: int = PART_SIZE,
    budget: int = DEFAULT_BUDGET,
    on_part: Callable[[int], None] | None = None,
) -> DowngradeDocument:
    """The downgrade check of ``change`` (:meth:`StateChange.downgrade`) over the index
    ``patterns`` reads (``source``: the same read, decoded, for the frames), by ``processes``
    processes; ``on_part`` hears the bindings read so far after each part (progress, and a
    chance to stop)."""
    context = multiprocessing.get_context("spawn")
    answers: list[PartAnswer] = []
    read = 0
    reader = _Reader(patterns, source, change, part_size, processes * IN_FLIGHT)
    with context.Pool(processes, initializer=_start, initargs=(_Settings(change, budget, encode),)) as pool:
        for answer in pool.imap(decide_part, reader.tasks()):
            reader.slots.release()
            walk = reader.walks[answer.resource_type]
            for key, kids in answer.held.items():
                walk.held.setdefault(key, []).extend(kids)
            answer.held = {}
            if answer.last:  # the type's end: every part of it is in
                rows = close_root(walk.frame, change, walk.carved, walk.held)
                answer = part_answer(rows, walk.ignored, encode=encode)
            else:
                read += answer.read
                if on_part is not None:
                    on_part(read)
            answers.append(answer)
    return DowngradeDocument(to, offset, answers)
