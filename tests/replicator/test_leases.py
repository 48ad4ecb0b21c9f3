"""Cache leases and the visibility gate (replicator/leases.py), with hand-worked times."""

from __future__ import annotations

import threading
import time

import pytest

from replicator.leases import MAX_LEASE_S, LeaseTable, VisibilityGate

pytestmark = pytest.mark.unit


def test_a_live_lease_holds_back_every_offset_it_has_not_acknowledged() -> None:
    table = LeaseTable()
    table.renew("b1", 41, 2.0, now=100.0)  # lease until 102
    assert table.holding_back(41, now=100.5) is None  # 41 is acknowledged
    assert table.holding_back(42, now=100.5) == 102.0
    assert table.holding_back(42, now=102.0) is None  # ran out exactly at 102
    table.renew("b1", 42, 2.0, now=101.0)  # the acknowledgement, and a new lease to 103
    assert table.holding_back(42, now=101.0) is None
    assert table.holding_back(43, now=101.0) == 103.0


def test_the_last_unacknowledged_lease_decides_how_long_an_offset_is_held_back() -> None:
    table = LeaseTable()
    table.renew("b1", 5, 1.0, now=10.0)  # to 11
    table.renew("b2", 5, 3.0, now=10.0)  # to 13
    table.renew("b3", 7, 9.0, now=10.0)  # to 19, but already knows 7
    assert table.holding_back(7, now=10.0) == 13.0
    assert table.holding_back(7, now=11.5) == 13.0  # b1 has run out, b2 has not
    table.renew("b2", 7, 3.0, now=12.0)
    assert table.holding_back(7, now=12.0) is None
    assert table.live(now=12.0) == 2  # b2 and b3; b1 ran out at 11


def test_a_zero_lease_releases_and_leases_are_capped() -> None:
    table = LeaseTable()
    table.renew("b1", 0, 5.0, now=0.0)
    table.renew("b1", 0, 0.0, now=1.0)  # the plugin closed
    assert table.holding_back(1, now=1.0) is None and table.live(now=1.0) == 0
    table.renew("b2", 0, 3600.0, now=0.0)
    assert table.holding_back(1, now=0.0) == MAX_LEASE_S


def test_an_acknowledging_subscriber_releases_the_gate_and_hears_the_offset_first() -> None:
    gate = VisibilityGate()
    visible = [10]
    assert gate.subscribe("b1", 10, 5.0, 0.0, lambda: visible[0]) == 10  # nothing new: timed out
    heard: list[int] = []

    def plugin() -> None:
        offset = gate.subscribe("b1", 10, 5.0, 5.0, lambda: visible[0])
        heard.append(offset)
        gate.subscribe("b1", offset, 5.0, 0.0, lambda: visible[0])  # the acknowledgement

    thread = threading.Thread(target=plugin)
    thread.start()
    started = time.monotonic()
    gate.before_visible(11)  # returns once the plugin acknowledged 11
    waited = time.monotonic() - started
    visible[0] = 11
    thread.join()
    assert heard == [11]
    assert waited < 2.0  # far less than the 5 s lease


def test_a_silent_subscriber_holds_the_gate_only_until_its_lease_runs_out() -> None:
    gate = VisibilityGate()
    gate.subscribe("dead", 3, 0.4, 0.0, lambda: 3)
    started = time.monotonic()
    gate.before_visible(4)
    waited = time.monotonic() - started
    assert 0.3 <= waited < 1.5, waited
    started = time.monotonic()
    gate.before_visible(5)  # the lease is gone: no wait at all
    assert time.monotonic() - started < 0.1


def test_closing_the_gate_releases_a_gated_apply() -> None:
    gate = VisibilityGate()
    gate.subscribe("b1", 0, 9.0, 0.0, lambda: 0)
    closer = threading.Timer(0.2, gate.close)
    closer.start()
    started = time.monotonic()
    gate.before_visible(1)
    assert time.monotonic() - started < 3.0
    closer.join()
