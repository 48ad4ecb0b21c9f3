"""The cause of a denial: the change after which a principal that used to be allowed was denied.

A denial's audit event names the request (principal, host, operation, resource) and the
change-log offset ``O`` the decision reflects.  The history answers *when* that request was
ALLOWED (the history's own question, ``history when``, asked of its facade:
:meth:`jobs.history.HistoryArchive.when_each`: Kafka's decision rules, ``store.authorizer``,
run over the archive's validity intervals and the log's tail); the cause is the event that
closed the last ALLOWED interval at or before ``O`` (a DENY added, the ALLOW deleted,
``super.users`` or ``allow.everyone.if.no.acl.found`` altered, or an ACL that put the
resource under ACLs).

:func:`cause_of` is the pure choice; :func:`denied_requests` selects the denials' requests from
the decisions table (a DataFrame filter); :func:`causes` asks the history once for all of
them (one read of the archive, a join) and it decides once per distinct request, however many
denials share it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.common.events import HistoryEvent
from jobs.history import HistoryArchive, Interval
from store.access_diff import Request
from store.acl import AclOperation, PatternType, ResourceType


class CauseStatus(enum.Enum):
    """What the history says about a denial."""

    FOUND = "the change after which the request, allowed before, was denied"
    NEVER_ALLOWED = "the request was never allowed at or before the denial's offset: no cause"
    ALLOWED_AT_OFFSET = "the history allows the request at the denial's offset (another log?)"
    BEYOND_HISTORY = "the denial reflects an offset the change log does not hold yet"
    BY_RESOURCE_TYPE = "a decision by resource type (pattern ANY) has no single resource to trace"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeniedRequest:
    """One request as an audit event names it, and the change-log offset its denial reflects."""

    principal: str
    host: str
    operation: AclOperation
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    acl_offset: int

    @classmethod
    def of_row(cls, row: Any) -> DeniedRequest:
        """From a row of the decisions table (:data:`jobs.audit.transform.DECISION_COLUMNS`)."""
        return cls(
            principal=row["principal"],
            host=row["host"],
            operation=AclOperation.parse(row["operation"]),
            resource_type=ResourceType.parse(row["resourceType"]),
            resource_name=row["resourceName"],
            pattern_type=PatternType.parse(row["patternType"]),
            acl_offset=-1 if row["aclOffset"] is None else int(row["aclOffset"]),
        )

    def question(self) -> Request:
        """What the history is asked (every offset of one request shares one answer)."""
        return Request(self.principal, self.host, self.operation, self.resource_type, self.resource_name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    """``event`` closed the ALLOWED stretch that ``allowed_by`` had opened (both None unless
    ``status`` is FOUND)."""

    status: CauseStatus
    event: HistoryEvent | None = None
    allowed_by: HistoryEvent | None = None


def cause_of(intervals: Sequence[Interval], offset: int) -> Cause:
    """The cause of a denial at ``offset`` given the request's ALLOWED ``intervals``."""
    for interval in intervals:
        if interval.from_offset <= offset and (interval.to_offset is None or interval.to_offset > offset):
            return Cause(status=CauseStatus.ALLOWED_AT_OFFSET)
    ended = [i for i in intervals if i.to_offset is not None and i.to_offset <= offset]
    if not ended:
        return Cause(status=CauseStatus.NEVER_ALLOWED)
    last = max(ended, key=lambda i: i.to_offset or 0)
    return Cause(status=CauseStatus.FOUND, event=last.closed_by, allowed_by=last.opened_by)


def denied_requests(decisions: Any, event_ids: Iterable[str]) -> dict[str, DeniedRequest]:
    """The requests of the decisions table's events ``event_ids``, by event id."""
    from pyspark.sql import functions as f

    wanted = sorted(set(event_ids))
    if not wanted:
        return {}
    rows = decisions.filter(f.col("id").isin(wanted)).dropDuplicates(["id"]).collect()
    return {row["id"]: DeniedRequest.of_row(row) for row in rows}


def causes(history: HistoryArchive, requests: Iterable[DeniedRequest]) -> dict[DeniedRequest, Cause]:
    """Each request's cause, from the ``history`` (its archive and its log).

    The ALLOWED stretches of each distinct request come from one question to the history
    (:meth:`~jobs.history.HistoryArchive.when_each`: what ``history when`` answers, Kafka's
    decision rules after each change point, for every asked request at once) and the cause is
    :func:`cause_of` them.
    """
    unique = list(dict.fromkeys(requests))
    literal = [r for r in unique if r.pattern_type is PatternType.LITERAL]
    allowed = history.when_each(r.question() for r in literal)
    found = {r: Cause(status=CauseStatus.BY_RESOURCE_TYPE) for r in unique if r not in literal}
    for request in literal:
        answer = allowed[request.question()]
        if answer.offset < request.acl_offset:
            found[request] = Cause(status=CauseStatus.BEYOND_HISTORY)
        else:
            found[request] = cause_of(answer.intervals, request.acl_offset)
    return found


def explain(history: HistoryArchive, decisions: Any, event_ids: Iterable[str]) -> dict[str, Cause]:
    """The cause of each denial among the decisions table's events ``event_ids``, by event id
    (an id the table does not hold has none)."""
    requests = denied_requests(decisions, event_ids)
    known = causes(history, requests.values())
    return {event_id: known[request] for event_id, request in requests.items()}
