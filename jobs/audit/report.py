"""``aclstore audit report``: what the decisions table says since a time.

Pure transformations of the table (:func:`totals`, :func:`new_denials`) and one function that
collects them into the report's JSON shape::

    {"totals": {"ALLOWED": n, "DENIED": n}, "newDenials": [...], "unusedGrants": [...],
     "throughOffset": n, "topDeniedPrincipals": [...], "topDeniedResources": [...]}

``totals`` counts the recorded audit events (every denial is recorded, allows are sampled);
``throughOffset`` is the audit-log offset of the latest event the table holds (a resend adds
no row).  A *new denial* is a denial of a principal on a resource at or after the time asked
with no denial of that principal on that resource in the ``window_days`` before it (the
streaming job's rule, :func:`jobs.audit.transform.new_denials_in_batch`).  ``unusedGrants`` is
what the caller passes (the unused-grants report's rows): this module does not compute it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any, Final

from jobs.audit.transform import DEFAULT_WINDOW_DAYS

DEFAULT_TOP: Final = 10
_RESOURCE: Final = ("principal", "resourceType", "resourceName")


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


def report_json(
    table: Any,
    since_ms: int,
    *,
    window_days: int = DEFAULT_WINDOW_DAYS,
    top: int = DEFAULT_TOP,
    unused_grants: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The report as the CLI prints it with ``--format json``; ``unused_grants`` goes into
    ``unusedGrants`` as given."""
    from pyspark.sql import functions as f

    recent = since(table, since_ms)
    counts = {"ALLOWED": 0, "DENIED": 0}
    for row in totals(recent).collect():
        counts[row["result"]] = int(row["count"])
    fresh = [
        {
            "principal": r["principal"], "resourceType": r["resourceType"],
            "resourceName": r["resourceName"], "operation": r["operation"],
            "time": r["time"].astimezone(UTC).isoformat(timespec="microseconds"),
            "rule": r["rule"], "aclOffset": r["aclOffset"], "eventId": r["id"],
        }
        for r in new_denials(table, since_ms, window_days).collect()
    ]
    through = table.agg(f.max("auditOffset")).collect()[0][0]
    return {
        "totals": counts,
        "newDenials": fresh,
        "unusedGrants": [dict(g) for g in unused_grants],
        "throughOffset": -1 if through is None else int(through),
        "topDeniedPrincipals": [
            {"principal": r["principal"], "denials": int(r["denials"])}
            for r in top_denied_principals(recent, top).collect()
        ],
        "topDeniedResources": [
            {"resourceType": r["resourceType"], "resourceName": r["resourceName"],
             "denials": int(r["denials"])}
            for r in top_denied_resources(recent, top).collect()
        ],
    }
