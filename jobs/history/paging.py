"""The feed's pages: pure cursor logic for ``history events --limit N --after OFFSET``.

A page is the events with a log offset strictly greater than its cursor (``after``), in offset
order, at most ``limit`` of them; the next page's cursor is the last offset shown, or None when
nothing follows.  The archive is read in offset windows that grow (:func:`offset_windows`), so
a page near its cursor reads only the files whose offset statistics overlap the window, and a
sparse range (a narrow ``--from``/``--to``) still ends in a few reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Final, TypeVar

FIRST_WINDOW: Final = 4_096
"""The offsets the first read of a page covers (at least a few times a page's size)."""
GROWTH: Final = 4
"""Each further window covers this many times the offsets of the one before."""

T = TypeVar("T")


def offset_windows(after: int, end: int, page: int) -> Iterator[tuple[int, int]]:
    """The half-open windows ``(low, high]`` of offsets above ``after`` up to ``end`` (the
    archive's last offset), in order, together covering ``(after, end]`` exactly.

    The first covers ``max(FIRST_WINDOW, 4 * page)`` offsets, each next ``GROWTH`` times the
    one before: a dense range answers in one read, any range in O(log(end - after)) reads.
    """
    if page < 1:
        raise ValueError(f"page size {page} is not >= 1")
    low, width = after, max(FIRST_WINDOW, 4 * page)
    while low < end:
        high = min(low + width, end)
        yield low, high
        low, width = high, width * GROWTH


def cut_page(found: Sequence[T], limit: int, offset_of: Callable[[T], int]) -> tuple[list[T], int | None]:
    """The first ``limit`` of ``found`` (in offset order, up to ``limit + 1`` of them) and the
    next page's cursor: the last offset shown when more follow, else None."""
    if limit < 1:
        raise ValueError(f"page size {limit} is not >= 1")
    shown = list(found[:limit])
    return shown, offset_of(shown[-1]) if len(found) > limit else None
