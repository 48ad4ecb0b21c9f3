"""The history benchmark's synthetic history: a history the store could have written."""

from __future__ import annotations

import pytest

from bench.history import WATCHED, synthetic_history, watched_intervals
from store.events import AclCreated, AclDeleted, ConfigAltered

# Unmarked tests are the unit tier (tests/conftest.py); the longest history is the slow tier.


@pytest.mark.parametrize("count", [1_000, 150_003, pytest.param(400_000, marks=pytest.mark.slow)])
def test_every_delete_names_a_live_binding_and_creates_are_new(count: int) -> None:
    live: set[object] = set()
    times: list[int] = []
    watched_opened = 0
    configs = 0
    for event in synthetic_history(count):
        times.append(event.time_ms)
        if isinstance(event, AclCreated):
            assert event.binding not in live, event
            live.add(event.binding)
            watched_opened += event.binding == WATCHED
        elif isinstance(event, AclDeleted):
            assert event.binding in live, event
            live.remove(event.binding)
        else:
            assert isinstance(event, ConfigAltered)
            configs += 1
    assert len(times) == count
    assert times == sorted(set(times))  # strictly increasing log times
    # Twenty toggles of the watched binding: ten creates, so ten intervals (none left open).
    assert watched_opened == watched_intervals(count) == 10
    assert WATCHED not in live
    assert configs == count // 100_000
