"""``audit report --plot``: a real PNG whose bars are the denials counted by hand."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from jobs.audit.plot import (
    BAR_GID,
    NEW_DENIAL_GID,
    Bucket,
    Chart,
    Mark,
    bucket_ms,
    denial_counts,
    draw,
    report_chart,
    save_png,
)
from jobs.history.plot import PlotError

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
@pytest.mark.parametrize(
    ("span", "size"),
    [
        (0, MINUTE),
        (200 * MINUTE, MINUTE),  # exactly 200 one-minute bars
        (200 * MINUTE + 1, 5 * MINUTE),
        (2 * DAY_MS, 15 * MINUTE),  # 192 bars
        (7 * DAY_MS, HOUR),  # 168 bars
        (30 * DAY_MS, 6 * HOUR),  # 120 bars
        (365 * DAY_MS, 7 * DAY_MS),  # 365 days would be too many bars
        (100 * 365 * DAY_MS, 7 * DAY_MS),  # never beyond a week
    ],
)
def test_bucket_size(span: int, size: int) -> None:
    assert bucket_ms(T0, T0 + span) == size


@pytest.mark.unit
def test_nothing_to_draw_is_refused() -> None:
    with pytest.raises(PlotError, match="no denial recorded"):
        draw(Chart(buckets=(), size_ms=HOUR))


@pytest.mark.spark
def test_denials_counted_per_bucket_from_real_events(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa

    from jobs.audit.transform import decision_rows
    from replicator.contract.audit_event import audit_event, encode_audit_event
    from store.acl import AclOperation, ResourceType
    from store.authorizer.decision import DEFAULT_DENY_DECISION, SUPER_USER_DECISION, Action

    # (ms after T0, denied?): by hand, hour buckets from H0: [H0, H0+1h) holds the denials at
    # +0, +10 min, +30 min (3); [H0+1h, ...) the one at +1h; [H0+3h, ...) the one at +3h.
    # The allow and the denial before T0 are not counted.
    asked = [(-DAY_MS, True), (0, True), (10 * MINUTE, True), (30 * MINUTE, True), (HOUR, True),
             (2 * HOUR, False), (3 * HOUR, True)]  # fmt: skip
    records = []
    for i, (after, denied) in enumerate(asked):
        event = audit_event(
            event_id=f"e{i}", source="aclstore://test", time_ns=(T0 + after) * 1_000_000,
            principal="User:eve", host="10.0.0.1",
            action=Action(AclOperation.READ, ResourceType.TOPIC, "payroll"),
            decision=DEFAULT_DENY_DECISION if denied else SUPER_USER_DECISION, offset=3,
        )  # fmt: skip
        records.append((f"e{i}".encode(), encode_audit_event(event), i, T0))
    columns = ("key", "value", "offset", "timestampMs")
    arrow = pa.Table.from_pylist([dict(zip(columns, r, strict=True)) for r in records])
    table = spark.createDataFrame(decision_rows(arrow))
    got = [(r["startMs"], r["denials"]) for r in denial_counts(table, T0, HOUR).collect()]
    assert got == [(H0, 3), (H0 + HOUR, 1), (H0 + 3 * HOUR, 1)]

    # The report's chart: T0..T0+3h in one-minute bars (180 <= 200) from T0's minute, T0 - 20 s.
    new = [{"time": "2023-11-14T22:13:20.000000+00:00", "principal": "User:eve"}]
    chart = report_chart(table, T0, new)
    m0 = T0 - 20_000
    assert chart.size_ms == MINUTE
    assert [(b.start_ms, b.denials) for b in chart.buckets] == [
        (m0, 1), (m0 + 10 * MINUTE, 1), (m0 + 30 * MINUTE, 1), (m0 + HOUR, 1), (m0 + 3 * HOUR, 1)
    ]
    assert chart.marks == (Mark(time_ms=T0, label="User:eve"),)
    figure = draw(chart)
    assert [h for _, _, h in bars(figure)] == [1.0] * 5
    assert save_png(chart, tmp_path / "report.png").read_bytes()[:8] == PNG_SIGNATURE
