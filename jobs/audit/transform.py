"""Pure DataFrame transformations of the audit log's records (no sources, no sinks).

The records are the log sources' ``key, value, offset, timestampMs``; each value is one
CloudEvent of ``schemas/audit_event_v1.json``.  Three outputs are derived from the decisions:

* per minute of event time (tumbling windows), the decisions of each principal, resource,
  operation and result (:func:`per_minute`);
* *new denials*: a denial of a principal on a resource with no denial of the same principal
  on the same resource in the ``window_days`` before it (:func:`new_denials_in_batch`, given
  the last denial recorded before the batch);
* the last denial of each principal on each resource (:func:`last_denied`), which the next
  batch's new denials are measured against (:func:`merged_last_denied` keeps it up to date).

The per-minute counts are stored as each batch's partial counts; :func:`summed_minutes` adds
them up.
"""

from __future__ import annotations

from typing import Any, Final

EVENT_SCHEMA: Final = (
    "id STRING, time STRING, source STRING, type STRING, data STRUCT<principal: STRING, "
    "host: STRING, operation: STRING, resourceType: STRING, resourceName: STRING, "
    "patternType: STRING, result: STRING, reason: STRUCT<rule: STRING, binding: STRUCT<"
    "resourceType: STRING, resourceName: STRING, patternType: STRING, principal: STRING, "
    "host: STRING, operation: STRING, permissionType: STRING>>, offset: BIGINT>"
)
"""What the job reads of an event (``from_json`` ignores the rest)."""

RESOURCE_KEY: Final = ("principal", "resourceType", "resourceName")
"""Whom a new denial is about: a principal on a resource."""
MINUTE_KEY: Final = ("minute", "principal", "resourceType", "resourceName", "operation", "result")
DEFAULT_WINDOW_DAYS: Final = 7
"""A denial is new when the principal had no denial on the resource in this many days before."""

DECISION_COLUMNS: Final = (
    "id", "time", "source", "principal", "host", "operation", "resourceType", "resourceName",
    "patternType", "result", "rule", "binding", "aclOffset", "auditOffset",
)  # fmt: skip


def decisions(records: Any) -> Any:
    """One row per audit event: its id, event time (a timestamp), what was decided and why,
    ``aclOffset`` (the change-log offset the decision reflects) and ``auditOffset`` (the
    record's offset in the audit log).  Records of another event type are left out."""
    from pyspark.sql import functions as f

    e = f.from_json(f.col("value").cast("string"), EVENT_SCHEMA)
    parsed = records.select(e.alias("e"), f.col("offset").alias("auditOffset"))
    return parsed.filter(f.col("e.type").startswith("io.aclstore.authorization.decision.")).select(
        f.col("e.id").alias("id"),
        f.to_timestamp(f.col("e.time")).alias("time"),
        f.col("e.source").alias("source"),
        *(f.col(f"e.data.{c}").alias(c) for c in (
            "principal", "host", "operation", "resourceType", "resourceName", "patternType",
            "result",
        )),
        f.col("e.data.reason.rule").alias("rule"),
        f.to_json(f.col("e.data.reason.binding")).alias("binding"),
        f.col("e.data.offset").alias("aclOffset"),
        "auditOffset",
    )  # fmt: skip


def deduplicated(rows: Any) -> Any:
    """Each event id once (a resent event carries the id of the first sending)."""
    return rows.dropDuplicates(["id"])


def within_bound(rows: Any, late_bound: str) -> Any:
    """A stream of decisions, each event id once, with the event-time watermark ``late_bound``
    (a Spark interval, ``"10 minutes"``) behind the latest event time seen.

    A resent event carries its first sending's id and time, so while its time is within the
    bound the query's state still holds the id and drops the resend; the state forgets ids
    once the watermark passes their time, so it holds about ``late_bound`` of events.  An
    event whose time is behind the watermark when it arrives (later than the bound) is
    dropped and counted by Spark (``numRowsDroppedByWatermark`` in the query's progress)."""
    return rows.withWatermark("time", late_bound).dropDuplicatesWithinWatermark(["id"])


def per_minute(rows: Any) -> Any:
    """Decisions per minute of event time (tumbling one-minute windows, ``minute`` the
    window's start), principal, resource, operation and result."""
    from pyspark.sql import functions as f

    return (
        rows.groupBy(
            f.window("time", "1 minute").start.alias("minute"), "principal", "resourceType",
            "resourceName", "operation", "result",
        )
        .agg(f.count(f.lit(1)).alias("decisions"))
    )


def summed_minutes(partials: Any) -> Any:
    """Rows of the minutes table (each batch's partial counts) as one count per key: the sum
    of the partials' ``decisions``."""
    from pyspark.sql import functions as f

    return partials.groupBy(*MINUTE_KEY).agg(f.sum("decisions").alias("decisions"))


def new_denials_in_batch(rows: Any, previous: Any, window_days: int) -> Any:
    """The new denials among a batch's decisions ``rows``, given ``previous``: the last
    denial recorded before the batch (``principal, resourceType, resourceName, lastDenied``).

    A denial is new when the denial before it of the same principal on the same resource (the
    one before it in the batch by time, else ``lastDenied``) is absent or more than
    ``window_days`` older.  A denial at or before ``lastDenied`` (an event that arrived late)
    is never new: a later denial of the pair was recorded already.  Columns: the decision's,
    and ``previousDenied`` (the denial it is measured against, or null)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as f

    denied = rows.filter(f.col("result") == "DENIED")
    order = Window.partitionBy(*RESOURCE_KEY).orderBy("time", "auditOffset")
    with_last = denied.join(previous, list(RESOURCE_KEY), "left")
    before = f.coalesce(f.lag("time").over(order), f.col("lastDenied"))
    measured = with_last.withColumn("previousDenied", before)
    gap = f.col("time") - f.make_dt_interval(f.lit(window_days))
    late = f.col("lastDenied").isNotNull() & (f.col("time") <= f.col("lastDenied"))
    fresh = (f.col("previousDenied").isNull() | (f.col("previousDenied") < gap)) & ~late
    return measured.filter(fresh).select(*DECISION_COLUMNS, "previousDenied")


def last_denied(rows: Any) -> Any:
    """The latest denial time of each principal on each resource among ``rows``."""
    from pyspark.sql import functions as f

    denied = rows.filter(f.col("result") == "DENIED")
    return denied.groupBy(*RESOURCE_KEY).agg(f.max("time").alias("lastDenied"))


def merged_last_denied(previous: Any, latest: Any) -> Any:
    """``previous`` (rows of the last_denied table) with ``latest`` (a batch's
    :func:`last_denied`): one row per principal and resource, the later ``lastDenied``."""
    from pyspark.sql import functions as f

    both = previous.select(*RESOURCE_KEY, "lastDenied").unionByName(
        latest.select(*RESOURCE_KEY, "lastDenied")
    )
    return both.groupBy(*RESOURCE_KEY).agg(f.max("lastDenied").alias("lastDenied"))
