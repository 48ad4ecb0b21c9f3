"""Leases of broker plugins' decision caches, and the gate that makes a batch visible.

A broker plugin may answer repeated decisions from its own cache of ALLOWED answers, each
tagged with the applied offset it reflects.  For that cache never to hide a change the
sidecar has applied (Chubby's leases, invalidate before apply):

* The plugin's long-poll on ``/v1/offset/wait`` names it (``subscriber``) and asks for a
  lease (``leaseMs``).  The lease runs from when the sidecar handles the request; the plugin
  counts it from when it *sent* the request, so clock and network delays only shorten it on
  the plugin's side.  The plugin stops using its cache the moment its lease runs out by its
  own clock, and on any error of the long-poll.
* Before the replica makes a newly committed batch visible (to its answers, its applied
  offset, plain ``/v1/offset/wait`` waiters and ``min_offset`` reads), it announces the
  batch's offset: every subscriber's long-poll answers with it at once.  The replica then
  waits until each subscriber with a live lease has acknowledged (its next long-poll names
  that offset as ``after``: "I dropped my entries for older offsets") or that lease has run
  out.  A plugin that died or hangs therefore holds the replica back for at most the rest of
  its lease, which the sidecar caps at :data:`MAX_LEASE_S`; a live one for one loopback round
  trip.

So "applied" means "visible": no plugin cache answers from an offset older than the one the
sidecar answers from.  :class:`LeaseTable` is the pure bookkeeping (times are passed in);
:class:`VisibilityGate` adds the waiting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_LEASE_S = 10.0
"""The longest lease the sidecar grants: how long a dead plugin can hold back an apply."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A subscriber's lease: valid until ``expires`` (monotonic seconds); it has dropped its
    cache entries for every offset below ``acked`` + 1."""

    expires: float
    acked: int


class LeaseTable:
    """Subscribers' leases and acknowledgements; every method takes the time it is called at."""

    def __init__(self) -> None:
        self._leases: dict[str, Lease] = {}

    def renew(self, subscriber: str, acked: int, lease_s: float, now: float) -> None:
        """A long-poll of ``subscriber`` naming ``acked`` as the offset it knows, asking for
        ``lease_s`` seconds (0 ends its lease: it holds no cache any more)."""
        if lease_s <= 0:
            self._leases.pop(subscriber, None)
            return
        self._leases[subscriber] = Lease(now + min(lease_s, MAX_LEASE_S), acked)
        self._forget_expired(now)

    def holding_back(self, offset: int, now: float) -> float | None:
        """When the last live lease that has not acknowledged ``offset`` runs out (monotonic
        seconds), or None when no subscriber holds ``offset`` back."""
        latest: float | None = None
        for lease in self._leases.values():
            if lease.expires > now and lease.acked < offset:
                latest = lease.expires if latest is None else max(latest, lease.expires)
        return latest

    def live(self, now: float) -> int:
        """How many subscribers hold a live lease."""
        return sum(1 for lease in self._leases.values() if lease.expires > now)

    def _forget_expired(self, now: float) -> None:
        for subscriber in [s for s, lease in self._leases.items() if lease.expires <= now]:
            del self._leases[subscriber]


class VisibilityGate:
    """Announce an offset to subscribers and wait for their acknowledgements (or lease ends).

    ``announced`` is the highest offset announced so far; subscribers' long-polls answer with
    it, which may be ahead of the visible offset by the batch being gated.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._table = LeaseTable()
        self._announced = -1
        self._closed = False
        self.held_back_s = 0.0
        """Total time applies waited for subscribers (a figure for operators)."""

    @property
    def announced(self) -> int:
        return self._announced

    def before_visible(self, offset: int) -> None:
        """Called by the commit path before ``offset`` becomes visible: announce it, then wait
        until no live lease holds it back (or the gate is closed)."""
        with self._cond:
            if offset > self._announced:
                self._announced = offset
                self._cond.notify_all()
            started = self._clock()
            while not self._closed:
                now = self._clock()
                until = self._table.holding_back(offset, now)
                if until is None:
                    break
                self._cond.wait(until - now)
            self.held_back_s += self._clock() - started

    def subscribe(
        self,
        subscriber: str,
        after: int,
        lease_s: float,
        timeout_s: float,
        visible: Callable[[], int],
    ) -> int:
        """A subscriber's long-poll: renew its lease with ``after`` acknowledged, then wait up
        to ``timeout_s`` until an offset above ``after`` is announced or visible; return the
        highest such offset (``after`` or below when the wait timed out)."""
        deadline = self._clock() + timeout_s
        with self._cond:
            self._table.renew(subscriber, after, lease_s, self._clock())
            self._cond.notify_all()  # the acknowledgement may release a gated apply
            while True:
                target = max(self._announced, visible())
                remaining = deadline - self._clock()
                if target > after or remaining <= 0 or self._closed:
                    return target
                self._cond.wait(remaining)

    def live_subscribers(self) -> int:
        with self._cond:
            return self._table.live(self._clock())

    def close(self) -> None:
        """Release every wait: the replica is closing."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
