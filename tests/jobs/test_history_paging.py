"""The feed's cursor logic (:mod:`jobs.history.paging`), against hand-worked windows and pages."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from jobs.history.paging import FIRST_WINDOW, GROWTH, cut_page, offset_windows

pytestmark = pytest.mark.unit


def test_windows_grow_from_the_cursor_and_stop_at_the_end() -> None:
    assert list(offset_windows(-1, 50, 10)) == [(-1, 50)]  # one read covers a small archive
    first = FIRST_WINDOW
    assert list(offset_windows(99, 99 + first + first * GROWTH + 5, 10)) == [
        (99, 99 + first), (99 + first, 99 + first + first * GROWTH),
        (99 + first + first * GROWTH, 99 + first + first * GROWTH + 5),
    ]  # fmt: skip
    assert list(offset_windows(7, 7, 10)) == [] and list(offset_windows(9, 3, 10)) == []
    assert next(offset_windows(-1, 10**9, 5_000)) == (-1, 19_999)  # 20,000 offsets: four pages


def test_windows_cover_every_offset_once_in_few_reads() -> None:
    rng = random.Random(11)
    for _ in range(200):
        after, end, page = rng.randint(-1, 10**6), rng.randint(-1, 10**7), rng.randint(1, 1000)
        windows = list(offset_windows(after, end, page))
        covered = [(low + 1, high) for low, high in windows]
        if end <= after:
            assert windows == []
            continue
        assert covered[0][0] == after + 1 and covered[-1][1] == end
        assert all(a[1] + 1 == b[0] for a, b in pairwise(covered))
        assert len(windows) <= 12  # 4096 * 4**11 > 10**10


def test_a_page_and_its_cursor() -> None:
    offsets = [3, 4, 8, 9]
    assert cut_page(offsets, 3, lambda o: o) == ([3, 4, 8], 8)  # one more follows
    assert cut_page(offsets[:3], 3, lambda o: o) == ([3, 4, 8], None)  # exactly full: the end
    assert cut_page([], 3, lambda o: o) == ([], None)
    with pytest.raises(ValueError, match="page size 0"):
        cut_page(offsets, 0, lambda o: o)
    with pytest.raises(ValueError, match="page size 0"):
        list(offset_windows(0, 10, 0))
