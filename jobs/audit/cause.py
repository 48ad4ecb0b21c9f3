"""The cause of a denial: the change after which a principal that used to be allowed was denied.

A denial's audit event names the request (principal, host, operation, resource) and the
change-log offset ``O`` the decision reflects.  The history answers *when* that request was
ALLOWED (what ``history when`` answers, :func:`jobs.history.queries.access_intervals`:
Kafka's decision rules, ``store.authorizer``, run over the archive's validity intervals and
the log's tail); the cause is the event that closed the last ALLOWED interval at or before
``O`` (a DENY added, the ALLOW deleted, ``super.users`` or ``allow.everyone.if.no.acl.found``
altered, or an ACL that put the resource under ACLs).

:func:`cause_of` is the pure choice; :func:`denied_requests` selects the denials' requests from
the decisions table (a DataFrame filter); :func:`causes` reads the history once for all of
them (:func:`resource_intervals`, a join) and decides once per distinct request, however many
denials share it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.common.events import SETTING_KIND, HistoryEvent
from jobs.common.source import LogSource
from jobs.history.answers import Interval
from jobs.history.tables import validity_of_row, validity_path
from jobs.history.validity import Validity, fold_validity
from store.acl import AclOperation, PatternType, ResourceType
from store.authorizer import Action
from store.authorizer.applicable import applicable_patterns


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

    def question(self) -> tuple[str, str, AclOperation, ResourceType, str]:
        """What the history is asked (every offset of one request shares one answer)."""
        return self.principal, self.host, self.operation, self.resource_type, self.resource_name


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


Resource = tuple[ResourceType, str]


def resource_intervals(
    spark: Any, location: str, source: LogSource | None, resources: Iterable[Resource]
) -> tuple[dict[Resource, list[Validity]], int]:
    """Per resource, the validity intervals that can decide about it (its bindings, literal,
    ``*`` and prefixed, and the settings), brought to the log's end; and that end's offset.

    One read of the archive for all ``resources``: the validity table semi-joined, on the
    resource type, pattern type and name, with the patterns that can match each resource
    (:func:`store.authorizer.applicable.applicable_patterns`, a broadcast equi-join on the
    executors); then the log's tail, read once and folded on the driver.
    """
    from delta.tables import DeltaTable
    from pyspark.sql import functions as f

    from jobs.history.queries import applies_to, archived_end, read_tail

    asked = sorted(set(resources))
    found: dict[tuple[str, int], Validity] = {}
    path = validity_path(location)
    if asked and DeltaTable.isDeltaTable(spark, path):
        table = spark.read.format("delta").load(path)
        patterns = sorted({(t.name, pt.name, n) for t, name in asked for pt, n in applicable_patterns(name)})
        wanted = spark.createDataFrame(patterns, "wantedType STRING, wantedPattern STRING, wantedName STRING")
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
    tail, offset = read_tail(source, archived_end(spark, location))
    deciders = {resource: applies_to(*resource) for resource in asked}

    def relevant(interval: Validity) -> bool:
        return any(applies(interval) for applies in deciders.values())

    still_open = {v.id: v for v in found.values() if v.closed is None}
    changed, _ = fold_validity([e for e in tail if relevant(Validity(id="", opened=e))], still_open)
    for interval in changed:
        found[(interval.id, interval.from_offset)] = interval
    return {r: [v for v in found.values() if applies(v)] for r, applies in deciders.items()}, offset


def causes(
    spark: Any, location: str, source: LogSource | None, requests: Iterable[DeniedRequest]
) -> dict[DeniedRequest, Cause]:
    """Each request's cause, from the archive at ``location`` and the log ``source``.

    The intervals of every asked resource are read at once (:func:`resource_intervals`); the
    ALLOWED stretches of each distinct request are then
    :func:`jobs.history.queries.access_intervals` (what ``history when`` answers: Kafka's
    decision rules after each change point) and the cause is :func:`cause_of` them.
    """
    from jobs.history.queries import access_intervals

    unique = list(dict.fromkeys(requests))
    literal = [r for r in unique if r.pattern_type is PatternType.LITERAL]
    intervals, offset = resource_intervals(
        spark, location, source, ((r.resource_type, r.resource_name) for r in literal)
    )
    found = {r: Cause(status=CauseStatus.BY_RESOURCE_TYPE) for r in unique if r not in literal}
    allowed: dict[tuple[str, str, AclOperation, ResourceType, str], list[Interval]] = {}
    for request in literal:
        key = request.question()
        if key not in allowed:
            allowed[key] = access_intervals(
                intervals[(request.resource_type, request.resource_name)],
                principal=request.principal, host=request.host,
                action=Action(request.operation, request.resource_type, request.resource_name),
            )  # fmt: skip
        if offset < request.acl_offset:
            found[request] = Cause(status=CauseStatus.BEYOND_HISTORY)
        else:
            found[request] = cause_of(allowed[key], request.acl_offset)
    return found


def explain(
    spark: Any, location: str, source: LogSource | None, decisions: Any, event_ids: Iterable[str]
) -> dict[str, Cause]:
    """The cause of each denial among the decisions table's events ``event_ids``, by event id
    (an id the table does not hold has none)."""
    requests = denied_requests(decisions, event_ids)
    known = causes(spark, location, source, requests.values())
    return {event_id: known[request] for event_id, request in requests.items()}
