"""The access diff: every request whose decision differs between two ACL states, exactly.

Given two states (live bindings plus ``super.users`` and ``allow.everyone.if.no.acl.found``),
:func:`access_diff` returns the requests that one state allows and the other denies: *widened*
(DENIED before, ALLOWED after) and *narrowed*, as symbolic sets, each with a concrete witness
request on which the decision rules (:func:`store.authorizer.authorize`) give the two answers.

The name space is infinite, so the diff reasons about patterns, never about enumerated names.
Which bindings apply to a resource depends only on which patterns match its name (the LITERAL
name, the LITERAL ``*``, the PREFIXED prefixes of the name), so per resource type the names
fall into finitely many **regions**, each with one set of matching bindings in both states:

* one region per literal name in play (exactly that name);
* one per prefix in play: the names under it that are no literal in play and fall under no
  longer prefix in play (they are "carved out" into their own regions);
* the rest: names that match no literal and no prefix in play (only ``*`` applies to them).

Within a region the decision still depends on the principal, the host and the operation.
Principals that no binding of the region names (and whose ``super.users`` standing is the
same in both states) all decide alike, as one fresh principal of their type does; hosts
likewise.  So each region is decided for the principals and hosts in play there plus one
fresh representative of the rest, for each operation Kafka's requests check on that resource
type (:data:`store.kafka_apis.API_KEY_TABLE`, plus DESCRIBE), with the real decision rules on
a representative name.  Rows where every principal (or host) flips alike are folded into one
row for any principal (or host).

Pure: no I/O.  :func:`older_reader_state` models what a replica of an older event format sees.
"""

from __future__ import annotations

import bisect
import enum
import functools
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from store.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.authorizer import AuthorizerConfig
from store.authorizer.applicable import applicable
from store.authorizer.decision import COVERED
from store.authorizer.engine import acl_hosts, acl_principals, allowed_operations
from store.events import binding_min_reader_version, binding_requirement_key
from store.kafka_apis import API_KEY_TABLE

ANY = "*"
"""In a row's principal or host: every principal (host) except those in its ``except``."""


@dataclass(frozen=True, slots=True)
class AclState:
    """What decides: the live bindings and the two settings that take part in decisions."""

    bindings: frozenset[AclBinding]
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def of(
        cls,
        bindings: Iterable[AclBinding],
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> AclState:
        return cls(frozenset(bindings), frozenset(super_users), allow_everyone_if_no_acl_found)

    def config(self) -> AuthorizerConfig:
        return AuthorizerConfig.of(self.super_users, self.allow_everyone_if_no_acl_found)


class Change(enum.Enum):
    WIDENED = "widened"  # DENIED before, ALLOWED after
    NARROWED = "narrowed"  # ALLOWED before, DENIED after


@dataclass(frozen=True, slots=True)
class NameSet:
    """The resource names of one region: ``LITERAL`` exactly ``name``; ``PREFIXED`` the names
    starting with ``name`` (``""``: every name) minus the carved-out literals and prefixes."""

    pattern_type: PatternType
    name: str
    except_names: tuple[str, ...] = ()
    except_prefixes: tuple[str, ...] = ()

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if self.pattern_type is PatternType.LITERAL:
            return name == self.name
        return (
            name.startswith(self.name)
            and name not in self.except_names
            and not any(name.startswith(p) for p in self.except_prefixes)
        )

    def __str__(self) -> str:
        if self.pattern_type is PatternType.LITERAL:
            return self.name
        carved = [*self.except_names, *(f"{p}*" for p in self.except_prefixes)]
        shown = ", ".join(carved[:5]) + (f", ... ({len(carved)} in all)" if len(carved) > 5 else "")
        head = f"{self.name}*" if self.name else "any name"
        return head + (f" except {shown}" if carved else "")


@dataclass(frozen=True, slots=True)
class Request:
    """A concrete request: the witness of a row."""

    principal: str
    host: str
    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


@dataclass(frozen=True, slots=True)
class AccessDelta:
    """One symbolic set of requests whose decision changed the same way."""

    change: Change
    resource_type: ResourceType
    names: NameSet
    operation: AclOperation
    principal: str  # a principal, or ANY
    host: str  # a host, or ANY
    witness: Request
    principal_except: tuple[str, ...] = ()
    host_except: tuple[str, ...] = ()
    principal_type: str | None = None
    """With ``principal`` ANY: only principals of this type (``User``...); None: every type."""


@dataclass(frozen=True, slots=True)
class AccessDiff:
    widened: tuple[AccessDelta, ...]
    narrowed: tuple[AccessDelta, ...]

    @property
    def safe(self) -> bool:
        """No access widens."""
        return not self.widened


@dataclass(slots=True)
class _Region:
    resource_type: ResourceType
    names: NameSet
    witness_name: str
    before: list[AclBinding] = field(default_factory=list)
    after: list[AclBinding] = field(default_factory=list)
    parent: str | None = None
    """The longest prefix in play above the region's pattern (``""``: the rest of the
    names), whose region's bindings are the rest of this one's (see :func:`_join_plan`)."""
    own: tuple[int, int] = (0, 0)
    """How many of ``before`` and ``after`` (at their start) are the pattern's own bindings."""

    @property
    def bindings(self) -> list[AclBinding]:
        """The bindings of both states that apply to the region's names."""
        return list(dict.fromkeys([*self.before, *self.after]))


@functools.cache
def checked_operations(resource_type: ResourceType) -> tuple[AclOperation, ...]:
    """The operations Kafka's requests check on ``resource_type`` (the API-key table), and
    DESCRIBE (listing and metadata), in code order."""
    ops = {row.operation for row in API_KEY_TABLE if row.resource_type is resource_type}
    ops.add(AclOperation.DESCRIBE)
    return tuple(sorted((op for op in ops if op is not None), key=int))


def access_diff(before: AclState, after: AclState) -> AccessDiff:
    """Every request whose decision differs from ``before`` to ``after``, symbolically."""
    return _diff(before, after, focused=False)


def change_diff(before: AclState, after: AclState) -> AccessDiff:
    """:func:`access_diff` for a change of a few bindings (a dry run against a large state).

    With equal settings only the regions a changed binding applies to can differ: a changed
    LITERAL its own name, a changed PREFIXED every region under it, a changed ``*`` every
    region of its type.  The answer is the same as :func:`access_diff`'s, found without
    visiting the rest of the state.
    """
    return _diff(before, after, focused=True)


def _diff(before: AclState, after: AclState, *, focused: bool) -> AccessDiff:
    settings_changed = _settings_changed(before, after)
    focus: dict[ResourceType, set[str]] | None = None
    if focused and not settings_changed:
        focus = {}
        for changed in before.bindings ^ after.bindings:
            focus.setdefault(changed.resource_type, set()).add(changed.name)
    every_type = settings_changed  # a setting applies to resources with no binding too
    regions = _regions(before.bindings, after.bindings, every_type=every_type, focus=focus)
    return _decide_regions(before, after, regions)


def _settings_changed(before: AclState, after: AclState) -> bool:
    return (before.super_users, before.allow_everyone_if_no_acl_found) != (
        after.super_users,
        after.allow_everyone_if_no_acl_found,
    )


_Cell = tuple[Change, AclOperation, str, str, tuple[str, ...], tuple[str, ...], str | None, str, str]
"""A row before it is built: change, operation, principal, host, their exceptions, the
principal type, and the witness's principal and host (its region gives the rest)."""


def _decide_regions(
    before: AclState,
    after: AclState,
    regions: Iterable[_Region],
    *,
    folded: bool = False,
    owns: Callable[[str], bool] | None = None,
) -> AccessDiff:
    """The diff over ``regions`` (each with the bindings of both states that apply to it);
    ``folded``: :func:`compact` of it, without building the rows that fold away (a literal
    region's rows that fold into its parent's are not decided either: :func:`_join_plan`);
    ``owns``: whether the prefix region of a key (a prefix, ``""`` for the rest) is decided
    here (None: every one)."""
    if folded:
        rows = _folded_rows(_Context(before, after), regions, owns)
    else:
        rows = [_delta(region, cell, region.names) for region, cell in _cells(before, after, regions)]
    widened = tuple(r for r in rows if r.change is Change.WIDENED)
    narrowed = tuple(r for r in rows if r.change is Change.NARROWED)
    return AccessDiff(widened=widened, narrowed=narrowed)


def _folded_rows(
    context: _Context, regions: Iterable[_Region], owns: Callable[[str], bool] | None
) -> list[AccessDelta]:
    """The rows of ``regions``, folded as :func:`compact` folds them.

    A region whose rows for a principal are its parent's (:func:`_join_plan`) would fold each
    of them into the parent's row of the same key: the parent carves it out directly (it is
    the longest prefix in play above it).  When the same holds for every region under it
    (the region is *absorbed* for that principal), the whole subtree folds into the parent's
    rows: those rows are not decided, and the parent's rows of that principal lose the
    subtree from their carve-outs instead, before the rest is folded as usual.  Whether
    another row merges depends only on its own name and on the carve-outs between it and its
    parent (none of them in an absorbed subtree), so the fold gives what it gives on every
    row.  A region decided alike but with a descendant that is not absorbed is decided for
    that principal, and folds as usual.
    """
    plans: list[tuple[_Region, AbstractSet[str] | None, AbstractSet[AclBinding] | None]] = []
    above_of: dict[tuple[ResourceType, str], _Above | None] = {}
    joining = not context.settings_changed
    for region in regions:
        parent, plan = region.parent, None
        if joining and parent is not None and region.names.name != WILDCARD_RESOURCE and (
            owns is None or owns(parent)
        ):
            at = (region.resource_type, parent)
            above = above_of[at] if at in above_of else above_of.setdefault(at, _above(region))
            if above is not None:
                plan = _join_plan(region, above, context.super_both)
        plans.append((region, *plan) if plan is not None else (region, None, None))
    # the principals decided under each region: its own, and every descendant's (None: all)
    blocked: dict[tuple[ResourceType, str], AbstractSet[str] | None] = {}
    children: dict[tuple[ResourceType, str], list[tuple[NameSet, AbstractSet[str]]]] = {}
    decide: list[tuple[_Region, AbstractSet[str] | None, AbstractSet[AclBinding] | None]] = []
    # longer names first, a literal before the prefix of the same name (its parent)
    def deepest_first(plan: tuple[_Region, object, object]) -> tuple[int, bool]:
        return -len(plan[0].names.name), plan[0].names.pattern_type is _PREFIXED

    # how many regions under each prefix are decided here: with one elsewhere (another
    # partition's), the prefix is absorbed for nobody
    here: dict[tuple[ResourceType, str], int] = {}
    for region, explicit, changed in sorted(plans, key=deepest_first):
        rt, names = region.resource_type, region.names
        below: AbstractSet[str] | None = frozenset()
        if names.pattern_type is _PREFIXED:
            below = blocked.get((rt, names.name), frozenset())
            if here.get((rt, names.name), 0) != len(names.except_names) + len(names.except_prefixes):
                below = None
        mine = None if explicit is None or below is None else (explicit | below if below else explicit)
        if names.pattern_type is _PREFIXED:
            blocked[rt, names.name] = mine
        if region.parent is not None:
            at = (rt, region.parent)
            here[at] = here.get(at, 0) + 1 + here.get((rt, names.name), 0) * (names.pattern_type is _PREFIXED)
            if mine is not None:
                children.setdefault(at, []).append((names, mine))
            up = blocked.get(at, frozenset())
            if up is not None:
                blocked[at] = None if mine is None else (up | mine if mine else up)
        decide.append((region, mine, changed))  # None: every principal (the fold needs them)
    cells: list[tuple[_Region, _Cell]] = []
    for region, only, changed in decide:
        if only is None or changed is None:
            cells.extend((region, cell) for cell in context.cells(region))
        elif only:
            cells.extend((region, cell) for cell in context.cells(region, only, changed))
    carved: dict[tuple[ResourceType, str, str], NameSet] = {}
    keyed: list[tuple[Hashable, NameSet]] = []
    for region, cell in cells:
        rt, names, principal = region.resource_type, region.names, cell[2]
        under = children.get((rt, names.name)) if names.pattern_type is _PREFIXED else None
        if under and principal != ANY:
            at3 = (rt, names.name, principal)
            found = carved.get(at3)
            if found is None:
                found = carved[at3] = _absorbing(names, under, principal)
            names = found
        keyed.append(((cell[:7], rt), names))
    return [_delta(*cells[i], names) for i, names in _fold_names(keyed)]


def _absorbing(
    names: NameSet, children: Sequence[tuple[NameSet, AbstractSet[str]]], principal: str
) -> NameSet:
    """A parent's name set with the children absorbed for ``principal`` (and all under them)
    no longer carved out."""
    literals = {c.name for c, below in children if c.pattern_type is not _PREFIXED and principal not in below}
    stems = [c.name for c, below in children if c.pattern_type is _PREFIXED and principal not in below]
    if not literals and not stems:
        return names
    kept = [n for n in _outside(names.except_names, stems) if n not in literals]
    prefixes = _outside(names.except_prefixes, stems) if stems else names.except_prefixes
    return replace(names, except_names=tuple(kept), except_prefixes=tuple(prefixes))


@dataclass(frozen=True, slots=True)
class _Above:
    """A parent region's bindings as its literals see them: what changed, whose requests
    can flip there, its hosts (and ``*``), and the principals with a binding for one host."""

    changed: frozenset[AclBinding]
    principals: frozenset[str]
    hosts: frozenset[str]
    host_bound: frozenset[str]


def _above(region: _Region) -> _Above | None:
    """What a region inherits from its parent (its bindings after its own ones are the
    parent region's: the patterns above its pattern); None where :func:`_join_plan` does not
    hold (no ACL on one side, or a changed ``User:*`` binding)."""
    own_before, own_after = region.own
    above_before, above_after = region.before[own_before:], region.after[own_after:]
    if not above_before or not above_after:
        return None
    changed = frozenset(above_before).symmetric_difference(above_after)
    principals = frozenset(b.entry.principal for b in changed)
    if WILDCARD_PRINCIPAL in principals:
        return None
    both = (*above_before, *above_after)
    hosts = frozenset(b.entry.host for b in both) | {WILDCARD_HOST}
    host_bound = frozenset(b.entry.principal for b in both if b.entry.host != WILDCARD_HOST)
    return _Above(changed, principals, hosts, host_bound)


def _join_plan(
    region: _Region, above: _Above, super_both: AbstractSet[str]
) -> tuple[AbstractSet[str], AbstractSet[AclBinding]] | None:
    """The principals whose rows in ``region`` must be decided (the others' rows are its
    parent region's, with its names), and its changed bindings; None: decide every row.

    The region's bindings are its pattern's own and its parent's (``above``): the parent is
    the longest prefix in play above the pattern (a literal's name, a prefix), so every
    other pattern in play that applies to the region's names applies to the parent's.  With the
    same settings, ACLs on both sides of the parent, and no ``User:*`` among the changed
    bindings or the literal's own: nobody's request for "any principal" flips in either
    region, and a principal ``p`` that no own binding names sees the same bindings in both
    (its own, ``User:*``'s), so it is decided alike on every host.  Its rows are then the
    same in both when the hosts in play are (a host only the literal names decides as the
    parent's fresh host does), or when no binding for one host applies to ``p`` (every host
    decides alike, so a flip is a row for any host).  Proof by test:
    ``tests/store/test_access_diff_joins.py`` against the rows decided one by one.
    """
    own_before, own_after = region.own
    own = (*region.before[:own_before], *region.after[:own_after])
    named = {b.entry.principal for b in own}
    if WILDCARD_PRINCIPAL in named:
        return None
    own_changed = set(region.before[:own_before]).symmetric_difference(region.after[:own_after])
    changed: AbstractSet[AclBinding] = above.changed
    flip: AbstractSet[str] = above.principals
    if own_changed:
        changed = above.changed | own_changed
        flip = above.principals | {b.entry.principal for b in own_changed}
    explicit = flip & named
    if any(b.entry.host not in above.hosts for b in own):
        if WILDCARD_PRINCIPAL in above.host_bound:
            return None
        explicit |= above.principals & above.host_bound
    return explicit - super_both, changed


def _delta(region: _Region, cell: _Cell, names: NameSet) -> AccessDelta:
    change, op, principal, host, p_except, h_except, kind, w_principal, w_host = cell
    rt = region.resource_type
    return AccessDelta(
        change=change, resource_type=rt, names=names, operation=op, principal=principal,
        host=host, witness=Request(w_principal, w_host, op, rt, region.witness_name),
        principal_except=p_except, host_except=h_except, principal_type=kind,
    )  # fmt: skip


def _cells(before: AclState, after: AclState, regions: Iterable[_Region]) -> Iterator[tuple[_Region, _Cell]]:
    """Each region's rows, as cells, in the order :func:`access_diff` gives them."""
    context = _Context(before, after)
    for region in regions:
        yield from ((region, cell) for cell in context.cells(region))


class _Context:
    """What every region's decisions share: the two configs and the super users."""

    __slots__ = ("after", "before", "configs", "settings_changed", "super_both", "super_changed",
                 "super_sorted")  # fmt: skip

    def __init__(self, before: AclState, after: AclState) -> None:
        self.before, self.after = before, after
        self.configs = (before.config(), after.config())
        self.settings_changed = _settings_changed(before, after)
        self.super_changed = before.super_users ^ after.super_users
        self.super_both = before.super_users & after.super_users
        self.super_sorted = tuple(sorted(self.super_both))

    def cells(
        self,
        region: _Region,
        only: AbstractSet[str] | None = None,
        changed: AbstractSet[AclBinding] | None = None,
    ) -> Iterator[_Cell]:
        """The region's rows as cells; ``only``: just the rows of these principals (named
        ones; a caller passes it only where no row is for "any principal"); ``changed``: the
        region's changed bindings, when the caller knows them already."""
        configs, settings_changed = self.configs, self.settings_changed
        super_both = self.super_both
        in_before, in_after = region.before, region.after
        if changed is None:
            changed = set(in_before) ^ set(in_after)
        if not settings_changed and not changed:
            return
        summaries = (_summary(in_before), _summary(in_after))
        both = (*in_before, *in_after)
        principals = sorted({b.entry.principal for b in both} | self.super_changed)
        hosts = sorted({b.entry.host for b in both} - {WILDCARD_HOST})
        fresh_principals = _fresh_principals(principals, self.before, self.after)
        fresh_host = _fresh(hosts, lambda i: f"192.0.2.{i + 1}")
        # With the same settings and ACLs present on both sides, only a request that some
        # changed binding matches (its principal or User:*, its host or *) can flip: the
        # others see the same matching bindings in both states.
        every = settings_changed or bool(in_before) != bool(in_after)
        flip_principals = {b.entry.principal for b in changed}
        flip_hosts = {b.entry.host for b in changed}
        any_principal = every or WILDCARD_PRINCIPAL in flip_principals
        any_host = every or WILDCARD_HOST in flip_hosts
        all_hosts = [*hosts, fresh_host]
        # the order of the cells does not matter: the rows follow the principals and hosts
        asked: Iterable[str] = [*principals, *fresh_principals] if any_principal else flip_principals
        if only is not None:
            asked = [p for p in asked if p in only]
        asked_hosts = all_hosts if any_host else [h for h in all_hosts if h in flip_hosts]
        allowed: dict[tuple[str, str], tuple[int, int]] = {}
        flipped = 0
        matching_hosts = [(host, acl_hosts(host)) for host in asked_hosts]
        for principal in asked:
            if principal in super_both:
                continue  # allowed in both states, whatever the bindings
            matching = acl_principals(principal)
            for host, hosts_matching in matching_hosts:
                was = allowed_operations(summaries[0], matching, hosts_matching, configs[0])
                now = allowed_operations(summaries[1], matching, hosts_matching, configs[1])
                if was != now:
                    allowed[principal, host] = (was, now)
                    flipped |= was ^ now
        if not allowed:
            return
        folding = _Folding(principals, fresh_principals, hosts, fresh_host, self.super_sorted)
        for op in checked_operations(region.resource_type):
            bit = 1 << int(op)
            if not flipped & bit:
                continue
            flips: dict[tuple[str, str], Change] = {
                cell: Change.WIDENED if now & bit else Change.NARROWED
                for cell, (was, now) in allowed.items()
                if (was ^ now) & bit
            }
            if flips:
                yield from folding.cells(op, flips)


class _Masks:
    """The operations the ACLs of a region allow and deny for one (principal, host)."""

    __slots__ = ("allow_mask", "deny_mask")

    def __init__(self) -> None:
        self.allow_mask = 0
        self.deny_mask = 0


class _Summary:
    """A region's bindings of one state, merged as the decision procedure reads them:
    ``grants[principal][host]`` (:class:`store.authorizer.engine.PatternGrants`)."""

    __slots__ = ("grants",)

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        self.grants: dict[str, dict[str, _Masks]] = {}
        for binding in bindings:
            entry = binding.entry
            by_host = self.grants.get(entry.principal)
            if by_host is None:
                by_host = self.grants[entry.principal] = {}
            masks = by_host.get(entry.host)
            if masks is None:
                masks = by_host[entry.host] = _Masks()
            covered = COVERED[entry.permission_type][entry.operation]
            if entry.permission_type is AclPermissionType.ALLOW:
                masks.allow_mask |= covered
            else:  # any other permission counts as DENY (StandardAuthorizerData.findResult)
                masks.deny_mask |= covered


def _summary(bindings: Sequence[AclBinding]) -> list[_Summary]:
    """What :func:`store.authorizer.engine.allowed_operations` reads of a region's bindings
    of one state: one merged summary, or none when no ACL applies (the default decides)."""
    return [_Summary(bindings)] if bindings else []


class _Folding:
    """One region's rows for an operation, folding "every principal" and "every host"."""

    __slots__ = ("all_hosts", "candidates", "fresh", "fresh_host", "hosts", "kinds", "others",
                 "super_users")  # fmt: skip

    def __init__(
        self,
        principals: Sequence[str],
        fresh_principals: Sequence[str],
        hosts: Sequence[str],
        fresh_host: str,
        super_users: tuple[str, ...],
    ) -> None:
        self.candidates = [p for p in (*principals, *fresh_principals) if p not in super_users]
        self.fresh = fresh_principals
        self.fresh_host = fresh_host
        self.hosts = tuple(hosts)
        self.all_hosts = (*hosts, fresh_host)
        self.super_users = super_users
        self.others = (*principals, *super_users)  # a fresh principal stands for all but these
        several = len(fresh_principals) > 1
        self.kinds = {p: p.split(":", 1)[0] if several else None for p in fresh_principals}

    def cells(self, op: AclOperation, flips: Mapping[tuple[str, str], Change]) -> Iterator[_Cell]:
        fresh_host = self.fresh_host
        for change in Change:
            # principal -> the hosts on which its request flips this way (cells are unique)
            by_principal: dict[str, set[str]] = {}
            for (principal, host), c in flips.items():
                if c is change:
                    by_principal.setdefault(principal, set()).add(host)
            if not by_principal:
                continue
            every_host = {p for p, hs in by_principal.items() if len(hs) == len(self.all_hosts)}
            if len(every_host) == len(self.candidates):
                yield (change, op, ANY, ANY, self.super_users, (), None, self.fresh[0], fresh_host)
                continue
            for principal in self.candidates:
                on = by_principal.get(principal)
                if on is None:
                    continue
                who, kind = principal, None
                p_except: tuple[str, ...] = ()
                if principal in self.kinds:  # stands for every principal not in play
                    who, p_except, kind = ANY, self.others, self.kinds[principal]
                if principal in every_host:
                    yield (change, op, who, ANY, p_except, (), kind, principal, fresh_host)
                    continue
                for host in self.all_hosts:
                    if host not in on:
                        continue
                    if host == fresh_host:
                        yield (change, op, who, ANY, p_except, self.hosts, kind, principal, host)
                    else:
                        yield (change, op, who, host, p_except, (), kind, principal, host)


def _fresh(taken: Iterable[str], make: Callable[[int], str]) -> str:
    used = set(taken)
    return next(c for c in map(make, itertools.count()) if c not in used)


def _fresh_principals(in_play: Sequence[str], before: AclState, after: AclState) -> list[str]:
    """One principal of each type in play (User always) that no binding or setting names."""
    taken = set(in_play) | before.super_users | after.super_users
    types = {"User"} | {p.split(":", 1)[0] for p in taken if ":" in p}
    def other(principal_type: str) -> str:
        return _fresh(taken, lambda i: f"{principal_type}:aclstore-other-{i}")

    return [other(t) for t in sorted(types)]


_CONCRETE_TYPES = tuple(t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN))

_Sides = tuple[list[AclBinding], list[AclBinding]]


def _regions(
    before: Iterable[AclBinding],
    after: Iterable[AclBinding],
    *,
    every_type: bool,
    focus: dict[ResourceType, set[str]] | None = None,
) -> Iterator[_Region]:
    """The regions of each resource type, with the bindings of each state that apply there.

    ``focus`` (changed pattern names per type) limits the walk to the regions they apply to.
    """
    by_type: dict[ResourceType, dict[tuple[PatternType, str], _Sides]] = (
        {t: {} for t in _CONCRETE_TYPES} if every_type else {}
    )
    wanted = None if focus is None else set(focus)
    for side, bindings in enumerate((before, after)):
        for b in bindings:
            rt = b.resource_type
            if wanted is not None and rt not in wanted:
                continue
            patterns = by_type.get(rt)
            if patterns is None:
                patterns = by_type[rt] = {}
            sides = patterns.get((b.pattern_type, b.name))
            if sides is None:
                sides = patterns[b.pattern_type, b.name] = ([], [])
            sides[side].append(b)
    for resource_type, patterns in sorted(by_type.items(), key=lambda kv: int(kv[0])):
        names = None if focus is None else focus.get(resource_type, set())
        literals = sorted({n for pt, n in patterns if pt is PatternType.LITERAL})
        prefixes = sorted({n for pt, n in patterns if pt is PatternType.PREFIXED})
        yield from _regions_of_type(resource_type, patterns, literals, prefixes, names)


def partial_diff(
    before: AclState,
    after: AclState,
    resource_type: ResourceType,
    owns: Callable[[str], bool],
    *,
    carved: Iterable[tuple[PatternType, str]] = (),
    folded: bool = False,
    owns_prefix: Callable[[str], bool] | None = None,
) -> AccessDiff:
    """The diff over the regions of ``resource_type`` whose key ``owns`` accepts.

    A region's key is its literal name, its prefix, or ``""`` for the names no pattern takes.
    ``before`` and ``after`` must hold every binding that applies to those regions (their own
    patterns, the shorter prefixes above them, ``*``); ``carved`` names further patterns of
    the type, without their bindings, so that the regions' name sets carve them out.  The
    union over a partition of the keys is :func:`access_diff` (the Spark path, ``jobs/``).
    ``folded``: :func:`compact` of that diff, without building the rows that fold away.
    ``owns_prefix``: which prefix regions are decided, when that differs from the literal
    regions of the same names (None: ``owns`` for both); a PREFIXED ``a`` decided elsewhere
    while the LITERAL ``a`` under it is decided here (:mod:`store.access_stream`).
    """
    patterns: dict[tuple[PatternType, str], _Sides] = {key: ([], []) for key in carved}
    for side, bindings in enumerate((before.bindings, after.bindings)):
        for b in bindings:
            if b.resource_type is resource_type:
                patterns.setdefault((b.pattern_type, b.name), ([], []))[side].append(b)
    literals = sorted({n for pt, n in patterns if pt is PatternType.LITERAL})
    prefixes = sorted({n for pt, n in patterns if pt is PatternType.PREFIXED})
    regions = _regions_of_type(resource_type, patterns, literals, prefixes, None, owns, owns_prefix)
    return _decide_regions(before, after, regions, folded=folded, owns=owns_prefix or owns)


class _NameSet:
    """Membership in a sorted name list by bisection (no second copy of a large list)."""

    __slots__ = ("names",)

    def __init__(self, names: Sequence[str]) -> None:
        self.names = names

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        i = bisect.bisect_left(self.names, name)
        return i < len(self.names) and self.names[i] == name


def _lengths(by_pattern: Mapping[tuple[PatternType, str], _Sides]) -> list[int]:
    lengths = getattr(by_pattern, "prefix_lengths", None)
    if lengths is not None:
        return list(lengths)
    return sorted({len(n) for pt, n in by_pattern if pt is PatternType.PREFIXED})


def _under(names: Sequence[str], prefix: str) -> tuple[int, int]:
    """The index range of the sorted ``names`` that start with ``prefix``."""
    lo = bisect.bisect_left(names, prefix)
    hi = lo
    step = 1
    while hi < len(names) and names[hi].startswith(prefix):  # gallop, then bisect
        hi = min(len(names), hi + step)
        step *= 2
    left, right = max(lo, hi - step // 2), hi
    while left < right:
        mid = (left + right) // 2
        if names[mid].startswith(prefix):
            left = mid + 1
        else:
            right = mid
    return lo, left


def _regions_of_type(
    resource_type: ResourceType,
    by_pattern: Mapping[tuple[PatternType, str], _Sides],
    literals: Sequence[str],
    prefixes: Sequence[str],
    focus: set[str] | None,
    owns: Callable[[str], bool] | None = None,
    owns_prefix: Callable[[str], bool] | None = None,
) -> Iterator[_Region]:
    """The regions of one type; ``literals`` and ``prefixes`` are the sorted pattern names.

    ``owns`` keeps only the regions whose key (literal name, prefix, ``""`` for the rest) it
    accepts: one partition's share of a distributed diff; ``owns_prefix``, if given, decides
    for the prefix regions instead.
    """
    literal_set, prefix_set = _NameSet(literals), _NameSet(prefixes)
    lengths = sorted({len(p) for p in prefixes}) if focus is None else _lengths(by_pattern)
    empty: _Sides = ([], [])
    literal_table = _SidesTable(by_pattern, PatternType.LITERAL)
    prefixed_table = _SidesTable(by_pattern, PatternType.PREFIXED)

    def matching(name: str, prefix_lengths: Sequence[int] = lengths) -> _Sides:
        """The bindings of both states that apply to ``name``: its literal's first."""
        found: _Sides = ([], [])
        for sides in applicable(name, literal_table, prefixed_table, prefix_lengths):
            found[0].extend(sides[0])
            found[1].extend(sides[1])
        return found

    def longest_prefix(name: str, at_most: int) -> str:
        """The longest prefix in play of ``name`` no longer than ``at_most``, else ``""`` (the
        rest region's key): the parent of a region (:attr:`_Region.parent`)."""
        shorter = [length for length in lengths if length <= at_most]
        above = applicable(name, _NO_PATTERNS, _PrefixNames(prefix_set), shorter)
        return above[-1] if above else ""

    def literal_region(name: str) -> _Region:
        before, after = matching(name)
        own = by_pattern.get((PatternType.LITERAL, name), empty)
        names = NameSet(PatternType.LITERAL, name)
        parent = longest_prefix(name, len(name))
        return _Region(resource_type, names, name, before, after, parent, (len(own[0]), len(own[1])))

    def prefix_region(prefix: str) -> _Region:
        lo, hi = _under(literals, prefix)
        plo, phi = _under(prefixes, prefix)
        carved_prefixes = tuple(q for q in prefixes[plo:phi] if q != prefix)
        names = NameSet(PatternType.PREFIXED, prefix, tuple(literals[lo:hi]), carved_prefixes)
        witness = _name_in(names, literal_set)
        own = by_pattern.get((PatternType.PREFIXED, prefix), empty) if prefix in prefix_set else empty
        # the prefix's own bindings first, then those of the patterns above it (the witness
        # is no literal in play and under no longer prefix in play)
        above = matching(witness, [length for length in lengths if length < len(prefix)])
        before, after = [*own[0], *above[0]], [*own[1], *above[1]]
        parent = longest_prefix(prefix, len(prefix) - 1) if prefix else None
        return _Region(resource_type, names, witness, before, after, parent, (len(own[0]), len(own[1])))

    roots = ["", *prefixes] if "" not in prefix_set else list(prefixes)
    if focus is None or (WILDCARD_RESOURCE in focus and WILDCARD_RESOURCE in literal_set):
        keep = owns or (lambda key: True)
        keep_prefix = owns_prefix or keep
        yield from (literal_region(name) for name in literals if keep(name))
        yield from (prefix_region(prefix) for prefix in roots if keep_prefix(prefix))
        return
    visited_literals: set[str] = set()
    visited_prefixes: set[str] = set()
    for changed in sorted(focus):
        if changed in literal_set and changed not in visited_literals:
            visited_literals.add(changed)
            yield literal_region(changed)
        if changed in prefix_set:
            lo, hi = _under(literals, changed)
            for name in literals[lo:hi]:
                if name not in visited_literals:
                    visited_literals.add(name)
                    yield literal_region(name)
            lo, hi = _under(prefixes, changed)
            for prefix in prefixes[lo:hi]:
                if prefix not in visited_prefixes:
                    visited_prefixes.add(prefix)
                    yield prefix_region(prefix)


class _SidesTable:
    """One pattern type's patterns of a type's ``by_pattern``, as
    :func:`~store.authorizer.applicable.applicable` reads them: the sides of a pattern."""

    __slots__ = ("by_pattern", "pattern_type")

    def __init__(
        self, by_pattern: Mapping[tuple[PatternType, str], _Sides], pattern_type: PatternType
    ) -> None:
        self.by_pattern, self.pattern_type = by_pattern, pattern_type

    def get(self, name: str, /) -> _Sides | None:
        return self.by_pattern.get((self.pattern_type, name))


class _PrefixNames:
    """The prefixes in play, as :func:`~store.authorizer.applicable.applicable` reads them:
    a prefix's entry is its name."""

    __slots__ = ("names",)

    def __init__(self, names: _NameSet) -> None:
        self.names = names

    def get(self, name: str, /) -> str | None:
        return name if name in self.names else None


_NO_PATTERNS: dict[str, str] = {}


class _Overlay(Mapping[tuple[PatternType, str], _Sides]):
    """One type's patterns of a live state (both sides the same list), with a change on top."""

    def __init__(
        self,
        base: Mapping[tuple[PatternType, str], list[AclBinding]],
        changed: Mapping[tuple[PatternType, str], _Sides],
        prefix_lengths: Sequence[int],
    ) -> None:
        self.base, self.changed, self.prefix_lengths = base, changed, prefix_lengths

    def __getitem__(self, key: tuple[PatternType, str]) -> _Sides:
        sides = self.changed.get(key)
        if sides is not None:
            return sides
        same = self.base[key]
        return same, same

    def __iter__(self) -> Iterator[tuple[PatternType, str]]:
        yield from self.base
        yield from (k for k in self.changed if k not in self.base)

    def __len__(self) -> int:
        return len(self.base) + sum(1 for k in self.changed if k not in self.base)


@dataclass(slots=True)
class _TypeIndex:
    by_pattern: dict[tuple[PatternType, str], list[AclBinding]] = field(default_factory=dict)
    literals: list[str] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)
    prefix_lengths: list[int] = field(default_factory=list)


class PatternIndex:
    """A live state indexed for dry runs: bindings by pattern, sorted pattern names per type.

    Built once (as a node keeps its state indexed); :meth:`change_diff` then answers for a
    change of a few bindings by visiting only the regions they apply to.
    """

    def __init__(self, state: AclState) -> None:
        self.state = state
        self.types: dict[ResourceType, _TypeIndex] = {}
        for b in state.bindings:
            index = self.types.get(b.resource_type)
            if index is None:
                index = self.types[b.resource_type] = _TypeIndex()
            index.by_pattern.setdefault((b.pattern_type, b.name), []).append(b)
        for index in self.types.values():
            index.literals = sorted(n for pt, n in index.by_pattern if pt is PatternType.LITERAL)
            index.prefixes = sorted(n for pt, n in index.by_pattern if pt is PatternType.PREFIXED)
            index.prefix_lengths = sorted({len(p) for p in index.prefixes})

    def change_diff(
        self, *, added: Iterable[AclBinding] = (), removed: Iterable[AclBinding] = ()
    ) -> AccessDiff:
        """The access diff of adding ``added`` and removing ``removed`` (settings unchanged)."""
        live = self.state.bindings
        add = {b for b in added if b not in live}
        drop = {b for b in removed if b in live}
        # the regions carry the bindings; the states give only the (unchanged) settings
        after = AclState(frozenset(), self.state.super_users, self.state.allow_everyone_if_no_acl_found)
        by_type: dict[ResourceType, set[AclBinding]] = {}
        for b in add | drop:
            by_type.setdefault(b.resource_type, set()).add(b)
        regions: list[_Region] = []
        for rt, changes in sorted(by_type.items(), key=lambda kv: int(kv[0])):
            index = self.types.get(rt) or _TypeIndex()
            changed: dict[tuple[PatternType, str], _Sides] = {}
            for b in changes:
                key = (b.pattern_type, b.name)
                if key not in changed:
                    same = index.by_pattern.get(key, [])
                    changed[key] = (same, list(same))
                sides = changed[key][1]
                if b in add:
                    sides.append(b)
                else:
                    sides.remove(b)
            literals, prefixes = index.literals, index.prefixes
            fresh = [key for key in changed if key not in index.by_pattern]
            new_literals = {n for pt, n in fresh if pt is PatternType.LITERAL}
            new_prefixes = {n for pt, n in fresh if pt is PatternType.PREFIXED}
            if new_literals:
                literals = sorted([*literals, *new_literals])
            if new_prefixes:
                prefixes = sorted([*prefixes, *new_prefixes])
            lengths = sorted({*index.prefix_lengths, *(len(p) for p in new_prefixes)})
            overlay = _Overlay(index.by_pattern, changed, lengths)
            focus = {b.name for b in changes}
            regions.extend(_regions_of_type(rt, overlay, literals, prefixes, focus))
        return _decide_regions(self.state, after, regions)


def _name_in(names: NameSet, literals: _NameSet | set[str]) -> str:
    """A name of the region: the prefix itself if it is free, else the prefix and one more
    character that no carved-out literal or prefix claims (finitely many are carved out, so
    some character is free)."""
    stem = names.name
    firsts = itertools.chain("wxyz0123456789~", map(chr, itertools.count(0x100)))
    candidates = itertools.chain([stem] if stem else [], (stem + c for c in firsts))
    return next(
        c
        for c in candidates
        if c in names and c not in literals and c != WILDCARD_RESOURCE
    )


def compact(diff: AccessDiff) -> AccessDiff:
    """The same requests in fewer rows: a row of a carved-out region is folded into the row
    of the region that carves it out, when both say the same (change, resource type,
    operation, principal, host and their exceptions).

    Merging a child row into its parent's is the union of their name sets: the parent's
    name set, except that under the child's pattern only the child's carve-outs remain.  A
    child is merged when it is carved out *directly* (no other carve-out of the parent lies
    between them), so the union is again one pattern minus carve-outs, and the parent's
    witness stays a member.  Longer names go first, so chains fold up; the result does not
    depend on the order of the rows or on folds done earlier (the Spark path compacts each
    partition, then the union).  A downgrade that drops a prefixed ALLOW narrows access on
    the prefix and on every literal under it: one row instead of one per literal.
    """
    return AccessDiff(widened=_compact_rows(diff.widened), narrowed=_compact_rows(diff.narrowed))


_PREFIXED = PatternType.PREFIXED


def _compact_rows(rows: Sequence[AccessDelta]) -> tuple[AccessDelta, ...]:
    keyed = [(_row_key(row), row.names) for row in rows]
    return tuple(
        rows[i] if names is rows[i].names else replace(rows[i], names=names)
        for i, names in _fold_names(keyed)
    )


def _row_key(row: AccessDelta) -> tuple[object, ...]:
    return (row.change, row.resource_type, row.operation, row.principal, row.host,
            row.principal_except, row.host_except, row.principal_type)  # fmt: skip


def _fold_names(rows: Sequence[tuple[Hashable, NameSet]]) -> list[tuple[int, NameSet]]:
    """:func:`compact` over ``(key, name set)`` rows: the index of each row kept, with its
    name set after the merges, in the order the rows came (grouped by key)."""
    groups: dict[Hashable, list[int]] = {}
    for i, (key, _) in enumerate(rows):
        groups.setdefault(key, []).append(i)
    kept: list[tuple[int, NameSet]] = []
    for members in groups.values():
        if len(members) == 1:
            kept.append((members[0], rows[members[0]][1]))
            continue
        group = [rows[i][1] for i in members]
        kept.extend((members[at], names) for at, names in _fold_group(group))
    return kept


def _fold_group(group: Sequence[NameSet]) -> Iterator[tuple[int, NameSet]]:
    """One key's rows (by their name sets) folded: (position, merged name set) of each kept.

    Whether a row merges, and into which, depends only on the rows' own name sets: the
    nearest prefix row above it must carve it out, and no carve-out of that row may lie
    between them.  Merges done first (longer names) change a parent's carve-outs only under
    the longer names, never at or above a shorter child's name, so every merge can be
    decided first and each kept row's name set built once from its merged children.
    """
    prefixed = {names.name: at for at, names in enumerate(group) if names.pattern_type is _PREFIXED}
    lengths = sorted({len(name) for name in prefixed}, reverse=True)
    children: dict[int, list[int]] = {}
    merged: set[int] = set()
    carves: dict[int, tuple[frozenset[str], list[int]]] = {}
    # longer names first, a literal before the prefix of the same name (its carver)
    order = sorted(
        range(len(group)), key=lambda at: (-len(group[at].name), group[at].pattern_type is _PREFIXED)
    )
    for at in order:
        names = group[at]
        if names.pattern_type is _PREFIXED and prefixed[names.name] != at:
            continue  # a second row of the same prefix: the last one stands for both
        parent = _carving(names, group, prefixed, lengths, carves)
        if parent is not None:
            children.setdefault(parent, []).append(at)
            merged.add(at)
    finals: dict[int, NameSet] = {}
    for at in order:  # a row's children come before it
        if at in children:
            finals[at] = _merged(group[at], [finals.get(c, group[c]) for c in children[at]])
    for at, names in enumerate(group):
        if names.pattern_type is _PREFIXED:
            at = prefixed[names.name]
        if at in merged:
            continue
        yield at, finals.get(at, group[at])


def _carving(
    names: NameSet,
    group: Sequence[NameSet],
    prefixed: Mapping[str, int],
    lengths: Sequence[int],
    carves: dict[int, tuple[frozenset[str], list[int]]],
) -> int | None:
    """The row of the group that carves ``names`` out directly, if there is one."""
    name = names.name
    literal = names.pattern_type is not _PREFIXED
    top = len(name) if literal else len(name) - 1
    for length in lengths:  # the nearest prefix row above
        if length > top:
            continue
        parent = prefixed.get(name[:length])
        if parent is None:
            continue
        above = group[parent]
        if not _contains(above.except_names if literal else above.except_prefixes, name):
            return None
        between = carves.get(parent)
        if between is None:
            carved = frozenset(above.except_prefixes)
            between = carves[parent] = (carved, sorted({len(p) for p in carved}))
        limit = len(name) + 1 if literal else len(name)
        if any(length < k < limit and name[:k] in between[0] for k in between[1]):
            return None  # a carve-out between them has no row here
        return parent
    return None


def _contains(names: Sequence[str], name: str) -> bool:
    i = bisect.bisect_left(names, name)
    return i < len(names) and names[i] == name


def _merged(parent: NameSet, children: Sequence[NameSet]) -> NameSet:
    """``parent`` plus its directly carved-out ``children`` (which do not nest): under each
    child's pattern only the child's own carve-outs stay out."""
    if not children:
        return parent
    literals = {c.name for c in children if c.pattern_type is not _PREFIXED}
    stems = [c.name for c in children if c.pattern_type is _PREFIXED]
    if not stems:
        names = tuple(n for n in parent.except_names if n not in literals)
        return replace(parent, except_names=names)
    kept_names = [n for n in _outside(parent.except_names, stems) if n not in literals]
    kept_prefixes = _outside(parent.except_prefixes, stems)
    for child in children:
        if child.pattern_type is _PREFIXED:
            kept_names.extend(child.except_names)
            kept_prefixes.extend(child.except_prefixes)
    return replace(parent, except_names=tuple(sorted(kept_names)),
                   except_prefixes=tuple(sorted(kept_prefixes)))  # fmt: skip


def _outside(names: Sequence[str], stems: Iterable[str]) -> list[str]:
    """The sorted ``names`` that start with none of the ``stems`` (which do not nest, so the
    names under each are a run of their own)."""
    kept: list[str] = []
    at = 0
    for lo, hi in sorted(_under(names, stem) for stem in stems):
        kept.extend(names[at:lo])
        at = hi
    kept.extend(names[at:])
    return kept


def older_reader_state(state: AclState, reader_version: int) -> tuple[AclState, int]:
    """What a replica reading event format ``reader_version`` with the ``ignore`` policy
    decides from, and how many bindings a ``stop`` replica would stop at.

    A binding whose event needs a newer format than ``reader_version``
    (:func:`store.events.binding_min_reader_version`, the write path's own rule) is absent for
    the ignoring reader; the settings events came with format 3, so a reader below it sees
    neither ``super.users`` nor ``allow.everyone.if.no.acl.found`` from the log.
    """
    from store.events import CONFIG_EVENT_MIN_READER_VERSION

    # The rule asked once per key it reads (a few dozen), not once per binding; the few
    # dropped ones collected, the rest kept by set difference.
    needs: dict[tuple[object, ...], bool] = {}
    dropped_list: list[AclBinding] = []
    for b in state.bindings:
        kind = binding_requirement_key(b)
        drop = needs.get(kind)
        if drop is None:
            drop = needs[kind] = binding_min_reader_version(b) > reader_version
        if drop:
            dropped_list.append(b)
    dropped = frozenset(dropped_list)
    kept = state.bindings - dropped
    stopping = len(dropped)
    if reader_version < CONFIG_EVENT_MIN_READER_VERSION:
        return AclState(kept), stopping
    return AclState(kept, state.super_users, state.allow_everyone_if_no_acl_found), stopping


__all__ = [
    "ANY",
    "WILDCARD_PRINCIPAL",
    "AccessDelta",
    "AccessDiff",
    "AclState",
    "Change",
    "NameSet",
    "PatternIndex",
    "Request",
    "access_diff",
    "change_diff",
    "checked_operations",
    "compact",
    "older_reader_state",
    "partial_diff",
]
