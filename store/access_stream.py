"""The access diff of a large state, streamed: walked in name order, decided in parts of
bounded size, the same rows as :func:`store.access_diff.compact` of
:func:`store.access_diff.access_diff`.

A state too large to hold at once (a node's index) is read pattern by pattern in name order
(:class:`PatternSource`), and the change to judge is given as a :class:`StateChange` (the
bindings a dry run adds and removes, or the rule by which an older reader drops bindings)
rather than as a second state.  In name order a prefix comes right before the names under
it, so the patterns form a tree walked depth first: every region (see
:mod:`store.access_diff`) is keyed by a node, and the bindings that apply to it are its own
and those of the prefixes on the path above it, and ``*``.

* A prefix whose whole subtree fits the ``budget`` (bindings) is decided with its subtree, in
  one :func:`store.access_diff.partial_diff` with the other complete subtrees waiting
  (a *part*): its region's name set needs every pattern under it, and the rows of the
  regions under it fold into its rows (:func:`store.access_diff.compact`).
* A prefix whose subtree outgrows the budget becomes an *upper* node: its subtrees are
  decided as they complete, while it waits on the path (its bindings apply to all of them).
  Its own rows are known when it is reached (they depend only on the bindings that apply to
  its region), so the rows of its direct children that fold into them are held back; when
  it closes, its region is decided with the names under it (names only: a row lists them),
  and the held rows are folded into its rows.  The root (the names no pattern takes) is
  always such a node.

Memory: the bindings of one part (about ``budget``), the path from the root, and for an upper
node whose rows exist, the names under it and the rows that fold into its rows: what its rows
list anyway.  A dry run (:meth:`StateChange.focus`) walks only the subtrees of the patterns
it changes.

Pure: no I/O; the sources are the caller's (an index reads its tables by key ranges).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Protocol, TypeVar

from store.access_diff import (
    AccessDelta,
    AclState,
    _merged,
    _row_key,
    older_reader_state,
    partial_diff,
)
from store.acl import WILDCARD_RESOURCE, AclBinding, PatternType, ResourceType
from store.events import CONFIG_EVENT_MIN_READER_VERSION, binding_min_reader_version, binding_requirement_key

DEFAULT_BUDGET: Final = 20_000
"""Bindings decided together at most (a part), unless one pattern alone has more."""

LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
CONCRETE_TYPES: Final = tuple(t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN))

Pattern = tuple[PatternType, str]
T = TypeVar("T")
Listed = tuple[PatternType, str, list[AclBinding]]
"""A pattern and its bindings, as a source lists it."""


class PatternSource(Protocol):
    """A live state as the streamed diff reads it: pattern by pattern, in name order."""

    def resource_types(self) -> Iterable[ResourceType]:
        """The resource types with at least one binding."""
        ...

    def patterns(self, resource_type: ResourceType, under: str) -> Iterator[Listed]:
        """Every LITERAL and PREFIXED pattern of the type whose name starts with ``under``
        (``""``: all), with its bindings, in name order; a PREFIXED pattern before the
        LITERAL of the same name."""
        ...

    def bindings_of(self, resource_type: ResourceType, pattern_type: PatternType,
                    name: str) -> list[AclBinding]:  # fmt: skip
        """The bindings of one pattern (none: an empty list)."""
        ...

    def prefix_lengths(self, resource_type: ResourceType) -> Sequence[int]:
        """The lengths of the PREFIXED names of the type, ascending (more is harmless)."""
        ...


@dataclass(frozen=True, slots=True)
class StateChange:
    """The state after, as a change of the state before: bindings added, bindings removed
    (absent ones are ignored), bindings dropped by a rule (an older reader's), and the
    settings of both (the states' bindings are not read)."""

    before: AclState
    after: AclState
    added: frozenset[AclBinding] = frozenset()
    removed: frozenset[AclBinding] = frozenset()
    drops: Callable[[AclBinding], bool] | None = None

    @classmethod
    def between(cls, before: AclState, after: AclState) -> StateChange:
        """The change that makes ``after`` of ``before`` (for tests and small states)."""
        return cls(
            _settings(before), _settings(after),
            added=after.bindings - before.bindings, removed=before.bindings - after.bindings,
        )  # fmt: skip

    @classmethod
    def of_bindings(
        cls, settings: AclState, added: Iterable[AclBinding] = (), removed: Iterable[AclBinding] = ()
    ) -> StateChange:
        """A dry run: ``added`` created and ``removed`` deleted, the settings unchanged."""
        same = _settings(settings)
        return cls(same, same, frozenset(added), frozenset(removed))

    @classmethod
    def downgrade(
        cls, settings: AclState, reader_version: int, local_super_users: Iterable[str] = ()
    ) -> StateChange:
        """What a reader of ``reader_version`` (the ``ignore`` policy) decides from instead:
        :func:`store.access_diff.older_reader_state`, binding by binding.  ``local_super_users``
        (a node's static ``super.users``) count on both sides."""
        local = frozenset(local_super_users)
        older, _ = older_reader_state(_settings(settings), reader_version)
        now = AclState(frozenset(), settings.super_users | local, settings.allow_everyone_if_no_acl_found)
        then = AclState(frozenset(), older.super_users | local, older.allow_everyone_if_no_acl_found)
        return cls(now, then, drops=_Drops(reader_version))

    @property
    def settings_changed(self) -> bool:
        b, a = self.before, self.after
        return (b.super_users, b.allow_everyone_if_no_acl_found) != (
            a.super_users, a.allow_everyone_if_no_acl_found
        )  # fmt: skip

    def focus(self) -> dict[ResourceType, set[Pattern]] | None:
        """The patterns whose regions can differ, by type; None: every region (the settings
        change, or a rule drops bindings wherever they are)."""
        if self.settings_changed or self.drops is not None:
            return None
        out: dict[ResourceType, set[Pattern]] = {}
        for b in self.added | self.removed:
            out.setdefault(b.resource_type, set()).add((b.pattern_type, b.name))
        return out


class _Drops:
    """An older reader's rule, asked once per requirement key (a few dozen)."""

    def __init__(self, reader_version: int) -> None:
        self.reader_version = reader_version
        self.known: dict[tuple[object, ...], bool] = {}

    def __call__(self, binding: AclBinding) -> bool:
        key = binding_requirement_key(binding)
        drop = self.known.get(key)
        if drop is None:
            drop = self.known[key] = binding_min_reader_version(binding) > self.reader_version
        return drop


def _settings(state: AclState) -> AclState:
    return AclState(frozenset(), state.super_users, state.allow_everyone_if_no_acl_found)


def reader_sees_settings(reader_version: int) -> bool:
    """Whether a reader of that format reads ``super.users`` and the default from the log."""
    return reader_version >= CONFIG_EVENT_MIN_READER_VERSION


@dataclass(slots=True)
class WalkFigures:
    """How far a walk got: bindings read from the source, dropped by the change's rule."""

    read: int = 0
    dropped: int = 0


def streamed_diff(
    source: PatternSource,
    change: StateChange,
    *,
    budget: int = DEFAULT_BUDGET,
    figures: WalkFigures | None = None,
    on_dropped: Callable[[AclBinding], None] | None = None,
    on_read: Callable[[int], None] | None = None,
) -> Iterator[AccessDelta]:
    """The rows of :func:`store.access_diff.compact` of the diff the change makes, in walk
    order (by resource type, then name; a prefix's rows after those under it).

    ``on_dropped`` hears each binding the change's rule drops (an older reader's ignored
    ones), ``on_read`` the number of bindings read so far, now and then (progress).
    """
    if budget < 1:
        raise ValueError(f"budget must be at least 1 binding, got {budget}")
    figures = figures if figures is not None else WalkFigures()
    added: dict[ResourceType, dict[Pattern, list[AclBinding]]] = {}
    for b in change.added:
        added.setdefault(b.resource_type, {}).setdefault((b.pattern_type, b.name), []).append(b)
    reader = _Reader(source, change, added, figures, on_dropped, on_read)
    focus = change.focus()
    if focus is None:
        types = set(source.resource_types()) | set(added)
        if change.settings_changed:
            types |= set(CONCRETE_TYPES)
        for rt in sorted(types, key=int):
            yield from _Walk(rt, reader, change, budget, "").run()
        return
    for rt in sorted(focus, key=int):
        yield from _focused(rt, reader, change, budget, focus[rt])


def _focused(rt: ResourceType, reader: _Reader, change: StateChange, budget: int,
             patterns: set[Pattern]) -> Iterator[AccessDelta]:  # fmt: skip
    """The regions of one type that changed patterns apply to: a changed ``*`` or ``""``
    applies to every name; a changed prefix to its subtree; a changed literal to itself."""
    if (LITERAL, WILDCARD_RESOURCE) in patterns or (PREFIXED, "") in patterns:
        yield from _Walk(rt, reader, change, budget, "").run()
        return
    prefixes = sorted(n for pt, n in patterns if pt is PREFIXED)
    tops = [p for i, p in enumerate(prefixes) if not any(p.startswith(q) for q in prefixes[:i])]
    for name in sorted(n for pt, n in patterns if pt is LITERAL):
        if not any(name.startswith(p) for p in tops):
            yield from _literal_alone(rt, reader, change, name)
    for prefix in tops:
        yield from _Walk(rt, reader, change, budget, prefix, scoped=True).run()


_Sides = tuple[list[AclBinding], list[AclBinding]]


class _Reader:
    """The source's patterns with the change applied: (pattern type, name, before, after)."""

    def __init__(
        self,
        source: PatternSource,
        change: StateChange,
        added: dict[ResourceType, dict[Pattern, list[AclBinding]]],
        figures: WalkFigures,
        on_dropped: Callable[[AclBinding], None] | None,
        on_read: Callable[[int], None] | None,
    ) -> None:
        self.source, self.change, self.added = source, change, added
        self.figures, self.on_dropped, self.on_read = figures, on_dropped, on_read
        self._reported = 0

    def sides(self, rt: ResourceType, pt: PatternType, name: str, before: list[AclBinding]) -> _Sides:
        change = self.change
        self.figures.read += len(before)
        if self.on_read is not None and self.figures.read - self._reported >= 10_000:
            self._reported = self.figures.read
            self.on_read(self.figures.read)
        after = before
        drops, removed = change.drops, change.removed
        if drops is not None:
            kept = []
            for b in before:
                if drops(b):
                    self.figures.dropped += 1
                    if self.on_dropped is not None:
                        self.on_dropped(b)
                else:
                    kept.append(b)
            after = kept
        if removed:
            after = [b for b in after if b not in removed]
        new = self.added.get(rt, {}).get((pt, name))
        if new:
            have = set(before)
            after = [*after, *(b for b in new if b not in have)]
        return before, after

    def lookup(self, rt: ResourceType, pt: PatternType, name: str) -> _Sides:
        """One pattern's sides, by a point read."""
        return self.sides(rt, pt, name, self.source.bindings_of(rt, pt, name))

    def stream(
        self, rt: ResourceType, under: str, known: Mapping[Pattern, _Sides]
    ) -> Iterator[tuple[PatternType, str, _Sides]]:
        """The type's patterns under ``under`` in name order, the added ones merged in;
        ``known``: the sides of patterns read already (by :meth:`lookup`), not read again."""
        new = sorted(
            ((_order(pt, n), pt, n) for pt, n in self.added.get(rt, {}) if n.startswith(under)),
            key=lambda item: item[0],
        )
        listed = ((_order(pt, n), pt, n, bs) for pt, n, bs in self.source.patterns(rt, under))
        pending = iter(new)
        upcoming = next(pending, None)
        for order, pt, name, bindings in listed:
            while upcoming is not None and upcoming[0] < order:
                yield upcoming[1], upcoming[2], self.sides(rt, upcoming[1], upcoming[2], [])
                upcoming = next(pending, None)
            if upcoming is not None and upcoming[0] == order:
                upcoming = next(pending, None)  # a pattern that exists: its bindings are merged
            seen = known.get((pt, name))
            yield pt, name, seen if seen is not None else self.sides(rt, pt, name, bindings)
        while upcoming is not None:
            seen = known.get((upcoming[1], upcoming[2]))
            sides = seen if seen is not None else self.sides(rt, upcoming[1], upcoming[2], [])
            yield upcoming[1], upcoming[2], sides
            upcoming = next(pending, None)


def _order(pt: PatternType, name: str) -> tuple[str, int]:
    """Walk order: by name, a PREFIXED pattern (the parent) before the LITERAL of its name."""
    return name, 0 if pt is PREFIXED else 1


def merge_by_name(
    runs: Iterable[Iterator[tuple[PatternType, str, T]]],
) -> Iterator[tuple[PatternType, str, T]]:
    """Runs each in walk order (an index's per-length tables) merged into one."""
    keyed = (((_order(pt, n), pt, n, bs) for pt, n, bs in run) for run in runs)
    for _, pt, name, bindings in heapq.merge(*keyed, key=lambda item: item[0]):
        yield pt, name, bindings


Item = tuple[PatternType, str, _Sides]
RowKey = tuple[object, ...]


@dataclass(slots=True, eq=False)
class _Node:
    """A PREFIXED pattern on the walk's path (or the root): what waits for its subtree."""

    name: str
    sides: _Sides
    parent: _Node | None
    own: Item | None = None
    """A node not yet upper: its own pattern, decided with its subtree."""
    units: list[list[Item]] = field(default_factory=list)
    """A node not yet upper: its complete child subtrees."""
    size: int = 0
    """A node not yet upper: the bindings of ``own`` and ``units``."""
    upper: bool = False
    decided: bool = True
    """False for the top of a focused walk: a region the change does not reach."""
    keys: frozenset[RowKey] = frozenset()
    """An upper node: the keys of its region's rows (:func:`store.access_diff._row_key`)."""
    carved: list[Pattern] | None = None
    """An upper node with rows: the patterns under it (its name set carves them out)."""
    held: dict[RowKey, list[AccessDelta]] = field(default_factory=dict)
    """An upper node: its children's rows that fold into its rows."""

    def path_sides(self) -> _Sides:
        """The bindings of this node and every node above it."""
        before: list[AclBinding] = []
        after: list[AclBinding] = []
        node: _Node | None = self
        while node is not None:
            before.extend(node.sides[0])
            after.extend(node.sides[1])
            node = node.parent
        return before, after


def _size(sides: _Sides) -> int:
    return len(sides[0]) + len(sides[1])


class _Walk:
    """One resource type's patterns under ``top`` walked as a tree (see the module's doc).

    ``scoped``: the walk covers the subtree of the prefix ``top`` only (a dry run's changed
    prefix): the patterns above it are read by point lookups and their regions, which the
    change does not reach, are not decided.  Otherwise ``top`` is ``""``: the root region
    (the names no pattern takes) is decided too.
    """

    def __init__(self, rt: ResourceType, reader: _Reader, change: StateChange, budget: int,
                 top: str, *, scoped: bool = False, frame: TypeFrame | None = None) -> None:  # fmt: skip
        self.rt, self.reader, self.change, self.budget = rt, reader, change, budget
        self.top, self.scoped = top, scoped
        self.star = reader.lookup(rt, LITERAL, WILDCARD_RESOURCE) if frame is None else frame.star
        if frame is not None:  # a part of the type's walk (see walk_part): the root is shared
            self.root = _Node("", frame.root, None, upper=True, keys=frame.keys)
        elif scoped:
            above: _Sides = ([], [])
            lengths = sorted({*reader.source.prefix_lengths(rt), *(
                len(n) for pt, n in reader.added.get(rt, {}) if pt is PREFIXED)})  # fmt: skip
            for length in lengths:
                if length >= len(top):
                    break
                sides = reader.lookup(rt, PREFIXED, top[:length])
                above[0].extend(sides[0])
                above[1].extend(sides[1])
            self.root = _Node(top, above, None, upper=True, decided=False)
        else:
            self.root = _Node("", reader.lookup(rt, PREFIXED, ""), None, upper=True)
        self.stack: list[_Node] = [self.root]
        self.pending: list[tuple[list[Item], _Node]] = []
        self.pending_size = 0
        self.buffered = 0
        self.out: list[AccessDelta] = []

    # --- deciding ---------------------------------------------------------------------------

    def _states(self, sides: Iterable[_Sides]) -> tuple[AclState, AclState]:
        before: set[AclBinding] = set(self.star[0])
        after: set[AclBinding] = set(self.star[1])
        for b, a in sides:
            before.update(b)
            after.update(a)
        c = self.change
        return (
            AclState(frozenset(before), c.before.super_users, c.before.allow_everyone_if_no_acl_found),
            AclState(frozenset(after), c.after.super_users, c.after.allow_everyone_if_no_acl_found),
        )

    def _region_rows(self, node: _Node, carved: Iterable[Pattern]) -> list[AccessDelta]:
        """The rows of a prefix node's own region."""
        before, after = self._states([node.path_sides()])
        name = node.name
        diff = partial_diff(
            before, after, self.rt, lambda key: False, carved=carved, folded=True,
            owns_prefix=lambda key: key == name,
        )  # fmt: skip
        return [*diff.widened, *diff.narrowed]

    def _make_upper(self, node: _Node) -> None:
        """From now on ``node`` waits on the path while its subtrees are decided."""
        node.upper = True
        if node.own is not None:
            node.sides = node.own[2]
            node.own = None
        for unit in node.units:
            self.pending.append((unit, node))
            self.pending_size += sum(_size(sides) for _, _, sides in unit)
        self.buffered -= node.size
        node.units, node.size = [], 0
        if node.decided:
            node.keys = frozenset(_row_key(r) for r in self._region_rows(node, ()))
        if node.keys:
            # the names under it so far: its subtrees (now pending) and the path below it
            carved: list[Pattern] = [(pt, n) for unit, owner in self.pending if owner is node
                                     for pt, n, _ in unit]  # fmt: skip
            for below in self.stack[self.stack.index(node) + 1 :]:
                if below.own is not None:
                    carved.append((below.own[0], below.own[1]))
                carved.extend((pt, n) for unit in below.units for pt, n, _ in unit)
            node.carved = carved

    def _flush(self) -> None:
        """Decide the pending subtrees (a part)."""
        if not self.pending:
            return
        literal_keys: set[str] = set()
        prefix_keys: set[str] = set()
        roots: dict[Pattern, _Node] = {}
        sides: list[_Sides] = []
        owners: dict[int, _Node] = {}
        for unit, owner in self.pending:
            roots[unit[0][0], unit[0][1]] = owner
            owners[id(owner)] = owner
            for pt, name, item_sides in unit:
                (prefix_keys if pt is PREFIXED else literal_keys).add(name)
                sides.append(item_sides)
        sides.extend(owner.path_sides() for owner in owners.values())
        self.pending, self.pending_size = [], 0
        before, after = self._states(sides)
        diff = partial_diff(
            before, after, self.rt, literal_keys.__contains__, folded=True,
            owns_prefix=prefix_keys.__contains__,
        )  # fmt: skip
        for row in (*diff.widened, *diff.narrowed):
            self._pass_up(row, roots.get((row.names.pattern_type, row.names.name)))

    def _pass_up(self, row: AccessDelta, parent: _Node | None) -> None:
        """A finished row: held by ``parent`` if it folds into one of its rows, else out."""
        if parent is not None and parent.keys:
            key = _row_key(row)
            if key in parent.keys:
                parent.held.setdefault(key, []).append(row)
                return
        self.out.append(row)

    def _close_upper(self, node: _Node) -> None:
        if node.keys:
            self._flush()  # every row that may fold into its rows is in
            rows = self._region_rows(node, node.carved or ())
            for row in rows:
                kids = node.held.pop(_row_key(row), None)
                if kids:
                    row = replace(row, names=_merged(row.names, [k.names for k in kids]))
                self._pass_up(row, node.parent)
            assert not node.held, "a held row without its parent's row"
            node.carved = None

    # --- walking ----------------------------------------------------------------------------

    def _close(self, node: _Node) -> None:
        if node.upper:
            self._close_upper(node)
            return
        assert node.own is not None
        unit = [node.own, *(item for child in node.units for item in child)]
        parent = node.parent
        assert parent is not None
        if parent.upper:
            self.pending.append((unit, parent))
            self.pending_size += node.size
            self.buffered -= node.size
        else:
            parent.units.append(unit)
            parent.size += node.size

    def _relieve(self) -> None:
        """Bring what is buffered back under the budget: decide what waits, or make the
        shallowest prefix still buffered an upper node."""
        while self.buffered + self.pending_size > self.budget:
            if self.pending_size >= self.budget // 2 or self.buffered == 0:
                self._flush()
                if self.buffered <= self.budget:
                    return
            shallowest = next((n for n in self.stack if not n.upper), None)
            if shallowest is None:
                self._flush()
                return
            self._make_upper(shallowest)

    def root_keys(self) -> frozenset[RowKey]:
        """The keys of the root region's rows (none: its rows do not change)."""
        return frozenset(_row_key(r) for r in self._region_rows(self.root, ()))

    def run(self, *, part: bool = False) -> Iterator[AccessDelta]:
        """The walk's rows; ``part``: the patterns are a run of the root's subtrees (the
        root's keys given), and the root is left open: the rows that fold into its rows
        stay held in it (:attr:`_Node.held`)."""
        root = self.root
        if root.decided and not part:
            root.keys = self.root_keys()
            root.carved = [] if root.keys else None
        stack = self.stack
        known = {(LITERAL, WILDCARD_RESOURCE): self.star}
        if not self.scoped:
            known[PREFIXED, ""] = root.sides
        for pt, name, sides in self.reader.stream(self.rt, self.top, known):
            if not self.scoped and pt is PREFIXED and name == "":
                continue  # the root's own pattern, read already
            while len(stack) > 1 and not name.startswith(stack[-1].name):
                self._close(stack.pop())
            for on_path in stack:
                if on_path.carved is not None:
                    on_path.carved.append((pt, name))
            parent = stack[-1]
            size = _size(sides)
            if pt is PREFIXED:
                stack.append(_Node(name, ([], []), parent, own=(pt, name, sides), size=size))
                self.buffered += size
            elif parent.upper:
                self.pending.append(([(pt, name, sides)], parent))
                self.pending_size += size
            else:
                parent.units.append([(pt, name, sides)])
                parent.size += size
                self.buffered += size
            if self.buffered + self.pending_size > self.budget:
                self._relieve()
            if self.out:
                yield from self.out
                self.out.clear()
        while len(stack) > 1:
            self._close(stack.pop())
        self._flush()
        if not part:
            self._close_upper(root)
        yield from self.out
        self.out.clear()


def _literal_alone(
    rt: ResourceType, reader: _Reader, change: StateChange, name: str
) -> Iterator[AccessDelta]:
    """The region of a changed literal under no changed prefix: the bindings that apply to
    its name, by point lookups (its parents' regions do not change)."""
    lengths = sorted({*reader.source.prefix_lengths(rt), *(
        len(n) for pt, n in reader.added.get(rt, {}) if pt is PREFIXED)})  # fmt: skip
    sides = [reader.lookup(rt, LITERAL, name)]
    sides.extend(reader.lookup(rt, PREFIXED, name[:length]) for length in lengths if length <= len(name))
    if name != WILDCARD_RESOURCE:
        sides.append(reader.lookup(rt, LITERAL, WILDCARD_RESOURCE))
    before = {b for s in sides for b in s[0]}
    after = {b for s in sides for b in s[1]}
    c = change
    diff = partial_diff(
        AclState(frozenset(before), c.before.super_users, c.before.allow_everyone_if_no_acl_found),
        AclState(frozenset(after), c.after.super_users, c.after.allow_everyone_if_no_acl_found),
        rt, lambda key: key == name, folded=True, owns_prefix=lambda key: False,
    )  # fmt: skip
    yield from (*diff.widened, *diff.narrowed)


# --- one type's walk in parts: its root's subtrees decided apart ---------------------------------
#
# Below the root, a subtree's rows depend on the bindings on its path only (its own, the
# prefixes above it, ``*`` and ``""``), and on nothing beside it.  So a type's patterns can be
# cut between the root's subtrees into *parts* decided apart (in other processes: see
# :mod:`replicator.access.parallel`), each with the frame the parts share, and the root closed
# last with the rows the parts held for it: the rows of one walk, in the same order.


@dataclass(frozen=True, slots=True)
class TypeFrame:
    """What every part of one type's walk shares: the sides of ``*`` (LITERAL) and of ``""``
    (PREFIXED: the root's own pattern), and the keys of the root region's rows (none: the
    root's rows do not change, and no row is held for it)."""

    resource_type: ResourceType
    star: _Sides
    root: _Sides
    keys: frozenset[RowKey]


class _PartSource:
    """A :class:`PatternSource` of one part: its patterns, once, in walk order."""

    def __init__(self, resource_type: ResourceType, patterns: Iterable[Listed]) -> None:
        self.resource_type, self._patterns = resource_type, iter(patterns)

    def resource_types(self) -> Iterable[ResourceType]:
        return (self.resource_type,)

    def patterns(self, resource_type: ResourceType, under: str) -> Iterator[Listed]:
        assert resource_type is self.resource_type and under == "", "a part is walked once, whole"
        return self._patterns

    def bindings_of(self, resource_type: ResourceType, pattern_type: PatternType,
                    name: str) -> list[AclBinding]:  # fmt: skip
        raise AssertionError("a part reads no pattern by key: its frame holds the root's")

    def prefix_lengths(self, resource_type: ResourceType) -> Sequence[int]:
        return ()


def _part_reader(
    change: StateChange, patterns: Iterable[Listed], rt: ResourceType, figures: WalkFigures | None,
    on_dropped: Callable[[AclBinding], None] | None,
) -> _Reader:  # fmt: skip
    if change.added or change.removed:
        raise ValueError("a walk in parts judges a rule (an older reader's), not added or removed bindings")
    return _Reader(_PartSource(rt, patterns), change, {}, figures or WalkFigures(), on_dropped, None)


def type_frame(
    source: PatternSource, change: StateChange, rt: ResourceType, *,
    figures: WalkFigures | None = None, on_dropped: Callable[[AclBinding], None] | None = None,
) -> TypeFrame:  # fmt: skip
    """The frame of the type's walk: ``*`` and ``""`` read (and counted, and their dropped
    bindings heard) here, once."""
    reader = _Reader(source, change, {}, figures or WalkFigures(), on_dropped, None)
    star = reader.lookup(rt, LITERAL, WILDCARD_RESOURCE)
    root = reader.lookup(rt, PREFIXED, "")
    bare = TypeFrame(rt, star, root, frozenset())
    walk = _Walk(rt, _part_reader(change, (), rt, None, None), change, 1, "", frame=bare)
    return replace(bare, keys=walk.root_keys())


def type_parts(patterns: Iterable[tuple[PatternType, str, T]], size: Callable[[T], int],
               limit: int) -> Iterator[list[tuple[PatternType, str, T]]]:  # fmt: skip
    """A type's patterns in walk order (each with a payload: its bindings, or what stands for
    them), cut into parts between the root's subtrees, each part at least ``limit`` in size
    (``size`` of the payloads), but the last.  A subtree is never cut: one larger than
    ``limit`` is a part of its own."""
    part: list[tuple[PatternType, str, T]] = []
    total = 0
    top: str | None = None  # the PREFIXED name whose subtree is being read
    for item in patterns:
        pt, name, payload = item
        if top is None or not name.startswith(top):  # a subtree of the root begins
            if total >= limit:
                yield part
                part, total = [], 0
            top = name if pt is PREFIXED and name != "" else None
        part.append(item)
        total += size(payload)
    if part:
        yield part


def walk_part(
    frame: TypeFrame, change: StateChange, patterns: Iterable[Listed], *,
    budget: int = DEFAULT_BUDGET, figures: WalkFigures | None = None,
    on_dropped: Callable[[AclBinding], None] | None = None,
) -> tuple[list[AccessDelta], dict[RowKey, list[AccessDelta]]]:  # fmt: skip
    """The rows of one part (:func:`type_parts`) in walk order, and the rows it holds for the
    root's (by row key), for :func:`close_root`."""
    rt = frame.resource_type
    walk = _Walk(rt, _part_reader(change, patterns, rt, figures, on_dropped), change, budget, "",
                 frame=frame)  # fmt: skip
    rows = list(walk.run(part=True))
    return rows, walk.root.held


def close_root(
    frame: TypeFrame, change: StateChange, carved: list[Pattern], held: dict[RowKey, list[AccessDelta]]
) -> list[AccessDelta]:
    """The root region's rows, with the rows the parts held for them folded in: the last
    rows of the type's walk.  ``carved``: every pattern of the type but ``""`` (PREFIXED),
    in walk order (needed only when the frame has keys)."""
    rt = frame.resource_type
    walk = _Walk(rt, _part_reader(change, (), rt, None, None), change, 1, "", frame=frame)
    root = walk.root
    root.carved = carved if frame.keys else None
    root.held = held
    walk._close_upper(root)
    return walk.out


def parted_diff(
    source: PatternSource, change: StateChange, *, part_size: int, budget: int = DEFAULT_BUDGET,
    on_dropped: Callable[[AclBinding], None] | None = None,
) -> Iterator[AccessDelta]:  # fmt: skip
    """:func:`streamed_diff` of a rule's change, walked in parts of ``part_size`` bindings
    one after the other: what :mod:`replicator.access.parallel` does with parts in other
    processes, in one (the same rows, in the same order)."""
    figures = WalkFigures()
    types = set(source.resource_types()) | (set(CONCRETE_TYPES) if change.settings_changed else set())
    for rt in sorted(types, key=int):
        frame = type_frame(source, change, rt, figures=figures, on_dropped=on_dropped)
        carved: list[Pattern] = []
        held: dict[RowKey, list[AccessDelta]] = {}
        listed = source.patterns(rt, "")
        for part in type_parts(listed, len, part_size):
            if frame.keys:
                carved.extend((pt, name) for pt, name, _ in part if (pt, name) != (PREFIXED, ""))
            rows, part_held = walk_part(frame, change, part, budget=budget, figures=figures,
                                        on_dropped=on_dropped)  # fmt: skip
            yield from rows
            for key, kids in part_held.items():
                held.setdefault(key, []).extend(kids)
        yield from close_root(frame, change, carved, held)


class StateSource:
    """A :class:`PatternSource` over an in-memory state (tests, and small states)."""

    def __init__(self, state: AclState | Iterable[AclBinding]) -> None:
        bindings = state.bindings if isinstance(state, AclState) else state
        self.by_pattern: dict[ResourceType, dict[Pattern, list[AclBinding]]] = {}
        for b in bindings:
            self.by_pattern.setdefault(b.resource_type, {}).setdefault((b.pattern_type, b.name), []).append(b)
        self.order = {
            rt: sorted(((pt, n) for pt, n in patterns if pt in (LITERAL, PREFIXED)), key=lambda p: _order(*p))
            for rt, patterns in self.by_pattern.items()
        }

    def resource_types(self) -> Iterable[ResourceType]:
        return list(self.by_pattern)

    def patterns(self, resource_type: ResourceType, under: str) -> Iterator[Listed]:
        patterns = self.by_pattern.get(resource_type, {})
        for pt, name in self.order.get(resource_type, []):
            if name.startswith(under):
                yield pt, name, list(patterns[pt, name])

    def bindings_of(self, resource_type: ResourceType, pattern_type: PatternType,
                    name: str) -> list[AclBinding]:  # fmt: skip
        return list(self.by_pattern.get(resource_type, {}).get((pattern_type, name), []))

    def prefix_lengths(self, resource_type: ResourceType) -> Sequence[int]:
        return sorted({len(n) for pt, n in self.by_pattern.get(resource_type, {}) if pt is PREFIXED})


def ignored_by(state_bindings: Iterable[AclBinding], reader_version: int) -> Iterator[AclBinding]:
    """The bindings a reader of ``reader_version`` ignores (the rule of :class:`StateChange.downgrade`)."""
    drops = _Drops(reader_version)
    return (b for b in state_bindings if drops(b))


def settings_state(super_users: Iterable[str], allow_everyone_if_no_acl_found: bool) -> AclState:
    """The settings of a state, without bindings (what :class:`StateChange` reads)."""
    return AclState(frozenset(), frozenset(super_users), allow_everyone_if_no_acl_found)


__all__ = [
    "DEFAULT_BUDGET",
    "PatternSource",
    "StateChange",
    "StateSource",
    "TypeFrame",
    "WalkFigures",
    "close_root",
    "ignored_by",
    "merge_by_name",
    "parted_diff",
    "reader_sees_settings",
    "settings_state",
    "streamed_diff",
    "type_frame",
    "type_parts",
    "walk_part",
]
