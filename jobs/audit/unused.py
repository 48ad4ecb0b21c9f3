"""Unused grants: the live ALLOW bindings that decided no request in a window.

A least-privilege report, as AWS IAM Access Analyzer's unused access: each audit event names
its deciding binding (rule ``MATCHING_ACL``), so a grant is *used* in the window when some
ALLOWED decision at or after the window's start names exactly it (all seven fields: resource
type, name, pattern type, principal, host, operation, permission).  A binding that is still
live but was used by no decision in the window is unused; per binding, the last time it was
the deciding ALLOW before the window (None if the audit log never names it).

Allows are sampled by the node (``allow_sample_rate``), denials are not, but the node also
emits the first ALLOWED decision of every binding in each usage period (an hour by default,
:class:`~replicator.server.audit.AuditSettings`): a grant used in the window is named by at
least one event unless the window is shorter than a period, and a last use is exact to within
a period.  The pure part is
:func:`deciding_allows`, :func:`usage` and :func:`unused_grants` (DataFrames in and out); the
live set comes from the history (:func:`live_grants`: the archive plus the log's tail, asked
through its facade, :class:`jobs.history.HistoryArchive`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from jobs.common.events import HistoryEvent
from jobs.history import HistoryArchive
from store.acl import AclBinding, AclPermissionType, parse_fields

BINDING_COLUMNS: Final = (
    "resourceType", "resourceName", "patternType", "principal", "host", "operation",
    "permissionType",
)  # fmt: skip
"""The deciding binding's fields as the audit event names them (``reason.binding``)."""
_BINDING_SCHEMA: Final = ", ".join(f"{c} STRING" for c in BINDING_COLUMNS)
LIVE_SCHEMA: Final = f"{_BINDING_SCHEMA}, grantedOffset BIGINT, grantedMs BIGINT, grantedBy STRING"


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveGrant:
    """A live ALLOW binding and the event that created it."""

    binding: AclBinding
    granted_by: HistoryEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class UnusedGrant:
    """A live ALLOW binding that decided nothing in the window: the offset, log time and actor
    of the event that created it, and the last time it decided an ALLOWED request (UTC; None
    if the audit log never names it)."""

    binding: AclBinding
    granted_offset: int
    granted_ms: int
    granted_by: str | None
    last_used: datetime | None


def deciding_allows(decisions: Any) -> Any:
    """The ALLOWED decisions an ACL decided: ``time`` and the binding's seven columns."""
    from pyspark.sql import functions as f

    binding = f.from_json(f.col("binding"), _BINDING_SCHEMA)
    decided = decisions.filter(
        (f.col("result") == "ALLOWED") & (f.col("rule") == "MATCHING_ACL") & f.col("binding").isNotNull()
    )
    return decided.select("time", binding.alias("b")).select("time", *(f"b.{c}" for c in BINDING_COLUMNS))


def usage(decisions: Any, since_ms: int) -> Any:
    """Per deciding binding: ``lastUsed`` (ever) and ``usesInWindow`` (at or after ``since_ms``)."""
    from pyspark.sql import functions as f

    in_window = f.col("time") >= f.timestamp_millis(f.lit(since_ms))
    return deciding_allows(decisions).groupBy(*BINDING_COLUMNS).agg(
        f.max("time").alias("lastUsed"), f.count(f.when(in_window, f.lit(1))).alias("usesInWindow")
    )


def unused_grants(decisions: Any, live: Any, since_ms: int) -> Any:
    """The ``live`` ALLOW bindings (:data:`LIVE_SCHEMA`) that decided nothing at or after
    ``since_ms``, with ``lastUsed`` (null if never); never used first, then oldest use."""
    from pyspark.sql import functions as f

    allows = live.filter(f.col("permissionType") == AclPermissionType.ALLOW.name)
    joined = allows.join(usage(decisions, since_ms), list(BINDING_COLUMNS), "left")
    unused = joined.filter(f.coalesce(f.col("usesInWindow"), f.lit(0)) == 0)
    return unused.select(*BINDING_COLUMNS, "grantedOffset", "grantedMs", "grantedBy", "lastUsed").orderBy(
        f.col("lastUsed").asc_nulls_first(), *BINDING_COLUMNS
    )


def live_grants(history: HistoryArchive) -> tuple[list[LiveGrant], int]:
    """The ALLOW bindings live at the log's end, each with its creating event; and that offset
    (the history's intervals open now: :meth:`~jobs.history.HistoryArchive.intervals`)."""
    loaded = history.intervals(live=True)
    grants = [
        LiveGrant(binding=v.binding, granted_by=v.opened)
        for v in loaded.intervals
        if v.closed is None and v.binding is not None and v.binding.permission_type is AclPermissionType.ALLOW
    ]
    return sorted(grants, key=lambda g: g.binding), loaded.offset


def live_frame(spark: Any, grants: Sequence[LiveGrant]) -> Any:
    """``grants`` as a DataFrame of :data:`LIVE_SCHEMA`."""
    rows = [
        (*g.binding.fields(), g.granted_by.offset, g.granted_by.time_ms, g.granted_by.actor) for g in grants
    ]
    return spark.createDataFrame(rows, LIVE_SCHEMA)


def unused_rows(rows: Sequence[Any]) -> list[UnusedGrant]:
    """:func:`unused_grants` rows as values, in their order."""
    return [
        UnusedGrant(
            binding=AclBinding.of(*parse_fields(tuple(r[c] for c in BINDING_COLUMNS))),
            granted_offset=r["grantedOffset"],
            granted_ms=r["grantedMs"],
            granted_by=r["grantedBy"],
            last_used=None if r["lastUsed"] is None else r["lastUsed"].astimezone(UTC),
        )
        for r in rows
    ]


def report_unused(history: HistoryArchive, decisions: Any, since_ms: int) -> list[UnusedGrant]:
    """The live grants (the ``history``: its archive plus its log) unused since ``since_ms``."""
    grants, _ = live_grants(history)
    if not grants:
        return []
    return unused_rows(unused_grants(decisions, live_frame(history.spark, grants), since_ms).collect())
