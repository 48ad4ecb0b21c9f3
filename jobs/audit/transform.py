"""Pure DataFrame transformations of the audit log's records (no sources, no sinks).

The records are the log sources' ``key, value, offset, timestampMs``; each value is one
CloudEvent of ``schemas/audit_event_v1.json``.
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


def per_minute(rows: Any) -> Any:
    """Decisions per minute of event time, principal, resource, operation and result."""
    from pyspark.sql import functions as f

    return (
        rows.groupBy(
            f.window("time", "1 minute").start.alias("minute"), "principal", "resourceType",
            "resourceName", "operation", "result",
        )
        .agg(f.count(f.lit(1)).alias("decisions"))
    )
