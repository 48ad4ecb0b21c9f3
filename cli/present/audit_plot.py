"""``audit report --plot FILE.png``: the denials over time, with the new denials marked.

One bar per bucket of :class:`jobs.audit.chart.Chart` (the denials recorded in it, counted by
the audit job's DataFrame aggregation); a tick over the bars marks each new denial, labelled
with the principal.  Drawn with matplotlib's object API on the Agg canvas as
:mod:`cli.present.history_plot` does (no pyplot, no display).
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Final

from matplotlib import dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from cli.present.history_plot import PlotError, date_number
from jobs.audit.chart import Chart

BAR_GID: Final = "denials"
"""The ``gid`` of every bar (a reader or a test finds them among the artists)."""
NEW_DENIAL_GID: Final = "new-denial"
MAX_LABELS: Final = 20
"""More new denials than this are ticks without labels (the report lists them)."""
BAR_COLOR: Final = "#c62828"
WIDTH_PX: Final = 1100
HEIGHT_PX: Final = 450


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


def _size_text(size_ms: int) -> str:
    for unit, ms in (("week", 604_800_000), ("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000)):
        if size_ms % ms == 0:
            count = size_ms // ms
            return unit if count == 1 else f"{count} {unit}s"
    return f"{size_ms} ms"
