"""``history when --plot``: a real PNG, and bars whose extents are exactly the intervals."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from matplotlib.patches import Rectangle

from cli.present.history_plot import BAR_GID, PlotError, Series, draw, save_png

pytestmark = pytest.mark.unit

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# matplotlib's default date epoch is 1970-01-01T00:00Z and its unit one day, so a time's date
# number is (ms since the epoch) / 86,400,000: worked here by hand, not through the module.
DAY_MS = 86_400_000
T0 = 1_000_000_000_000  # 2001-09-09T01:46:40Z
HOUR = 3_600_000


@dataclass(frozen=True)
class Event:
    offset: int
    type: str


@dataclass(frozen=True)
class Span:
    from_ms: int
    to_ms: int | None
    opened_by: Event | None
    closed_by: Event | None


BOB = Series(
    label="User:bob READ TOPIC:orders",
    intervals=(
        Span(T0, T0 + 2 * HOUR, Event(3, "ACL_CREATED"), Event(9, "ACL_DELETED")),
        Span(T0 + 5 * HOUR, None, Event(14, "ACL_CREATED"), None),
    ),
)
ALICE = Series(
    label="User:alice READ TOPIC:orders",
    intervals=(Span(T0 + HOUR, T0 + 3 * HOUR, Event(5, "CONFIG_ALTERED"), Event(11, "ACL_CREATED")),),
)
END = T0 + 8 * HOUR


def bars(figure: object) -> list[tuple[float, float, float]]:
    """(left, right, y centre) of every interval bar, read from the drawn artists."""
    from matplotlib.figure import Figure

    assert isinstance(figure, Figure)
    (axes,) = figure.axes
    found = []
    for patch in axes.patches:
        if isinstance(patch, Rectangle) and patch.get_gid() == BAR_GID:
            found.append(
                (patch.get_x(), patch.get_x() + patch.get_width(), patch.get_y() + patch.get_height() / 2)
            )
    return sorted(found)


def test_bar_extents_equal_the_intervals_and_each_series_has_its_row() -> None:
    figure = draw([BOB, ALICE], end_ms=END)
    d = 1 / DAY_MS
    expected = sorted(
        [
            (T0 * d, (T0 + 2 * HOUR) * d, 1.0),  # bob: first row from the top
            ((T0 + 5 * HOUR) * d, END * d, 1.0),  # still open: drawn to the end
            ((T0 + HOUR) * d, (T0 + 3 * HOUR) * d, 0.0),  # alice: second row
        ]
    )
    got = bars(figure)
    assert len(got) == 3
    for (left, right, y), (e_left, e_right, e_y) in zip(got, expected, strict=True):
        assert left == pytest.approx(e_left, abs=1e-9)
        assert right == pytest.approx(e_right, abs=1e-9)
        assert y == pytest.approx(e_y)
    (axes,) = figure.axes
    rows = {float(y): t.get_text() for y, t in zip(axes.get_yticks(), axes.get_yticklabels(), strict=True)}
    assert rows == {1.0: BOB.label, 0.0: ALICE.label}
    labels = sorted(t.get_text() for t in axes.texts)
    # Opening events on every interval, closing events only where one closed.
    assert labels == sorted(
        ["3 ACL_CREATED", "9 ACL_DELETED", "14 ACL_CREATED", "5 CONFIG_ALTERED", "11 ACL_CREATED"]
    )


def test_png_is_valid_and_of_plausible_size(tmp_path: Path) -> None:
    path = save_png([BOB, ALICE], tmp_path / "when.png", end_ms=END)
    print(f"PNG written: {path}")
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    # IHDR is the first chunk: length 13, then width and height as big-endian uint32.
    length, kind, width, height = struct.unpack(">I4sII", data[8:24])
    assert (length, kind) == (13, b"IHDR")
    assert (width, height) == (1100, int((1.6 + 0.9 * 2) * 100))
    assert 10_000 < len(data) < 1_000_000
    assert data.endswith(b"IEND\xaeB`\x82")


def test_no_series_and_an_end_before_a_start_are_refused() -> None:
    with pytest.raises(PlotError, match="no series"):
        draw([], end_ms=END)
    with pytest.raises(PlotError, match="before an interval's start"):
        draw([BOB], end_ms=T0)


def test_matplotlib_epoch_is_the_unix_epoch() -> None:
    # The hand-worked conversion above relies on it (matplotlib >= 3.3's default).
    from matplotlib import dates as mdates

    assert mdates.date2num(datetime(1970, 1, 2, tzinfo=UTC)) == 1.0
