"""The distinct requests of the audit trail since a time (``plan --replay-since``): a pure
transformation of the decisions table and its collection into plain values."""

from __future__ import annotations

from typing import Any

from store.acl import AclOperation, ResourceType
from store.desired.replay import SeenRequest

_KEYS = ("principal", "host", "operation", "resourceType", "resourceName", "result")


def seen_requests_frame(decisions: Any, since_ms: int) -> Any:
    """``decisions`` (the audit table) since ``since_ms``, one row per distinct request and
    audited answer, with its count and last time."""
    from pyspark.sql import functions as F

    since = F.timestamp_millis(F.lit(since_ms))
    return (
        decisions.where(F.col("time") >= since)
        .groupBy(*_KEYS)
        .agg(F.count(F.lit(1)).alias("count"), F.unix_millis(F.max("time")).alias("lastSeenMs"))
    )


def seen_requests(decisions: Any, since_ms: int) -> list[SeenRequest]:
    rows = seen_requests_frame(decisions, since_ms).collect()
    return [
        SeenRequest(
            principal=r["principal"],
            host=r["host"],
            operation=AclOperation.parse(r["operation"]),
            resource_type=ResourceType.parse(r["resourceType"]),
            resource_name=r["resourceName"],
            audited=r["result"],
            count=int(r["count"]),
            last_seen_ms=int(r["lastSeenMs"] or 0),
        )
        for r in rows
    ]
