"""``aclstore audit report``: what the decisions table says since a time.

Pure transformations of the table (:func:`totals`, :func:`new_denials`) and one function that
collects them into an :class:`AuditReport`: the totals by result, the new denials, the unused
grants, the audit-log offset it reflects, and the most denied principals and resources (the
command line prints it as tables, CSV or JSON: :mod:`cli.present.audit`).

``totals`` counts the recorded audit events (every denial is recorded, allows are sampled);
``through_offset`` is the audit-log offset of the latest event the table holds (a resend adds
no row).  A *new denial* is a denial of a principal on a resource at or after the time asked
with no denial of that principal on that resource in the ``window_days`` before it (the
streaming job's rule, :func:`jobs.audit.transform.new_denials_in_batch`); its cause
(:mod:`jobs.audit.cause`) is added by :meth:`AuditReport.with_causes`.  ``unused_grants`` is
what the caller passes (:func:`jobs.audit.unused.report_unused`): this module does not
compute it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from jobs.audit.cause import Cause
from jobs.audit.transform import DEFAULT_WINDOW_DAYS
from jobs.audit.unused import UnusedGrant

DEFAULT_TOP: Final = 10
_RESOURCE: Final = ("principal", "resourceType", "resourceName")


@dataclass(frozen=True, slots=True, kw_only=True)
class NewDenial:
    """The first denial of a principal on a resource in the window (the decisions table's
    row: ``time`` in UTC, ``acl_offset`` the change-log offset it reflects, ``event_id`` the
    audit event's id), and its cause once looked up (None: not looked up, or the event is not
    in the table)."""

    principal: str
    resource_type: str
    resource_name: str
    operation: str
    time: datetime
    rule: str
    acl_offset: int | None
    event_id: str
    cause: Cause | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeniedPrincipal:
    principal: str
    denials: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeniedResource:
    resource_type: str
    resource_name: str
    denials: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditReport:
    """What the decisions table says since a time (:func:`audit_report`)."""

    totals: Mapping[str, int]
    new_denials: tuple[NewDenial, ...]
    unused_grants: tuple[UnusedGrant, ...]
    through_offset: int
    top_denied_principals: tuple[DeniedPrincipal, ...] = ()
    top_denied_resources: tuple[DeniedResource, ...] = ()

    def with_causes(self, causes: Mapping[str, Cause]) -> AuditReport:
        """The report with each new denial's cause, by its audit event's id (a denial whose
        event ``causes`` lacks keeps None)."""
        denials = tuple(replace(d, cause=causes.get(d.event_id)) for d in self.new_denials)
        return replace(self, new_denials=denials)


def since(rows: Any, since_ms: int) -> Any:
    from pyspark.sql import functions as f

    return rows.filter(f.col("time") >= f.timestamp_millis(f.lit(since_ms)))


def totals(rows: Any) -> Any:
    """Decisions by result."""
    return rows.groupBy("result").count()


def top_denied_principals(rows: Any, top: int) -> Any:
    """The ``top`` principals by denials (ties by name), as ``principal, denials``."""
    from pyspark.sql import functions as f

    denied = rows.filter(f.col("result") == "DENIED")
    counts = denied.groupBy("principal").agg(f.count(f.lit(1)).alias("denials"))
    return counts.orderBy(f.desc("denials"), "principal").limit(top)


def top_denied_resources(rows: Any, top: int) -> Any:
    """The ``top`` resources by denials (ties by type and name), as ``resourceType,
    resourceName, denials``."""
    from pyspark.sql import functions as f

    denied = rows.filter(f.col("result") == "DENIED")
    counts = denied.groupBy("resourceType", "resourceName").agg(f.count(f.lit(1)).alias("denials"))
    return counts.orderBy(f.desc("denials"), "resourceType", "resourceName").limit(top)


def new_denials(rows: Any, since_ms: int, window_days: int) -> Any:
    """The first denial of each principal on each resource at or after ``since_ms`` that had
    no denial of the same principal on the same resource in the ``window_days`` before it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as f

    denied = rows.filter(f.col("result") == "DENIED")
    order = Window.partitionBy(*_RESOURCE).orderBy("time", "auditOffset")
    with_previous = denied.withColumn("previous", f.lag("time").over(order))
    gap = f.col("time") - f.make_dt_interval(f.lit(window_days))
    fresh = with_previous.filter(f.col("previous").isNull() | (f.col("previous") < gap))
    return since(fresh, since_ms).select(
        *_RESOURCE, "operation", "time", "rule", "aclOffset", "id"
    ).orderBy("time", "id")


def audit_report(
    table: Any,
    since_ms: int,
    *,
    window_days: int = DEFAULT_WINDOW_DAYS,
    top: int = DEFAULT_TOP,
    unused_grants: Sequence[UnusedGrant] = (),
) -> AuditReport:
    """The report of the decisions ``table`` since ``since_ms``; ``unused_grants`` goes into
    it as given."""
    from pyspark.sql import functions as f

    recent = since(table, since_ms)
    counts = {"ALLOWED": 0, "DENIED": 0}
    for row in totals(recent).collect():
        counts[row["result"]] = int(row["count"])
    fresh = tuple(
        NewDenial(
            principal=r["principal"], resource_type=r["resourceType"], resource_name=r["resourceName"],
            operation=r["operation"], time=r["time"].astimezone(UTC), rule=r["rule"],
            acl_offset=r["aclOffset"], event_id=r["id"],
        )
        for r in new_denials(table, since_ms, window_days).collect()
    )  # fmt: skip
    through = table.agg(f.max("auditOffset")).collect()[0][0]
    return AuditReport(
        totals=counts,
        new_denials=fresh,
        unused_grants=tuple(unused_grants),
        through_offset=-1 if through is None else int(through),
        top_denied_principals=tuple(
            DeniedPrincipal(principal=r["principal"], denials=int(r["denials"]))
            for r in top_denied_principals(recent, top).collect()
        ),
        top_denied_resources=tuple(
            DeniedResource(
                resource_type=r["resourceType"], resource_name=r["resourceName"], denials=int(r["denials"])
            )
            for r in top_denied_resources(recent, top).collect()
        ),
    )
