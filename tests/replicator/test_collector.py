"""The collector policy of a decision process: what is alive is frozen every tick (the
collector's walks stay short), and a cycle dropped after it was frozen is reclaimed at the
next full collection."""

from __future__ import annotations

import gc
import time
import weakref

import pytest

from replicator.server.collector import CollectorPolicy

pytestmark = pytest.mark.unit


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_live_objects_are_frozen_and_a_dropped_cycle_is_reclaimed_by_the_full_collection() -> None:
    policy = CollectorPolicy(freeze_s=0.05, collect_s=1.5).start()
    try:
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a reference cycle: only the collector can free it
        watch = weakref.ref(a)
        time.sleep(0.2)  # a few freezes: the cycle is in the permanent generation now
        frozen = gc.get_freeze_count()
        assert frozen > 0
        del a, b
        gc.collect()  # an ordinary collection does not walk frozen objects
        assert watch() is not None, "a frozen cycle was walked by an ordinary collection"
        done = policy.full_collections
        deadline = time.monotonic() + 10
        while policy.full_collections == done and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        assert policy.full_collections > done
        assert watch() is None, "the full collection did not reclaim the dropped cycle"
    finally:
        policy.close()
        gc.unfreeze()


def test_without_full_collections_a_frozen_cycle_stays_and_new_objects_are_frozen_each_tick() -> None:
    """The node's own policy (``collect_s=None``): what lived through a tick is never walked."""
    policy = CollectorPolicy(freeze_s=0.05, collect_s=None).start()
    try:
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        watch = weakref.ref(a)
        before = gc.get_freeze_count()
        made = [_Node() for _ in range(1_000)]
        time.sleep(0.3)  # a few ticks: what was made is frozen
        assert gc.get_freeze_count() >= before + len(made) and policy.full_collections == 0
        del a, b
        gc.collect()
        time.sleep(0.2)
        assert watch() is not None and policy.full_collections == 0
    finally:
        policy.close()
        gc.unfreeze()
        gc.collect()
