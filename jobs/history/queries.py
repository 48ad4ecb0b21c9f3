"""Questions asked of the history: snapshot, who, when, diff, restore, events.

Each answer reflects the log up to its end at query time: the archive's tables plus the tail
of the log the archive has not reached yet (read through :mod:`store.log` and the one fold),
and says the offset it reflects.  Point-in-time questions read only the validity rows that
can matter (a resource's type and the names that can apply to it: the literal name, ``*`` and
its prefixes; and the settings), then ask Kafka's own decision rules
(:func:`store.authorizer.authorize`) about the live set rebuilt from them.

The reading (:func:`load_intervals`, :func:`load_events`) is the only part that touches
Spark; :class:`Timeline` and the functions below it are pure and work on intervals.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobs.common.decode import decode_batch
from jobs.common.events import ACL_CREATED, HistoryEvent, binding_identity
from jobs.common.rows import BINDING_FIELDS, event_of_row
from jobs.common.source import LogSource
from jobs.history.answers import (
    EVERY_PRINCIPAL,
    AccessChange,
    DiffAnswer,
    EventsAnswer,
    Interval,
    RestorePlan,
    Snapshot,
    WhenAnswer,
    WhoAnswer,
    WhoEntry,
)
from jobs.history.errors import ArchiveStoppedError, BeforeHistoryError, NoHistoryError
from jobs.history.tables import current_rows, events_path, validity_of_row, validity_path
from jobs.history.validity import Validity, fold_validity
from store.access_diff import AclState, change_diff
from store.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    parse_fields,
)
from store.authorizer import (
    ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG,
    Action,
    Decision,
    InMemoryAclIndex,
    authorize,
)
from store.authorizer.applicable import applicable_patterns
from store.log.base import LogUnavailableError
from store.principal import SUPER_USERS_CONFIG, KafkaPrincipal
from store.settings import StoreSettings

_TAIL_BATCH: Final = 10_000
RESTORED_SETTINGS: Final = (SUPER_USERS_CONFIG, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG)
"""The settings a restore sets back: those that decide access.  ``acl.format.version`` is
not among them (lowering it is refused while newer bindings live, and is an upgrade step)."""


# --- what the archive and the log hold -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Loaded:
    """Intervals (archive + tail), the log offset they reflect and the tail's events."""

    intervals: tuple[Validity, ...]
    offset: int
    tail: tuple[HistoryEvent, ...]


@dataclass(frozen=True, slots=True)
class Reading:
    """What one answer reads once: the archive's last offset, the log's tail after it and the
    log offset the two reflect together."""

    end: int
    tail: tuple[HistoryEvent, ...]
    offset: int


def _table(spark: Any, path: str) -> Any | None:
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        return None
    return spark.read.format("delta").load(path)


def archived_end(spark: Any, location: str) -> int:
    """The last offset in the archive's events table (-1 when empty or absent)."""
    events = _table(spark, events_path(location))
    if events is None:
        return -1
    found = events.agg({"offset": "max"}).collect()[0][0]
    return -1 if found is None else int(found)


def read_tail(
    source: LogSource | None, after: int, *, timeout: float = 60.0
) -> tuple[list[HistoryEvent], int]:
    """The events of the log after offset ``after`` up to its end now, and the last offset.

    Reads until the high watermark taken at the start is reached (a poll may come back empty
    while the consumer connects), so an answer never claims an offset it has not read.
    """
    if source is None:
        return [], after
    log = source.open_log()
    try:
        _, high = log.watermarks()
        events: list[HistoryEvent] = []
        position = after + 1
        deadline = time.monotonic() + timeout
        while position < high:
            records = log.read(position, max_records=_TAIL_BATCH, timeout=1.0)
            if not records:
                if time.monotonic() > deadline:
                    raise LogUnavailableError(
                        f"{source}: could not read offsets {position}..{high - 1} in {timeout:.0f} s; "
                        "check that the log is reachable and retry"
                    )
                continue
            decoded, refused = decode_batch([(r.key, r.value, r.offset, r.timestamp_ms) for r in records])
            events.extend(decoded)
            if refused is not None:
                raise ArchiveStoppedError.at(refused.offset, refused.message)
            position = records[-1].offset + 1
        return events, max(after, high - 1)
    finally:
        log.close()


def read_end(spark: Any, location: str, source: LogSource | None) -> Reading:
    """The archive's last offset and the log's tail after it."""
    end = archived_end(spark, location)
    tail, offset = read_tail(source, end)
    return Reading(end, tuple(tail), offset)


def load_intervals(
    spark: Any,
    location: str,
    source: LogSource | None,
    *,
    scope: Any | None = None,
    live: bool = False,
    at: int | None = None,
    relevant: Callable[[Validity], bool] = lambda _: True,
    reading: Reading | None = None,
    state_only: bool = False,
) -> Loaded:
    """The validity intervals in ``scope`` (all when None), brought up to the log's end with
    the tail, narrowed to ``relevant`` ones.

    ``live``: only the intervals live at offset ``at`` or, with ``at`` None, those open now
    (every interval the tail may close is among them).  ``scope`` must keep every interval
    ``relevant`` keeps; tail events about other bindings and settings are not folded at all.
    ``state_only``: the archived intervals' events carry offsets, bindings and values only
    (:func:`~jobs.history.tables.current_rows`), for answers made of the state alone.
    """
    reading = reading or read_end(spark, location, source)
    found: dict[tuple[str, int], Validity] = {}
    table = _table(spark, validity_path(location))
    if table is not None:
        where = _live_or_open(at) if live else None
        for row in current_rows(table, scope, where, state_only=state_only).collect():
            interval = validity_of_row(row)
            key = (interval.id, interval.from_offset)
            if interval.closed is not None or key not in found:
                found[key] = interval
    still_open = {v.id: v for v in found.values() if v.closed is None}
    tail = reading.tail
    changed, _ = fold_validity([e for e in tail if relevant(Validity(id="", opened=e))], still_open)
    for interval in changed:
        found[(interval.id, interval.from_offset)] = interval
    chosen = tuple(v for v in found.values() if relevant(v))
    return Loaded(chosen, reading.offset, tuple(tail))


def load_events(
    spark: Any, location: str, source: LogSource | None, from_ms: int | None, to_ms: int | None
) -> tuple[list[HistoryEvent], int]:
    """The events with log time in ``[from_ms, to_ms]`` (both optional), oldest first."""
    from pyspark.sql import functions as f

    table = _table(spark, events_path(location))
    found: list[HistoryEvent] = []
    end = -1
    if table is not None:
        selected = table
        if from_ms is not None:
            selected = selected.filter(f.col("timeMs") >= from_ms)
        if to_ms is not None:
            selected = selected.filter(f.col("timeMs") <= to_ms)
        found = [event_of_row(r) for r in selected.orderBy("offset").collect()]
        end = archived_end(spark, location)
    tail, offset = read_tail(source, end)
    found += [e for e in tail if _in_range(e.time_ms, from_ms, to_ms)]
    return found, offset


def _in_range(ms: int, from_ms: int | None, to_ms: int | None) -> bool:
    return (from_ms is None or ms >= from_ms) and (to_ms is None or ms <= to_ms)


def offset_at(spark: Any, location: str, source: LogSource | None, at_ms: int) -> int:
    """The last offset whose log time is at or before ``at_ms``.

    Raises BeforeHistoryError when ``at_ms`` is before the first change held anywhere.
    """
    at, _ = _resolve(spark, location, source, at_ms, None)
    assert at is not None
    return at


def _resolve(
    spark: Any, location: str, source: LogSource | None, at_ms: int | None, offset: int | None
) -> tuple[int | None, Reading]:
    """The offset asked about (``offset``, the last at or before ``at_ms``, or None: now) and
    the :class:`Reading` the answer builds on (:func:`_resolve_point`)."""
    at, _, reading = _resolve_point(spark, location, source, at_ms, offset)
    return at, reading


def _resolve_point(
    spark: Any, location: str, source: LogSource | None, at_ms: int | None, offset: int | None
) -> tuple[int | None, int | None, Reading]:
    """:func:`_resolve`, and the log time of the offset when it was resolved from ``at_ms``
    (else None: :func:`time_at` finds it), from the events table's statistics and one
    aggregation of the files at or before ``at_ms``."""
    from pyspark.sql import functions as f

    first: int | None = None
    last = end = -1
    last_ms: int | None = None
    table = _table(spark, events_path(location))
    if table is not None:
        # Delta answers a whole table's minimum and maximum from its files' statistics; the
        # point's own aggregation reads only the files with a change at or before it.
        row = table.agg(f.max("offset"), f.min("timeMs")).collect()[0]
        end = -1 if row[0] is None else int(row[0])
        if at_ms is not None:
            first = None if row[1] is None else int(row[1])
            point = f.max(f.struct("offset", "timeMs"))  # ordered by offset first
            found = table.filter(f.col("timeMs") <= at_ms).agg(point).collect()[0][0]
            if found is not None:
                last, last_ms = int(found[0]), int(found[1])
    tail, reflected = read_tail(source, end)
    reading = Reading(end, tuple(tail), reflected)
    if offset is not None or at_ms is None:
        return offset, None, reading
    for event in tail:
        first = event.time_ms if first is None else min(first, event.time_ms)
        if event.time_ms <= at_ms and event.offset > last:
            last, last_ms = event.offset, event.time_ms
    if first is None:
        raise NoHistoryError("the archive and the log hold no change yet: nothing to look back on")
    if at_ms < first:
        raise BeforeHistoryError(
            f"time {at_ms} ms is before the first change held ({first} ms): ask about a later time"
        )
    return last, last_ms, reading


# --- which rows can matter -------------------------------------------------------------------


def applicable_names(name: str) -> tuple[list[str], list[str]]:
    """The LITERAL and the PREFIXED names of the patterns that can match the resource ``name``
    (:func:`store.authorizer.applicable.applicable_patterns`: the name and ``*``; each prefix)."""
    patterns = applicable_patterns(name)
    literal = [n for pt, n in patterns if pt is PatternType.LITERAL]
    return literal, [n for pt, n in patterns if pt is PatternType.PREFIXED]


def resource_filter(resource_type: ResourceType, name: str) -> Any:
    """The validity rows that can decide about ``resource_type:name``: its bindings, settings."""
    from pyspark.sql import functions as f

    literal, prefixed = applicable_names(name)
    pattern = ((f.col("patternType") == PatternType.LITERAL.name) & f.col("name").isin(literal)) | (
        (f.col("patternType") == PatternType.PREFIXED.name) & f.col("name").isin(prefixed)
    )
    # Settings are the rows without a resource type (the table's partition column): put as
    # such, Spark prunes the other resource types' partitions from the scan.
    return f.col("resourceType").isNull() | ((f.col("resourceType") == resource_type.name) & pattern)


def applies_to(resource_type: ResourceType, name: str) -> Callable[[Validity], bool]:
    """:func:`resource_filter` as a predicate on intervals (for the tail)."""
    patterns = frozenset(applicable_patterns(name))

    def relevant(interval: Validity) -> bool:
        binding = interval.binding
        if binding is None:
            return True
        if binding.resource_type is not resource_type:
            return False
        return (binding.pattern_type, binding.name) in patterns

    return relevant


def live_filter(offset: int) -> Any:
    from pyspark.sql import functions as f

    return (f.col("fromOffset") <= offset) & (f.col("toOffset").isNull() | (f.col("toOffset") > offset))


def _live_or_open(offset: int | None) -> Any:
    """The rows live at ``offset``; with no offset (now), the rows still open, which the
    tail then brings to the log's end."""
    from pyspark.sql import functions as f

    return f.col("toOffset").isNull() if offset is None else live_filter(offset)


# --- pure: the state at an offset and its changes --------------------------------------------


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


def time_at(spark: Any, location: str, tail: Sequence[HistoryEvent], offset: int) -> int | None:
    """The log time of the last change at or before ``offset`` (None before the first).

    Reads the tail, else the archive's few rows just below ``offset`` (Delta skips the files
    whose offsets lie elsewhere), else, for a long quiet stretch, all rows below it.
    """
    from pyspark.sql import functions as f

    in_tail = [e for e in tail if e.offset <= offset]
    if in_tail:
        return max(in_tail, key=lambda e: e.offset).time_ms
    table = _table(spark, events_path(location))
    if table is None:
        return None
    for lowest in (offset - 10_000, None):
        rows = table.filter(f.col("offset") <= offset)
        if lowest is not None:
            rows = rows.filter(f.col("offset") >= lowest)
        found = rows.orderBy(f.col("offset").desc()).select("timeMs").limit(1).collect()
        if found:
            return int(found[0][0])
    return None


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


# --- the answers ------------------------------------------------------------------------------


def snapshot(
    spark: Any,
    location: str,
    source: LogSource | None,
    *,
    at_ms: int | None = None,
    offset: int | None = None,
) -> Snapshot:
    """The live bindings and settings at ``offset``, at time ``at_ms``, or now."""
    at, at_time, reading = _resolve_point(spark, location, source, at_ms, offset)
    loaded = load_intervals(spark, location, source, live=True, at=at, reading=reading, state_only=True)
    at = loaded.offset if at is None else at
    bindings, settings = state_at(loaded.intervals, at)
    return Snapshot(
        offset=at,
        time_ms=time_at(spark, location, loaded.tail, at) if at_time is None else at_time,
        bindings=tuple(sorted(bindings)),
        settings=settings,
    )


def who(
    spark: Any,
    location: str,
    source: LogSource | None,
    *,
    resource_type: ResourceType,
    resource_name: str,
    operation: AclOperation,
    host: str,
    at_ms: int | None = None,
    offset: int | None = None,
) -> WhoAnswer:
    """Who could do ``operation`` on ``resource_type:resource_name`` from ``host`` then."""
    at, at_time, reading = _resolve_point(spark, location, source, at_ms, offset)
    loaded = load_intervals(
        spark, location, source, scope=resource_filter(resource_type, resource_name), live=True,
        at=at, relevant=applies_to(resource_type, resource_name), reading=reading, state_only=True,
    )  # fmt: skip
    at = loaded.offset if at is None else at
    bindings, settings = state_at(loaded.intervals, at)
    return who_at(
        bindings, settings, resource_type=resource_type, resource_name=resource_name,
        operation=operation, host=host, offset=at,
        time_ms=time_at(spark, location, loaded.tail, at) if at_time is None else at_time,
    )  # fmt: skip


def when(
    spark: Any,
    location: str,
    source: LogSource | None,
    *,
    principal: KafkaPrincipal | str,
    host: str,
    operation: AclOperation,
    resource_type: ResourceType,
    resource_name: str,
    from_ms: int | None = None,
    to_ms: int | None = None,
) -> WhenAnswer:
    """The intervals in which ``principal`` could do ``operation`` on the resource from
    ``host``, overlapping ``[from_ms, to_ms]``, with the events that opened and closed them.

    Reads the rows that apply to the resource: the requester's own and the settings in full;
    of the others, each interval once for the state alone (Arrow: its offsets, and the
    binding of those still open, which the tail may close), merged into the stretches in
    which any ACL applies (:func:`presence_of`), and the events where such a stretch begins or
    ends (from the tail, else the events table by offset).  The decision rules then run at
    the change points of the requester's own bindings, the settings and those stretches only.
    """
    text = str(principal)
    action = Action(operation, resource_type, resource_name)
    own = requester_matches(text, host)
    relevant = applies_to(resource_type, resource_name)
    _, reading = _resolve(spark, location, source, None, None)
    offset = reading.offset
    tail = [e for e in reading.tail if relevant(Validity(id="", opened=e))]
    table = _table(spark, validity_path(location))
    mine: list[Validity] = []
    others_open: list[Validity] = []
    closed_spans: list[tuple[int, int | None]] = []
    archived_events: Any = None
    if table is not None:
        from pyspark.sql import functions as f

        scope = resource_filter(resource_type, resource_name)
        matching = (f.col("kind") == "setting") | (
            f.col("principal").isin(str(KafkaPrincipal.parse(text)), EVERY_PRINCIPAL)
            & f.col("host").isin(host, "*")
        )
        # In full: the requester's own intervals and the settings (few rows, which Spark
        # selects in the scan: the filters are on opening columns).
        for row in current_rows(table, scope & matching).collect():
            interval = validity_of_row(row)
            if interval.binding is None or own(interval.binding):
                mine.append(interval)
            else:
                others_open.append(interval)
        # Every other interval once (its closed row where there is one), read for the state
        # alone: its offsets, and the binding of those still open (the tail may close them).
        others = current_rows(table, scope & ~matching, state_only=True)
        still = f.col("toOffset").isNull()
        lean = others.select(
            "fromOffset", "toOffset", *(f.when(still, f.col(c)).alias(c) for c in BINDING_FIELDS)
        ).toArrow()
        froms, tos = lean.column("fromOffset").to_pylist(), lean.column("toOffset").to_pylist()
        fields = zip(*(lean.column(c).to_pylist() for c in BINDING_FIELDS), strict=True)
        for start, end, binding_fields in zip(froms, tos, fields, strict=True):
            if end is not None:
                closed_spans.append((start, end))
            else:
                others_open.append(opened_at(start, AclBinding.of(*parse_fields(binding_fields))))
        archived_events = _table(spark, events_path(location))
    changed, _ = fold_validity(tail, {v.id: v for v in [*mine, *others_open] if v.closed is None})
    by_key = {(v.id, v.from_offset): v for v in [*mine, *others_open]}
    by_key.update({(v.id, v.from_offset): v for v in changed})
    mine = [v for v in by_key.values() if v.binding is None or own(v.binding)]
    python_others = [v for v in by_key.values() if v.binding is not None and not own(v.binding)]
    stretches = presence_of([*closed_spans, *((v.from_offset, v.to_offset) for v in python_others)])
    events_at = _events_at(
        archived_events, reading.tail, {s for s, _ in stretches} | {e for _, e in stretches if e is not None}
    )
    presence = [(events_at[s], None if e is None else events_at[e]) for s, e in stretches]
    found = access_intervals(mine, principal=text, host=host, action=action, presence=presence)
    return WhenAnswer(intervals=tuple(i for i in found if overlaps(i, from_ms, to_ms)), offset=offset)


def opened_at(offset: int, binding: AclBinding) -> Validity:
    """The interval of ``binding`` opened at ``offset``, its opening event known by its
    offset and binding alone (time 0, no actor): for the state, not for showing."""
    event = HistoryEvent(offset=offset, time_ms=0, type=ACL_CREATED, binding=binding)
    return Validity(id=binding_identity(binding), opened=event)


def _events_at(events: Any, tail: Iterable[HistoryEvent], offsets: set[int]) -> dict[int, HistoryEvent]:
    """The events at ``offsets`` (one record, one event), from the ``tail`` and, for the
    offsets it lacks, the archive's ``events`` table: Delta reads only the files whose
    offset range holds one of them."""
    found = {e.offset: e for e in tail if e.offset in offsets}
    missing = sorted(offsets - set(found))
    if events is not None and missing:
        from pyspark.sql import functions as f

        for row in events.filter(f.col("offset").isin(missing)).collect():
            found[row["offset"]] = event_of_row(row)
    return found


def diff(
    spark: Any,
    location: str,
    source: LogSource | None,
    *,
    from_ms: int | None = None,
    to_ms: int | None = None,
    from_offset: int | None = None,
    to_offset: int | None = None,
) -> DiffAnswer:
    """The bindings and settings added and removed between two points (the second: now)."""
    return diff_of(*_between(spark, location, source, from_ms, to_ms, from_offset, to_offset))


def _between(
    spark: Any,
    location: str,
    source: LogSource | None,
    from_ms: int | None,
    to_ms: int | None,
    from_offset: int | None,
    to_offset: int | None,
) -> tuple[Sequence[Validity], int, int]:
    """The intervals and the two offsets a question about two points reads (the second
    defaults to the log's end, the first to before the first record)."""
    start, _ = _resolve(spark, location, source, from_ms, from_offset)
    end, reading = _resolve(spark, location, source, to_ms, to_offset)
    loaded = load_intervals(spark, location, source, reading=reading)
    return (
        loaded.intervals,
        -1 if start is None else start,
        loaded.offset if end is None else end,
    )


def access_change(
    spark: Any,
    location: str,
    source: LogSource | None,
    *,
    from_ms: int | None = None,
    to_ms: int | None = None,
    from_offset: int | None = None,
    to_offset: int | None = None,
) -> AccessChange:
    """:func:`diff`, and the access it changed: every request whose decision differs between
    the two points, as the one access-diff engine (:mod:`store.access_diff`) finds it."""
    return access_change_of(*_between(spark, location, source, from_ms, to_ms, from_offset, to_offset))


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


def restore(
    spark: Any,
    location: str,
    source: LogSource | None,
    *,
    at_ms: int | None = None,
    offset: int | None = None,
) -> RestorePlan:
    """The deletes and creates that make the live set now what it was at the given point."""
    at, reading = _resolve(spark, location, source, at_ms, offset)
    if at is None:
        raise NoHistoryError("restore needs a point to go back to: give a time or an offset")
    loaded = load_intervals(spark, location, source, reading=reading)
    then, settings_then = state_at(loaded.intervals, at)
    now, settings_now = state_at(loaded.intervals, loaded.offset)
    return RestorePlan(
        at_offset=at,
        offset=loaded.offset,
        creates=tuple(sorted(then - now)),
        deletes=tuple(sorted(now - then)),
        settings=tuple(
            (name, settings_then.get(name))
            for name in RESTORED_SETTINGS
            if settings_then.get(name) != settings_now.get(name)
        ),
    )


def events(
    spark: Any,
    location: str,
    source: LogSource | None,
    *,
    from_ms: int | None = None,
    to_ms: int | None = None,
) -> EventsAnswer:
    """Every change with log time in ``[from_ms, to_ms]``, oldest first."""
    found, offset = load_events(spark, location, source, from_ms, to_ms)
    return EventsAnswer(events=tuple(found), offset=offset)
