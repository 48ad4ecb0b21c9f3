"""The history benchmark's synthetic history: a history the store could have written."""

from __future__ import annotations

import time

import pytest

from bench.history import (
    STEP_MS,
    WATCHED,
    history_start_ms,
    synthetic_history,
    watched_intervals,
    watched_live_at,
)
from store.events import AclCreated, AclDeleted, ConfigAltered
from store.log.kafka import KafkaLogSettings

T0_MS = 1_767_225_600_000  # 2026-01-01T00:00Z

# Unmarked tests are the unit tier (tests/conftest.py); the longest history is the slow tier.


@pytest.mark.parametrize("count", [1_000, 150_003, pytest.param(400_000, marks=pytest.mark.slow)])
def test_every_delete_names_a_live_binding_and_creates_are_new(count: int) -> None:
    live: set[object] = set()
    times: list[int] = []
    watched_opened = 0
    configs = 0
    for event in synthetic_history(count, T0_MS):
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
    assert times[0] == T0_MS and times[-1] == T0_MS + (count - 1) * STEP_MS
    # Twenty toggles of the watched binding: ten creates, so ten intervals (none left open).
    assert watched_opened == watched_intervals(count) == 10
    assert WATCHED not in live
    assert configs == count // 100_000


def test_the_full_size_history_ends_now_within_the_topics_compaction_lag() -> None:
    """Stamped from history_start_ms, no record of the 10,000,000-event history is older than
    the store topic's min.compaction.lag.ms when produced, so the cleaner leaves it all."""
    count = 10_000_000
    before = int(time.time() * 1000)
    first = history_start_ms(count)
    last = first + (count - 1) * STEP_MS
    assert before - 1_000 <= last + STEP_MS <= int(time.time() * 1000) + 1_000
    assert last - first < KafkaLogSettings().min_compaction_lag_ms


@pytest.mark.parametrize("count", [1_000, 20_001])
def test_watched_live_at_follows_the_history_event_by_event(count: int) -> None:
    """The bench's check of ``who`` (is User:bob allowed at an offset?) against a replay."""
    live = False
    seen = []
    for offset, event in enumerate(synthetic_history(count, T0_MS)):
        if isinstance(event, AclCreated | AclDeleted) and event.binding == WATCHED:
            live = isinstance(event, AclCreated)
        seen.append(live)
        assert watched_live_at(count, offset) == live, offset
    assert True in seen and False in seen
