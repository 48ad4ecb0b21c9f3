"""The ACL history: an archive of every change in the log, and questions asked of it.

Compaction keeps the log small, so the log alone forgets old values.  The archive job
(:mod:`jobs.history.job`) copies every change, read through the one fold of the log
(:mod:`store.fold`), into an append-only Delta table and keeps a *validity* table beside it
(one row per binding or setting per interval it was in force).  The questions reconstruct the
live set at an offset or time and ask Kafka's decision rules (:mod:`store.authorizer`) who
had access and when.

The face of the package is :class:`HistoryArchive` (:mod:`jobs.history.archive`), one handle
for the archive as Delta's ``DeltaTable.forPath`` is for a table; its answers are the frozen
values of :mod:`jobs.history.answers`.  Inside: :mod:`jobs.history.reading` (the tables and
the log's tail), :mod:`jobs.history.questions` (pure answers over intervals),
:mod:`jobs.history.validity` and :mod:`jobs.history.intervals` (the intervals' rules, event
by event and over Arrow columns), :mod:`jobs.history.tables` (the two tables' schemas and rows).
"""

from jobs.common.events import HistoryEvent
from jobs.history.answers import (
    AccessChange,
    DiffAnswer,
    EventsAnswer,
    Interval,
    Intervals,
    RestorePlan,
    Snapshot,
    WhenAnswer,
    WhoAnswer,
    WhoEntry,
)
from jobs.history.archive import HistoryArchive
from jobs.history.errors import ArchiveStoppedError, BeforeHistoryError, HistoryError, NoHistoryError
from jobs.history.validity import Validity

__all__ = [
    "AccessChange",
    "ArchiveStoppedError",
    "BeforeHistoryError",
    "DiffAnswer",
    "EventsAnswer",
    "HistoryArchive",
    "HistoryError",
    "HistoryEvent",
    "Interval",
    "Intervals",
    "NoHistoryError",
    "RestorePlan",
    "Snapshot",
    "Validity",
    "WhenAnswer",
    "WhoAnswer",
    "WhoEntry",
]
