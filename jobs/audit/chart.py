"""``audit report --plot FILE.png``: the denials over time, counted, and the new denials marked.

One bucket per span of time: the denials recorded in it (every denial is recorded, so these are
counts, not samples).  The bucket is the smallest of a minute, 5 and 15 minutes, an hour,
6 hours, a day and a week that draws the range in at most :data:`MAX_BUCKETS` bars; buckets
are aligned to the Unix epoch (UTC).  Each new denial (the first of a principal on a resource
in the window) is a :class:`Mark`, labelled with the principal.

Counting is a DataFrame aggregation (:func:`denial_counts`); the command line draws the
:class:`Chart` (:mod:`cli.present.audit_plot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from jobs.audit.report import NewDenial

BUCKETS_MS: Final = (60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000, 604_800_000)
MAX_BUCKETS: Final = 200
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bucket:
    """``denials`` recorded in ``[start_ms, start_ms + size)``."""

    start_ms: int
    denials: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Mark:
    """A new denial: when, and who (the tick's label)."""

    time_ms: int
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    """What the chart shows: the buckets of ``size_ms`` and the new denials' marks."""

    buckets: tuple[Bucket, ...]
    size_ms: int
    marks: tuple[Mark, ...] = ()


def bucket_ms(from_ms: int, to_ms: int) -> int:
    """The bucket size for ``[from_ms, to_ms]``: the smallest giving at most MAX_BUCKETS bars."""
    span = max(to_ms - from_ms, 1)
    for size in BUCKETS_MS:
        if span / size <= MAX_BUCKETS:
            return size
    return BUCKETS_MS[-1]


def denial_counts(decisions: Any, since_ms: int, size_ms: int) -> Any:
    """Denials at or after ``since_ms`` per bucket: ``startMs, denials``, oldest first."""
    from pyspark.sql import functions as f

    denied = decisions.filter(
        (f.col("result") == "DENIED") & (f.col("time") >= f.timestamp_millis(f.lit(since_ms)))
    )
    start = (f.floor(f.unix_millis("time") / size_ms) * size_ms).cast("bigint")
    return denied.groupBy(start.alias("startMs")).agg(f.count(f.lit(1)).alias("denials")).orderBy("startMs")


def report_chart(decisions: Any, since_ms: int, new_denials: Sequence[NewDenial]) -> Chart:
    """The report's chart of ``decisions`` from ``since_ms`` to the latest one, with the
    report's new denials as marks."""
    from pyspark.sql import functions as f

    latest = decisions.agg(f.max(f.unix_millis("time"))).collect()[0][0]
    size = bucket_ms(since_ms, max(since_ms, 0 if latest is None else int(latest)))
    buckets = tuple(Bucket(start_ms=int(r["startMs"]), denials=int(r["denials"]))
                    for r in denial_counts(decisions, since_ms, size).collect())  # fmt: skip
    marks = tuple(Mark(time_ms=_ms(d.time), label=str(d.principal)) for d in new_denials)
    return Chart(buckets=buckets, size_ms=size, marks=marks)


def _ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)
