"""The history archive as one handle: :class:`HistoryArchive`, in the shape of Delta's
``DeltaTable.forPath(spark, path)``.

The handle carries the session, the archive's location and the log it archives; the questions
are its methods, each answered from the archive's tables plus the tail of the log the archive
has not reached yet, and each saying the log offset it reflects (:mod:`jobs.history.reading`
reads, :mod:`jobs.history.questions` answers).  :meth:`HistoryArchive.update` runs the archive
job itself (:mod:`jobs.history.job`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jobs.common.source import LogSource
from jobs.common.streaming import StreamProgress
from jobs.history.answers import (
    AccessChange,
    DiffAnswer,
    EventsAnswer,
    Intervals,
    RestorePlan,
    Snapshot,
    WhenAnswer,
    WhoAnswer,
)
from jobs.history.errors import NoHistoryError
from jobs.history.job import ARCHIVE_MAX_RECORDS_PER_BATCH, run_archive
from jobs.history.questions import (
    access_change_of,
    access_intervals,
    applies_to,
    diff_of,
    overlaps,
    restore_plan,
    state_at,
    who_at,
)
from jobs.history.reading import ArchiveReader, resource_filter
from jobs.history.validity import Validity
from store.access_diff import Request
from store.acl import AclOperation, ResourceType
from store.authorizer import Action
from store.principal import KafkaPrincipal


class HistoryArchive:
    """The archive under one location (its ``events`` and ``validity`` Delta tables) and the
    log it archives.

    Times are epoch milliseconds; a point is a time (``at_ms``: the last change at or before
    it), a log offset, or, with neither, now.  A time before the first change held raises
    :class:`~jobs.history.errors.BeforeHistoryError`.

    Example::

        archive = HistoryArchive.for_path(spark, "/data/history", source=LogSource.embedded("/data/log"))
        archive.update("/data/history/_checkpoint", once=True)
        archive.who(resource_type=ResourceType.TOPIC, resource_name="orders",
                    operation=AclOperation.READ, host="10.0.0.1", at_ms=1_763_906_400_000)
    """

    def __init__(self, reader: ArchiveReader) -> None:
        self._reader = reader

    @classmethod
    def for_path(cls, spark: Any, location: str, *, source: LogSource | None = None) -> HistoryArchive:
        """The archive at ``location`` (any Hadoop-compatible URI), read with ``spark``, of the
        log ``source`` (None: the archive alone, without the tail it has not reached).

        Example::

            archive = HistoryArchive.for_path(spark, "s3a://bucket/history",
                                              source=LogSource.kafka("kafka:9092", "aclstore-acls"))
        """
        return cls(ArchiveReader(spark, location, source))

    @property
    def spark(self) -> Any:
        return self._reader.spark

    @property
    def location(self) -> str:
        return self._reader.location

    @property
    def source(self) -> LogSource | None:
        return self._reader.source

    # --- the archive job ----------------------------------------------------------------------

    def update(
        self,
        checkpoint: str,
        *,
        once: bool,
        max_records_per_batch: int = ARCHIVE_MAX_RECORDS_PER_BATCH,
        on_progress: Callable[[StreamProgress], None] | None = None,
    ) -> None:
        """Copy the log into the archive: until stopped, or (``once``) until the log's end as
        the job starts.  Raises :class:`~jobs.history.errors.ArchiveStoppedError` on a record
        the fold refuses (everything before it is archived).

        Example::

            archive.update("/data/history/_checkpoint", once=True)
        """
        if self.source is None:
            raise ValueError("the archive job reads a log: give the archive a source")
        run_archive(self.spark, self.source, self.location, checkpoint, once=once,
                    max_records_per_batch=max_records_per_batch, on_progress=on_progress)  # fmt: skip

    # --- the questions -----------------------------------------------------------------------

    def events(
        self,
        *,
        from_ms: int | None = None,
        to_ms: int | None = None,
        after: int | None = None,
        limit: int | None = None,
    ) -> EventsAnswer:
        """Every change with log time in ``[from_ms, to_ms]`` (both optional), oldest first;
        a page of them with ``after`` (offsets strictly above it) and ``limit`` (at most that
        many), whose ``next_after`` is the next page's ``after`` (None: the last page).

        Example::

            archive.events(from_ms=1_763_906_400_000).events[0].actor   # 'User:admin'
            page = archive.events(limit=100)
            archive.events(after=page.next_after, limit=100)            # the page after it
        """
        found, offset, following = self._reader.events(from_ms, to_ms, after=after, limit=limit)
        return EventsAnswer(events=tuple(found), offset=offset, next_after=following)

    def snapshot(self, *, at_ms: int | None = None, offset: int | None = None) -> Snapshot:
        """The live bindings and settings at ``offset``, at time ``at_ms``, or now.

        Example::

            archive.snapshot(offset=7).bindings   # (AclBinding(...), ...)
        """
        point = self._reader.resolve(at_ms, offset)
        loaded = self._reader.intervals(live=True, at=point.at, reading=point.reading, state_only=True)
        at = loaded.offset if point.at is None else point.at
        bindings, settings = state_at(loaded.intervals, at)
        return Snapshot(
            offset=at,
            time_ms=self._reader.time_at(loaded.tail, at) if point.time_ms is None else point.time_ms,
            bindings=tuple(sorted(bindings)),
            settings=settings,
        )

    def who(
        self,
        *,
        resource_type: ResourceType,
        resource_name: str,
        operation: AclOperation,
        host: str,
        at_ms: int | None = None,
        offset: int | None = None,
    ) -> WhoAnswer:
        """Who could do ``operation`` on ``resource_type:resource_name`` from ``host`` then
        (Kafka's decision rules on the live set at that point).

        Example::

            who = archive.who(resource_type=ResourceType.TOPIC, resource_name="orders",
                              operation=AclOperation.READ, host="10.0.0.1", offset=7)
            [e.principal for e in who.allowed]   # ['User:alice', 'User:bob']
        """
        point = self._reader.resolve(at_ms, offset)
        loaded = self._reader.intervals(
            scope=resource_filter(resource_type, resource_name), live=True, at=point.at,
            relevant=applies_to(resource_type, resource_name), reading=point.reading, state_only=True,
        )  # fmt: skip
        at = loaded.offset if point.at is None else point.at
        bindings, settings = state_at(loaded.intervals, at)
        return who_at(
            bindings, settings, resource_type=resource_type, resource_name=resource_name,
            operation=operation, host=host, offset=at,
            time_ms=self._reader.time_at(loaded.tail, at) if point.time_ms is None else point.time_ms,
        )  # fmt: skip

    def when(
        self,
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

        The decision rules run at the change points of the requester's own bindings, the
        settings and the stretches in which any other binding applies to the resource
        (:meth:`~jobs.history.reading.ArchiveReader.requester_intervals`).

        Example::

            when = archive.when(principal="User:bob", host="10.0.0.1", operation=AclOperation.READ,
                                resource_type=ResourceType.TOPIC, resource_name="orders")
            [(i.from_offset, i.to_offset) for i in when.intervals]   # [(0, 4)]
        """
        text = str(principal)
        read = self._reader.requester_intervals(
            principal=text, host=host, resource_type=resource_type, resource_name=resource_name
        )
        action = Action(operation, resource_type, resource_name)
        found = access_intervals(read.own, principal=text, host=host, action=action, presence=read.presence)
        shown = tuple(i for i in found if overlaps(i, from_ms, to_ms))
        return WhenAnswer(intervals=shown, offset=read.offset)

    def when_each(self, requests: Iterable[Request]) -> dict[Request, WhenAnswer]:
        """:meth:`when` over the whole history for many requests at once: one read of the
        archive for all their resources and one of the log's tail, then the decision rules
        once per distinct request.  Every answer reflects the same offset.

        Example::

            answers = archive.when_each([Request("User:bob", "10.0.0.1", AclOperation.READ,
                                                 ResourceType.TOPIC, "orders")])
        """
        unique = list(dict.fromkeys(requests))
        resources = ((r.resource_type, r.resource_name) for r in unique)
        by_resource, offset = self._reader.resource_intervals(resources)

        def answer(r: Request) -> WhenAnswer:
            action = Action(r.operation, r.resource_type, r.resource_name)
            intervals = by_resource[(r.resource_type, r.resource_name)]
            found = access_intervals(intervals, principal=r.principal, host=r.host, action=action)
            return WhenAnswer(intervals=tuple(found), offset=offset)

        return {r: answer(r) for r in unique}

    def diff(
        self,
        *,
        from_ms: int | None = None,
        to_ms: int | None = None,
        from_offset: int | None = None,
        to_offset: int | None = None,
    ) -> DiffAnswer:
        """The bindings and settings added and removed between two points (the first defaults
        to before the first record, the second to now).

        Example::

            archive.diff(from_ms=1_763_906_400_000, to_ms=1_763_910_000_000).added
        """
        return diff_of(*self._between(from_ms, to_ms, from_offset, to_offset))

    def access_change(
        self,
        *,
        from_ms: int | None = None,
        to_ms: int | None = None,
        from_offset: int | None = None,
        to_offset: int | None = None,
    ) -> AccessChange:
        """:meth:`diff`, and the access it changed: every request whose decision differs
        between the two points, as the one access-diff engine (:mod:`store.access_diff`)
        finds it.

        Example::

            archive.access_change(from_offset=3, to_offset=9).access.widened
        """
        return access_change_of(*self._between(from_ms, to_ms, from_offset, to_offset))

    def restore(self, *, at_ms: int | None = None, offset: int | None = None) -> RestorePlan:
        """The deletes, creates and settings that make the live set now what it was at the
        given point (a plan: nothing is written).

        Example::

            plan = archive.restore(offset=7)
            plan.deletes, plan.creates, plan.settings
        """
        point = self._reader.resolve(at_ms, offset)
        if point.at is None:
            raise NoHistoryError("restore needs a point to go back to: give a time or an offset")
        loaded = self._reader.intervals(reading=point.reading)
        return restore_plan(loaded.intervals, point.at, loaded.offset)

    def offset_at(self, at_ms: int) -> int:
        """The last offset whose log time is at or before ``at_ms``.

        Example::

            archive.offset_at(1_763_906_400_000)   # 7
        """
        at = self._reader.resolve(at_ms, None).at
        assert at is not None
        return at

    def intervals(self, *, live: bool = False) -> Intervals:
        """The validity intervals themselves (what the questions are answered from), each
        binding's and setting's, brought to the log's end; ``live``: only those open now.

        Example::

            grants = [v.binding for v in archive.intervals(live=True).intervals if v.binding]
        """
        loaded = self._reader.intervals(live=live)
        return Intervals(intervals=loaded.intervals, offset=loaded.offset)

    def _between(
        self, from_ms: int | None, to_ms: int | None, from_offset: int | None, to_offset: int | None
    ) -> tuple[Sequence[Validity], int, int]:
        """The intervals and the two offsets a question about two points reads (the second
        defaults to the log's end, the first to before the first record)."""
        start = self._reader.resolve(from_ms, from_offset).at
        end = self._reader.resolve(to_ms, to_offset)
        loaded = self._reader.intervals(reading=end.reading)
        return loaded.intervals, -1 if start is None else start, loaded.offset if end.at is None else end.at
