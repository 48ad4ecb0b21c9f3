"""Reading the history: the archive's two Delta tables, and the log's tail after them.

Every answer reflects the log up to its end at query time: the archive's tables plus the tail
of the log the archive has not reached yet (read through :mod:`store.log` and the one fold,
:func:`read_tail`), and says the offset it reflects.  Point-in-time questions read only the
validity rows that can matter (a resource's type and the names that can apply to it: the
literal name, ``*`` and its prefixes; and the settings, :func:`resource_filter`).

:class:`ArchiveReader` is the only part of the questions that touches Spark and the log; what
it reads is answered by the pure functions of :mod:`jobs.history.questions`, and the two meet
in :class:`jobs.history.archive.HistoryArchive`.  Nothing here writes: the archive job is
:mod:`jobs.history.job`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobs.common.connect import read_delta
from jobs.common.decode import decode_batch
from jobs.common.events import SETTING_KIND, HistoryEvent
from jobs.common.rows import BINDING_FIELDS, event_of_row
from jobs.common.source import LogSource
from jobs.history.answers import EVERY_PRINCIPAL
from jobs.history.errors import ArchiveStoppedError, BeforeHistoryError, NoHistoryError
from jobs.history.paging import cut_page, offset_windows
from jobs.history.questions import (
    Presence,
    applicable_names,
    applies_to,
    opened_at,
    presence_of,
    requester_matches,
)
from jobs.history.tables import current_rows, events_path, validity_of_row, validity_path
from jobs.history.validity import Validity, fold_validity
from store.acl import AclBinding, PatternType, ResourceType, parse_fields
from store.authorizer.applicable import applicable_patterns
from store.log.base import LogUnavailableError
from store.principal import KafkaPrincipal

_TAIL_BATCH: Final = 10_000

Resource = tuple[ResourceType, str]


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


@dataclass(frozen=True, slots=True)
class Point:
    """The offset a question asks about (None: now), its log time when it was resolved from a
    time (else None: :meth:`ArchiveReader.time_at` finds it), and the :class:`Reading` the
    answer builds on."""

    at: int | None
    time_ms: int | None
    reading: Reading


@dataclass(frozen=True, slots=True)
class RequesterIntervals:
    """What ``when`` decides over: the requester's own intervals and the settings, the
    stretches in which some other binding applies to the resource, and the log offset."""

    own: list[Validity]
    presence: list[Presence]
    offset: int


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


# --- which rows can matter -------------------------------------------------------------------


def resource_filter(resource_type: ResourceType, name: str) -> Any:
    """The validity rows that can decide about ``resource_type:name``: its bindings, settings
    (:func:`~jobs.history.questions.applies_to` as a Spark column)."""
    from pyspark.sql import functions as f

    literal, prefixed = applicable_names(name)
    pattern = ((f.col("patternType") == PatternType.LITERAL.name) & f.col("name").isin(literal)) | (
        (f.col("patternType") == PatternType.PREFIXED.name) & f.col("name").isin(prefixed)
    )
    # Settings are the rows without a resource type (the table's partition column): put as
    # such, Spark prunes the other resource types' partitions from the scan.
    return f.col("resourceType").isNull() | ((f.col("resourceType") == resource_type.name) & pattern)


def live_filter(offset: int) -> Any:
    from pyspark.sql import functions as f

    return (f.col("fromOffset") <= offset) & (f.col("toOffset").isNull() | (f.col("toOffset") > offset))


def _live_or_open(offset: int | None) -> Any:
    """The rows live at ``offset``; with no offset (now), the rows still open, which the
    tail then brings to the log's end."""
    from pyspark.sql import functions as f

    return f.col("toOffset").isNull() if offset is None else live_filter(offset)


def _in_range(ms: int, from_ms: int | None, to_ms: int | None) -> bool:
    return (from_ms is None or ms >= from_ms) and (to_ms is None or ms <= to_ms)


def events_at(events: Any, tail: Iterable[HistoryEvent], offsets: set[int]) -> dict[int, HistoryEvent]:
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


# --- the reader -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArchiveReader:
    """The archive under ``location`` (its ``events`` and ``validity`` Delta tables, read with
    ``spark``) and the log ``source`` it was archived from (None: the archive alone)."""

    spark: Any
    location: str
    source: LogSource | None

    def _table(self, path: str) -> Any | None:
        return read_delta(self.spark, path)

    def events_table(self) -> Any | None:
        """The ``events`` table (None while the archive has none)."""
        return self._table(events_path(self.location))

    def validity_table(self) -> Any | None:
        """The ``validity`` table (None while the archive has none)."""
        return self._table(validity_path(self.location))

    def archived_end(self) -> int:
        """The last offset in the archive's events table (-1 when empty or absent)."""
        events = self.events_table()
        if events is None:
            return -1
        found = events.agg({"offset": "max"}).collect()[0][0]
        return -1 if found is None else int(found)

    def read_end(self) -> Reading:
        """The archive's last offset and the log's tail after it."""
        end = self.archived_end()
        tail, offset = read_tail(self.source, end)
        return Reading(end, tuple(tail), offset)

    def intervals(
        self,
        *,
        scope: Any | None = None,
        live: bool = False,
        at: int | None = None,
        relevant: Callable[[Validity], bool] = lambda _: True,
        reading: Reading | None = None,
        state_only: bool = False,
    ) -> Loaded:
        """The validity intervals in ``scope`` (all when None), brought up to the log's end
        with the tail, narrowed to ``relevant`` ones.

        ``live``: only the intervals live at offset ``at`` or, with ``at`` None, those open
        now (every interval the tail may close is among them).  ``scope`` must keep every
        interval ``relevant`` keeps; tail events about other bindings and settings are not
        folded at all.  ``state_only``: the archived intervals' events carry offsets, bindings
        and values only (:func:`~jobs.history.tables.current_rows`), for answers made of the
        state alone.
        """
        reading = reading or self.read_end()
        found: dict[tuple[str, int], Validity] = {}
        table = self.validity_table()
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

    def events(
        self,
        from_ms: int | None,
        to_ms: int | None,
        *,
        after: int | None = None,
        limit: int | None = None,
    ) -> tuple[list[HistoryEvent], int, int | None]:
        """The events with log time in ``[from_ms, to_ms]`` (both optional) and offset above
        ``after`` (optional), oldest first, at most ``limit`` of them (None: all); the log
        offset they reflect; and the next page's cursor (None: nothing follows).

        With a ``limit``, the archive is read window by window of offsets above ``after``
        (:func:`~jobs.history.paging.offset_windows`), each read filtered on the offset column
        and limited in Spark: Delta reads only the files whose offset statistics overlap the
        window, and the driver collects at most ``limit + 1`` rows.
        """
        from pyspark.sql import functions as f

        table = self.events_table()
        found: list[HistoryEvent] = []
        end = -1
        wanted = None if limit is None else limit + 1
        if table is not None:
            selected = table
            if from_ms is not None:
                selected = selected.filter(f.col("timeMs") >= from_ms)
            if to_ms is not None:
                selected = selected.filter(f.col("timeMs") <= to_ms)
            end = self.archived_end()  # the tail starts after it: no row above it is read here
            if wanted is None:
                selected = selected.filter(f.col("offset") <= end)
                if after is not None:
                    selected = selected.filter(f.col("offset") > after)
                found = [event_of_row(r) for r in selected.orderBy("offset").collect()]
            else:
                for low, high in offset_windows(-1 if after is None else after, end, wanted):
                    window = selected.filter((f.col("offset") > low) & (f.col("offset") <= high))
                    rows = window.orderBy("offset").limit(wanted - len(found)).collect()
                    found += [event_of_row(r) for r in rows]
                    if len(found) >= wanted:
                        break
        tail, offset = read_tail(self.source, end)
        above = -1 if after is None else after
        found += [e for e in tail if e.offset > above and _in_range(e.time_ms, from_ms, to_ms)]
        if limit is None:
            return found, offset, None
        page, following = cut_page(found[:wanted], limit, lambda e: e.offset)
        return page, offset, following

    def resolve(self, at_ms: int | None, offset: int | None) -> Point:
        """The point a question asks about: ``offset``, the last offset at or before time
        ``at_ms``, or (neither) now; from the events table's statistics and one aggregation
        of the files at or before ``at_ms``.

        Raises BeforeHistoryError when ``at_ms`` is before the first change held anywhere,
        NoHistoryError when nothing is held yet.
        """
        from pyspark.sql import functions as f

        first: int | None = None
        last = end = -1
        last_ms: int | None = None
        table = self.events_table()
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
        tail, reflected = read_tail(self.source, end)
        reading = Reading(end, tuple(tail), reflected)
        if offset is not None or at_ms is None:
            return Point(offset, None, reading)
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
        return Point(last, last_ms, reading)

    def time_at(self, tail: Sequence[HistoryEvent], offset: int) -> int | None:
        """The log time of the last change at or before ``offset`` (None before the first).

        Reads the tail, else the archive's few rows just below ``offset`` (Delta skips the
        files whose offsets lie elsewhere), else, for a long quiet stretch, all rows below it.
        """
        from pyspark.sql import functions as f

        in_tail = [e for e in tail if e.offset <= offset]
        if in_tail:
            return max(in_tail, key=lambda e: e.offset).time_ms
        table = self.events_table()
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

    def requester_intervals(
        self, *, principal: str, host: str, resource_type: ResourceType, resource_name: str
    ) -> RequesterIntervals:
        """What ``when`` decides over, for ``principal`` from ``host`` on the resource.

        Reads the rows that apply to the resource: the requester's own and the settings in
        full; of the others, each interval once for the state alone (Arrow: its offsets, and
        the binding of those still open, which the tail may close), merged into the stretches
        in which any ACL applies (:func:`~jobs.history.questions.presence_of`), and the events
        where such a stretch begins or ends (from the tail, else the events table by offset).
        """
        own = requester_matches(principal, host)
        relevant = applies_to(resource_type, resource_name)
        reading = self.resolve(None, None).reading
        tail = [e for e in reading.tail if relevant(Validity(id="", opened=e))]
        table = self.validity_table()
        mine: list[Validity] = []
        others_open: list[Validity] = []
        closed_spans: list[tuple[int, int | None]] = []
        archived_events: Any = None
        if table is not None:
            from pyspark.sql import functions as f

            scope = resource_filter(resource_type, resource_name)
            matching = (f.col("kind") == SETTING_KIND) | (
                f.col("principal").isin(str(KafkaPrincipal.parse(principal)), EVERY_PRINCIPAL)
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
            archived_events = self.events_table()
        changed, _ = fold_validity(tail, {v.id: v for v in [*mine, *others_open] if v.closed is None})
        by_key = {(v.id, v.from_offset): v for v in [*mine, *others_open]}
        by_key.update({(v.id, v.from_offset): v for v in changed})
        mine = [v for v in by_key.values() if v.binding is None or own(v.binding)]
        python_others = [v for v in by_key.values() if v.binding is not None and not own(v.binding)]
        stretches = presence_of([*closed_spans, *((v.from_offset, v.to_offset) for v in python_others)])
        ends = {s for s, _ in stretches} | {e for _, e in stretches if e is not None}
        found = events_at(archived_events, reading.tail, ends)
        presence = [(found[s], None if e is None else found[e]) for s, e in stretches]
        return RequesterIntervals(own=mine, presence=presence, offset=reading.offset)

    def resource_intervals(self, resources: Iterable[Resource]) -> tuple[dict[Resource, list[Validity]], int]:
        """Per resource, the validity intervals that can decide about it (its bindings,
        literal, ``*`` and prefixed, and the settings), brought to the log's end; and that
        end's offset.

        One read of the archive for all ``resources``: the validity table semi-joined, on the
        resource type, pattern type and name, with the patterns that can match each resource
        (:func:`store.authorizer.applicable.applicable_patterns`, a broadcast equi-join on the
        executors); then the log's tail, read once and folded on the driver.
        """
        from pyspark.sql import functions as f

        asked = sorted(set(resources))
        found: dict[tuple[str, int], Validity] = {}
        table = self.validity_table() if asked else None
        if table is not None:
            patterns = sorted(
                {(t.name, pt.name, n) for t, name in asked for pt, n in applicable_patterns(name)}
            )
            wanted = self.spark.createDataFrame(
                patterns, "wantedType STRING, wantedPattern STRING, wantedName STRING"
            )
            on = (
                (f.col("resourceType") == f.col("wantedType"))
                & (f.col("patternType") == f.col("wantedPattern"))
                & (f.col("name") == f.col("wantedName"))
            )
            bindings = table.join(f.broadcast(wanted), on, "left_semi")
            rows = bindings.unionByName(table.filter(f.col("kind") == SETTING_KIND))
            for row in rows.collect():
                interval = validity_of_row(row)
                key = (interval.id, interval.from_offset)
                # An interval's closed row supersedes its open row (jobs.history.tables).
                if interval.closed is not None or key not in found:
                    found[key] = interval
        tail, offset = read_tail(self.source, self.archived_end())
        deciders = {resource: applies_to(*resource) for resource in asked}

        def relevant(interval: Validity) -> bool:
            return any(applies(interval) for applies in deciders.values())

        still_open = {v.id: v for v in found.values() if v.closed is None}
        changed, _ = fold_validity([e for e in tail if relevant(Validity(id="", opened=e))], still_open)
        for interval in changed:
            found[(interval.id, interval.from_offset)] = interval
        return {r: [v for v in found.values() if applies(v)] for r, applies in deciders.items()}, offset
