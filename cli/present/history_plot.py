"""``history when --plot FILE.png``: access intervals on a time axis, one row per series.

Each series is one question (principal, operation, resource) and its :class:`WhenAnswer`
intervals; several series share one chart so that "who could write here, and since when" reads
at a glance.  A bar is an interval in which the decision was ALLOWED; a ``▶`` marks the event
that opened it and a ``◀`` the event that closed it, each labelled with its log offset and
event type.  An interval still open at the end of the chart fades out there, with no ``◀``.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display, no global
state), so it runs on servers and in tests.  The only I/O is :func:`save_png`'s file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Protocol

from matplotlib import dates as mdates
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

BAR_GID: Final = "interval"
"""The ``gid`` of every interval bar, so a reader (or a test) can find them among the artists."""
OPEN_COLOR: Final = "#2e7d32"
CLOSE_COLOR: Final = "#c62828"
BAR_COLOR: Final = "#66bb6a"
_BAR_HEIGHT: Final = 0.5


class EventLike(Protocol):
    """What the chart reads from a history event: its offset and its type."""

    @property
    def offset(self) -> int: ...
    @property
    def type(self) -> str: ...


class IntervalLike(Protocol):
    """What the chart reads from an interval (:class:`jobs.history.answers.Interval`)."""

    @property
    def from_ms(self) -> int: ...
    @property
    def to_ms(self) -> int | None: ...
    @property
    def opened_by(self) -> EventLike | None: ...
    @property
    def closed_by(self) -> EventLike | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Series:
    """One row of the chart: a label (e.g. ``User:bob READ TOPIC:orders``) and its intervals."""

    label: str
    intervals: Sequence[IntervalLike]


class PlotError(ValueError):
    """Nothing sensible to draw (no series, or an end before an interval starts)."""


def date_number(ms: int) -> float:
    """Epoch milliseconds as matplotlib's date axis unit (days since its epoch, UTC)."""
    # matplotlib.dates ships without annotations on these functions.
    return float(mdates.date2num(datetime.fromtimestamp(ms / 1000, tz=UTC)))  # type: ignore[no-untyped-call]


def draw(series: Sequence[Series], *, end_ms: int, title: str = "When access was ALLOWED") -> Figure:
    """The chart of ``series``; open intervals run to ``end_ms`` (the time the answer reflects)."""
    if not series:
        raise PlotError("nothing to plot: no series (give at least one --principal)")
    starts = [i.from_ms for s in series for i in s.intervals]
    if starts and end_ms < max(starts):
        raise PlotError(f"end {end_ms} ms is before an interval's start {max(starts)} ms")
    figure = Figure(figsize=(11, 1.6 + 0.9 * len(series)), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    # Top to bottom in the order given: row 0 is the first series.
    rows = list(range(len(series)))[::-1]
    for row, item in zip(rows, series, strict=True):
        for interval in item.intervals:
            start = date_number(interval.from_ms)
            end = date_number(end_ms if interval.to_ms is None else interval.to_ms)
            still_open = interval.to_ms is None
            axes.barh(
                row, end - start, left=start, height=_BAR_HEIGHT, color=BAR_COLOR,
                edgecolor=OPEN_COLOR, alpha=0.45 if still_open else 0.9,
                hatch="//" if still_open else None, gid=BAR_GID,
            )  # fmt: skip
            if interval.opened_by is not None:
                _mark(axes, start, row, interval.opened_by, opening=True)
            if interval.closed_by is not None and not still_open:
                _mark(axes, end, row, interval.closed_by, opening=False)
    axes.set_yticks(rows, [s.label for s in series])
    axes.set_ylim(-0.8, len(series) - 0.2)
    lowest = min([*starts, end_ms])
    margin = max((date_number(end_ms) - date_number(lowest)) * 0.04, 1 / 24 / 60)
    axes.set_xlim(date_number(lowest) - margin, date_number(end_ms) + margin)
    locator = mdates.AutoDateLocator(tz=UTC)  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
    axes.set_xlabel("time (UTC)")
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(title)
    handles = [
        axes.scatter([], [], marker=">", color=OPEN_COLOR, label="opened by (offset event)"),
        axes.scatter([], [], marker="<", color=CLOSE_COLOR, label="closed by (offset event)"),
        Patch(facecolor=BAR_COLOR, edgecolor=OPEN_COLOR, alpha=0.45, hatch="//", label="still open"),
    ]
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return figure


def save_png(series: Sequence[Series], path: Path, *, end_ms: int, title: str | None = None) -> Path:
    """Draw ``series`` and write the PNG to ``path``."""
    figure = draw(series, end_ms=end_ms) if title is None else draw(series, end_ms=end_ms, title=title)
    figure.savefig(path, format="png")
    return path


def _mark(axes: Axes, x: float, row: int, event: EventLike, *, opening: bool) -> None:
    color = OPEN_COLOR if opening else CLOSE_COLOR
    axes.scatter([x], [row], marker=">" if opening else "<", color=color, s=60, zorder=3)
    axes.annotate(
        f"{event.offset} {event.type}", (x, row), xytext=(0, 20 if opening else -20),
        textcoords="offset points", ha="center", va="center", fontsize=7, color=color,
    )  # fmt: skip
