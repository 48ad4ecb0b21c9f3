"""The history's questions over validity intervals: pure, no Spark, no log.

Each question is answered from the intervals its reading brought together (the archive's
rows that can matter plus the log's tail, :mod:`jobs.history.reading`): the live set just
after an offset (:func:`state_at`), Kafka's own decision rules on it (:func:`who_at`,
:func:`decide`: :func:`store.authorizer.authorize`), the stretches in which one request was
ALLOWED (:func:`access_intervals`), and what changed between two points (:func:`diff_of`,
:func:`access_change_of`, :func:`restore_plan`).  The tests compare them with a replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from jobs.common.events import ACL_CREATED, HistoryEvent, binding_identity
from jobs.history.answers import (
    EVERY_PRINCIPAL,
    AccessChange,
    DiffAnswer,
    Interval,
    RestorePlan,
    WhoAnswer,
    WhoEntry,
)
from jobs.history.validity import Validity
from store.access_diff import AclState, change_diff
from store.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.authorizer import (
    ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG,
    Action,
    Decision,
    InMemoryAclIndex,
    authorize,
)
from store.authorizer.applicable import applicable_patterns
from store.principal import SUPER_USERS_CONFIG, KafkaPrincipal
from store.settings import StoreSettings

RESTORED_SETTINGS: Final = (SUPER_USERS_CONFIG, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG)
"""The settings a restore sets back: those that decide access.  ``acl.format.version`` is
not among them (lowering it is refused while newer bindings live, and is an upgrade step)."""


def applicable_names(name: str) -> tuple[list[str], list[str]]:
    """The LITERAL and the PREFIXED names of the patterns that can match the resource ``name``
    (:func:`store.authorizer.applicable.applicable_patterns`: the name and ``*``; each prefix)."""
    patterns = applicable_patterns(name)
    literal = [n for pt, n in patterns if pt is PatternType.LITERAL]
    return literal, [n for pt, n in patterns if pt is PatternType.PREFIXED]


def applies_to(resource_type: ResourceType, name: str) -> Callable[[Validity], bool]:
    """Whether an interval can decide about ``resource_type:name``: a setting, or a binding of
    that type whose pattern can match the name (:func:`jobs.history.reading.resource_filter`
    as a predicate, for the tail)."""
    patterns = frozenset(applicable_patterns(name))

    def relevant(interval: Validity) -> bool:
        binding = interval.binding
        if binding is None:
            return True
        if binding.resource_type is not resource_type:
            return False
        return (binding.pattern_type, binding.name) in patterns

    return relevant


def state_at(intervals: Iterable[Validity], offset: int) -> tuple[set[AclBinding], dict[str, str]]:
    """The live bindings and the explicitly set settings just after ``offset``."""
    bindings: set[AclBinding] = set()
    settings: dict[str, str] = {}
    for interval in intervals:
        if not interval.live_at(offset):
            continue
        if interval.binding is not None:
            bindings.add(interval.binding)
        elif interval.opened.config_name is not None and interval.opened.config_value is not None:
            settings[interval.opened.config_name] = interval.opened.config_value
    return bindings, settings


def decide(
    bindings: Iterable[AclBinding],
    settings: dict[str, str],
    principal: str,
    host: str,
    action: Action,
) -> Decision:
    """Kafka's decision (``StandardAuthorizer``) for one request on a live set."""
    config = StoreSettings(settings).authorizer_config()
    return authorize(InMemoryAclIndex(bindings), config, principal, host, [action])[0]


def who_at(
    bindings: set[AclBinding],
    settings: dict[str, str],
    *,
    resource_type: ResourceType,
    resource_name: str,
    operation: AclOperation,
    host: str,
    offset: int,
    time_ms: int | None,
) -> WhoAnswer:
    """Who may ``operation`` ``resource_type:resource_name`` from ``host`` on this live set."""
    config = StoreSettings(settings).authorizer_config()
    view = InMemoryAclIndex(bindings)
    action = Action(operation, resource_type, resource_name)
    super_users = tuple(sorted(config.super_users))
    named = sorted({b.principal for b in bindings if b.principal != EVERY_PRINCIPAL} - set(super_users))
    probe = _unused_principal(set(named) | set(super_users))
    everyone = authorize(view, config, probe, host, [action])[0]
    allowed: list[WhoEntry] = []
    denied: list[WhoEntry] = []
    if everyone.allowed:
        allowed.append(_entry(EVERY_PRINCIPAL, everyone))
    for principal in named:
        decision = authorize(view, config, principal, host, [action])[0]
        if decision.allowed:
            allowed.append(_entry(principal, decision))
        elif everyone.allowed:
            denied.append(_entry(principal, decision))
    return WhoAnswer(
        offset=offset,
        time_ms=time_ms,
        allowed=tuple(allowed),
        denied=tuple(denied),
        super_users=super_users,
        everyone=everyone.allowed,
    )


def _entry(principal: str, decision: Decision) -> WhoEntry:
    return WhoEntry(principal=principal, deciding=decision.rule.name, binding=decision.binding)


def _unused_principal(taken: set[str]) -> str:
    """A principal no binding and no super user names: it stands for 'anyone else'."""
    candidate = "User:anyone-else"
    while candidate in taken:
        candidate += "_"
    return candidate


Presence = tuple[HistoryEvent, HistoryEvent | None]
"""A stretch in which some binding that cannot match the requester applies to the resource:
the event that began it and the one that ended it (None while it lasts)."""


def access_intervals(
    intervals: Sequence[Validity],
    *,
    principal: str,
    host: str,
    action: Action,
    presence: Sequence[Presence] = (),
) -> list[Interval]:
    """Every interval in which ``principal`` from ``host`` was allowed ``action``.

    The decision is taken after each change point (each offset where an interval opens or
    closes); an interval starts at the event that turned it ALLOWED and ends at the one that
    turned it back.  ``presence`` stands for bindings left out of ``intervals`` because they
    cannot match the requester (:func:`requester_matches`): they only decide whether any
    ACL applies to the resource (``allow.everyone.if.no.acl.found``), which a stand-in
    binding of an unused principal decides the same way.
    """
    index = InMemoryAclIndex()
    settings: dict[str, str] = {}
    changes: dict[int, list[tuple[bool, HistoryEvent, Validity | AclBinding]]] = {}
    for interval in intervals:
        changes.setdefault(interval.from_offset, []).append((True, interval.opened, interval))
        if interval.closed is not None:
            changes.setdefault(interval.closed.offset, []).append((False, interval.closed, interval))
    stand_in = AclBinding.of(
        action.resource_type, action.name, PatternType.LITERAL, _unused_principal({principal}),
        "*", AclOperation.READ, AclPermissionType.ALLOW,
    )  # fmt: skip
    for began, ended in presence:
        changes.setdefault(began.offset, []).append((True, began, stand_in))
        if ended is not None:
            changes.setdefault(ended.offset, []).append((False, ended, stand_in))
    found: list[Interval] = []
    opened: HistoryEvent | None = None
    for offset in sorted(changes):
        event: HistoryEvent | None = None
        # Closings first: a setting's new value opens at the offset that closes the old one.
        for starts, by, what in sorted(changes[offset], key=lambda c: c[0]):
            event = by
            if isinstance(what, AclBinding):
                (index.add if starts else index.remove)(what)
            else:
                _apply(index, settings, what, starts)
        config = StoreSettings(settings).authorizer_config()
        allowed = authorize(index, config, principal, host, [action])[0].allowed
        assert event is not None
        if allowed and opened is None:
            opened = event
        elif not allowed and opened is not None:
            found.append(_interval(opened, event))
            opened = None
    if opened is not None:
        found.append(_interval(opened, None))
    return found


def requester_matches(principal: str, host: str) -> Callable[[AclBinding], bool]:
    """Whether a binding's principal and host can match this requester (Kafka compares the
    principal's text, or ``User:*``, and the host, or ``*``)."""
    principals = {str(KafkaPrincipal.parse(principal)), EVERY_PRINCIPAL}
    hosts = {host, "*"}
    return lambda b: b.principal in principals and b.host in hosts


def presence_of(spans: Iterable[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
    """The stretches ``[from, to)`` covered by at least one of ``spans`` (None: still open)."""
    merged: list[tuple[int, int | None]] = []
    for start, end in sorted(spans):
        if merged:
            last_start, last_end = merged[-1]
            if last_end is None or start <= last_end:
                merged[-1] = (last_start, None if last_end is None or end is None else max(last_end, end))
                continue
        merged.append((start, end))
    return merged


def _apply(index: InMemoryAclIndex, settings: dict[str, str], interval: Validity, starts: bool) -> None:
    binding = interval.binding
    if binding is not None:
        if starts:
            index.add(binding)
        else:
            index.remove(binding)
        return
    name, value = interval.opened.config_name, interval.opened.config_value
    assert name is not None
    if starts and value is not None:
        settings[name] = value
    elif not starts and settings.get(name) == value:
        del settings[name]


def _interval(opened: HistoryEvent, closed: HistoryEvent | None) -> Interval:
    return Interval(
        from_offset=opened.offset,
        to_offset=None if closed is None else closed.offset,
        from_ms=opened.time_ms,
        to_ms=None if closed is None else closed.time_ms,
        opened_by=opened,
        closed_by=closed,
    )


def overlaps(interval: Interval, from_ms: int | None, to_ms: int | None) -> bool:
    starts_in_time = to_ms is None or interval.from_ms <= to_ms
    ends_in_time = from_ms is None or interval.to_ms is None or interval.to_ms >= from_ms
    return starts_in_time and ends_in_time


def opened_at(offset: int, binding: AclBinding) -> Validity:
    """The interval of ``binding`` opened at ``offset``, its opening event known by its
    offset and binding alone (time 0, no actor): for the state, not for showing."""
    event = HistoryEvent(offset=offset, time_ms=0, type=ACL_CREATED, binding=binding)
    return Validity(id=binding_identity(binding), opened=event)


def acl_state(bindings: Iterable[AclBinding], settings: dict[str, str]) -> AclState:
    """What decides: the live set and the settings in force (defaults for those not set)."""
    config = StoreSettings(settings).authorizer_config()
    return AclState.of(bindings, config.super_users, config.allow_everyone_if_no_acl_found)


def access_change_of(intervals: Sequence[Validity], start: int, end: int) -> AccessChange:
    before, old = state_at(intervals, start)
    after, new = state_at(intervals, end)
    # change_diff: only the regions a changed binding applies to (all of them when a
    # setting changed), the same answer as access_diff's
    access = change_diff(acl_state(before, old), acl_state(after, new))
    return AccessChange(diff=_diff(start, end, before, old, after, new), access=access)


def diff_of(intervals: Sequence[Validity], start: int, end: int) -> DiffAnswer:
    return _diff(start, end, *state_at(intervals, start), *state_at(intervals, end))


def _diff(
    start: int,
    end: int,
    before: set[AclBinding],
    old: dict[str, str],
    after: set[AclBinding],
    new: dict[str, str],
) -> DiffAnswer:
    names = sorted(set(old) | set(new))
    return DiffAnswer(
        from_offset=start,
        to_offset=end,
        added=tuple(sorted(after - before)),
        removed=tuple(sorted(before - after)),
        settings_changed=tuple((n, old.get(n), new.get(n)) for n in names if old.get(n) != new.get(n)),
    )


def restore_plan(intervals: Sequence[Validity], at: int, now: int) -> RestorePlan:
    """The deletes, creates and settings that make the state just after ``now`` what it was
    just after ``at``."""
    then, settings_then = state_at(intervals, at)
    current, settings_now = state_at(intervals, now)
    return RestorePlan(
        at_offset=at,
        offset=now,
        creates=tuple(sorted(then - current)),
        deletes=tuple(sorted(current - then)),
        settings=tuple(
            (name, settings_then.get(name))
            for name in RESTORED_SETTINGS
            if settings_then.get(name) != settings_now.get(name)
        ),
    )
