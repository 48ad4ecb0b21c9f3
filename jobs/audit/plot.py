"""``audit report --plot FILE.png``: denials over time, with the new denials marked.

One bar per time bucket: the denials recorded in it (every denial is recorded, so these are
counts, not samples).  The bucket is the smallest of a minute, 5 and 15 minutes, an hour,
6 hours, a day and a week that draws the range in at most :data:`MAX_BUCKETS` bars; buckets
are aligned to the Unix epoch (UTC).  A red tick over the bars marks each new denial (the
first of a principal on a resource in the window), labelled with the principal.

Counting is a DataFrame aggregation (:func:`denial_counts`); drawing uses matplotlib's object
API on the Agg canvas as :mod:`jobs.history.plot` does (no pyplot, no display).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from matplotlib import dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from jobs.history.plot import PlotError, date_number

BAR_GID: Final = "denials"
"""The ``gid`` of every bar (a reader or a test finds them among the artists)."""
NEW_DENIAL_GID: Final = "new-denial"
BUCKETS_MS: Final = (60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000, 604_800_000)
MAX_BUCKETS: Final = 200
MAX_LABELS: Final = 20
"""More new denials than this are ticks without labels (the report lists them)."""
BAR_COLOR: Final = "#c62828"
WIDTH_PX: Final = 1100
HEIGHT_PX: Final = 450
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


def draw(chart: Chart, *, title: str = "Denials over time") -> Figure:
    """The chart: one bar per bucket, a tick per new denial."""
    buckets, size_ms, marks = chart.buckets, chart.size_ms, chart.marks
    if not buckets and not marks:
        raise PlotError("nothing to plot: no denial recorded since the given time")
    figure = Figure(figsize=(WIDTH_PX / 100, HEIGHT_PX / 100), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    width = size_ms / 86_400_000  # date numbers are days
    for bucket in buckets:
        axes.bar(date_number(bucket.start_ms), bucket.denials, width=width, align="edge",
                 color=BAR_COLOR, alpha=0.8, gid=BAR_GID)  # fmt: skip
    top = max([b.denials for b in buckets] or [1])
    for mark in marks:
        x = date_number(mark.time_ms)
        axes.plot([x, x], [top * 1.02, top * 1.1], color="black", linewidth=1.2, gid=NEW_DENIAL_GID)
        if len(marks) > MAX_LABELS:
            continue
        axes.annotate(mark.label, (x, top * 1.1), xytext=(0, 4), textcoords="offset points",
                      rotation=60, fontsize=7, ha="left", va="bottom")  # fmt: skip
    axes.set_ylim(0, top * 1.35)
    locator = mdates.AutoDateLocator(tz=UTC)  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
    axes.set_xlabel("time (UTC)")
    axes.set_ylabel(f"denials per {_size_text(size_ms)}")
    axes.grid(axis="y", alpha=0.3)
    axes.set_title(title + (" (ticks: new denials)" if marks else ""))
    return figure


def save_png(chart: Chart, path: Path) -> Path:
    """Draw and write the PNG to ``path``."""
    draw(chart).savefig(path, format="png")
    return path


def report_chart(decisions: Any, since_ms: int, new_denials: Sequence[dict[str, Any]]) -> Chart:
    """The report's chart of ``decisions`` from ``since_ms`` to the latest one, with the
    report's ``newDenials`` entries (``time`` ISO-8601, ``principal``) as marks."""
    from pyspark.sql import functions as f

    latest = decisions.agg(f.max(f.unix_millis("time"))).collect()[0][0]
    size = bucket_ms(since_ms, max(since_ms, 0 if latest is None else int(latest)))
    buckets = tuple(Bucket(start_ms=int(r["startMs"]), denials=int(r["denials"]))
                    for r in denial_counts(decisions, since_ms, size).collect())  # fmt: skip
    marks = tuple(Mark(time_ms=_ms(d["time"]), label=str(d["principal"])) for d in new_denials)
    return Chart(buckets=buckets, size_ms=size, marks=marks)


def _ms(iso: str) -> int:
    return (datetime.fromisoformat(iso) - _EPOCH) // timedelta(milliseconds=1)


def _size_text(size_ms: int) -> str:
    for unit, ms in (("week", 604_800_000), ("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000)):
        if size_ms % ms == 0:
            count = size_ms // ms
            return unit if count == 1 else f"{count} {unit}s"
    return f"{size_ms} ms"
