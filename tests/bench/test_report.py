"""The benchmarks' nearest-rank percentile, on samples whose ranks are worked out by hand."""

from __future__ import annotations

import pytest

from bench.report import percentile

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("count", "pct", "rank"),
    [
        # ceil(pct / 100 * count), the smallest rank with pct % of the samples at or below it.
        (2000, 50, 1000),
        (2000, 99, 1980),
        (2000, 99.9, 1998),  # 99.9 / 100 * 2000 is 1998.0000000000002 in binary floats
        (2002, 50, 1001),  # a whole rank that is odd stays itself
        (1000, 99.9, 999),
        (10, 99, 10),
        (10, 1, 1),
        (10, 0, 1),
        (10, 100, 10),
        (1, 99.9, 1),
    ],
)
def test_nearest_rank(count: int, pct: float, rank: int) -> None:
    samples = [float(v) for v in range(count, 0, -1)]  # the value of rank r is r
    assert percentile(samples, pct) == rank


def test_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 99)
