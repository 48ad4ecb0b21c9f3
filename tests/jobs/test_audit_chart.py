"""``audit report --plot``: the denials counted per bucket from real events, by hand, and the
chart drawn from them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cli.present.audit_plot import draw, save_png
from jobs.audit.chart import Mark, bucket_ms, denial_counts, report_chart
from jobs.audit.report import NewDenial
from tests.cli.present.test_audit_plot import PNG_SIGNATURE, bars

DAY_MS, HOUR, MINUTE = 86_400_000, 3_600_000, 60_000
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z: the report's --since
H0 = 1_699_999_200_000  # T0's hour, 2023-11-14T22:00Z (T0 - 800 s), worked by hand


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
    new = [NewDenial(principal="User:eve", resource_type="TOPIC", resource_name="payroll", operation="READ",
                     time=datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), rule="DEFAULT_DENY", acl_offset=3,
                     event_id="e1")]  # fmt: skip
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
