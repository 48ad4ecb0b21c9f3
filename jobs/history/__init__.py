"""The ACL history: an archive of every change in the log, and questions asked of it.

Compaction keeps the log small, so the log alone forgets old values.  The archive job
(:mod:`jobs.history.archive`) copies every change, read through the one fold of the log
(:mod:`store.fold`), into an append-only Delta table and keeps a *validity* table beside it
(one row per binding or setting per interval it was in force).  The queries
(:mod:`jobs.history.queries`) reconstruct the live set at an offset or time and ask Kafka's
decision rules (:mod:`store.authorizer`) who had access and when; their answers are the
frozen values of :mod:`jobs.history.answers`.
"""

from jobs.common.events import HistoryEvent
from jobs.history.answers import (
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

__all__ = [
    "AccessChange",
    "DiffAnswer",
    "EventsAnswer",
    "HistoryEvent",
    "Interval",
    "RestorePlan",
    "Snapshot",
    "WhenAnswer",
    "WhoAnswer",
    "WhoEntry",
]
