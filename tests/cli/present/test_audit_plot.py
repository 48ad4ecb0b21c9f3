"""``audit report --plot``: a real PNG whose bars are the given buckets, counted by hand."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from cli.present.audit_plot import BAR_GID, NEW_DENIAL_GID, draw, save_png
from cli.present.history_plot import PlotError
from jobs.audit.chart import Bucket, Chart, Mark

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DAY_MS, HOUR, MINUTE = 86_400_000, 3_600_000, 60_000
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z: the report's --since
H0 = 1_699_999_200_000  # T0's hour, 2023-11-14T22:00Z (T0 - 800 s), worked by hand


def bars(figure: Figure) -> list[tuple[float, float, float]]:
    """(left, width, height) of every denial bar, read from the drawn artists."""
    (axes,) = figure.axes
    return sorted(
        (p.get_x(), p.get_width(), p.get_height())
        for p in axes.patches
        if isinstance(p, Rectangle) and p.get_gid() == BAR_GID
    )


def ticks(figure: Figure) -> list[float]:
    (axes,) = figure.axes
    return sorted(float(line.get_xdata()[0]) for line in axes.lines if line.get_gid() == NEW_DENIAL_GID)


@pytest.mark.unit
def test_bars_are_the_buckets_and_ticks_the_new_denials(tmp_path: Path) -> None:
    buckets = [Bucket(start_ms=H0, denials=3), Bucket(start_ms=H0 + 2 * HOUR, denials=1)]
    marks = [Mark(time_ms=T0 + HOUR, label="User:eve")]
    chart = Chart(buckets=tuple(buckets), size_ms=HOUR, marks=tuple(marks))
    figure = draw(chart)
    # Date numbers are days since 1970-01-01T00:00Z (matplotlib's default epoch).
    d = 1 / DAY_MS
    got = bars(figure)
    expected = [(H0 * d, HOUR * d, 3.0), ((H0 + 2 * HOUR) * d, HOUR * d, 1.0)]
    assert len(got) == 2
    for bar, want in zip(got, expected, strict=True):
        assert bar == pytest.approx(want, abs=1e-9)
    assert ticks(figure) == pytest.approx([(T0 + HOUR) * d], abs=1e-9)
    assert [t.get_text() for t in figure.axes[0].texts] == ["User:eve"]
    assert figure.axes[0].get_ylabel() == "denials per hour"

    path = save_png(chart, tmp_path / "denials.png")
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data.endswith(b"IEND\xaeB`\x82")
    length, kind, width, height = struct.unpack(">I4sII", data[8:24])
    assert (length, kind, width, height) == (13, b"IHDR", 1100, 450)
    assert len(data) > 10_000


@pytest.mark.unit
def test_nothing_to_draw_is_refused() -> None:
    with pytest.raises(PlotError, match="no denial recorded"):
        draw(Chart(buckets=(), size_ms=HOUR))
