"""A decision worker's replica: the node's index read through a follower, never written.

It answers decisions as :class:`replicator.replica.Replica` does, from a view of its
:class:`~replicator.index.follower.FollowerIndex`, with the same decision rules and the same
merge of the node's local settings under the log's.  What the node's replica knows and the
index does not say (ready, failed, the log's end) it reads from the node's published state
(:mod:`.state`).  Before every answer it compares its offset with the offset the node last
made visible and catches up if it is behind, so an answer never reflects an older state than
one a client could have seen from the node when it asked; ``min_offset`` waits for the node to
get that far, exactly as on the node.
"""

from __future__ import annotations

import time
from typing import Final

from replicator.errors import ConsistencyTimeoutError, ReplicaError, ReplicaStoppedError
from replicator.index import IndexView
from replicator.index.follower import FollowerIndex
from replicator.replica import ConfigCache, DecidesFromViews, ReplicaSettings, ReplicaStatus
from replicator.server.workers.state import PublishedState, SharedState

_POLL_S: Final = 0.0005
"""How often a ``min_offset`` wait looks at the node's published offset."""


class FollowerReplica(DecidesFromViews):
    """Decisions from ``index``, kept up with the node's replica through ``shared``."""

    def __init__(self, index: FollowerIndex, shared: SharedState, settings: ReplicaSettings) -> None:
        self.index = index
        self.shared = shared
        self.settings = settings
        self._configs = ConfigCache(settings.local_config)

    # -- state -----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        published = self.shared.read()
        return published.ready and self.index.position.offset >= published.ready_offset

    def status(self) -> ReplicaStatus:
        published = self.shared.read()
        position = self.index.position
        counters = self.index.counters
        age = max(0.0, time.monotonic() - published.log_end_confirmed_at)
        return ReplicaStatus(
            ready=published.ready and position.offset >= published.ready_offset,
            offset=position.offset,
            timestamp_ms=position.timestamp_ms,
            ready_offset=published.ready_offset,
            log_end_offset=published.log_end_offset,
            log_end_age_ms=int(age * 1000),
            lag=self.settings.lag(
                published.log_end_offset, position.offset, age, failing=published.log_error
            ),
            stopped=self.index.stopped,
            log_error="the node's replica cannot read the log" if published.log_error else None,
            fatal_error="the node's replica failed" if published.failed else None,
            storage_error=None,  # the node's readiness says it: the worker never writes
            bindings=counters.bindings,
            ignored_events=counters.ignored_events,
            skipped_records=counters.skipped_records,
            reader_version=self.settings.reader_version,
            too_new_events=self.settings.too_new_events.value,
            cache=self.index.cache_figures(),
        )

    def wait_applied(self, offset: int, timeout: float) -> int:
        """Wait up to ``timeout`` s until this follower has ``offset``; the offset it has."""
        deadline = time.monotonic() + timeout
        while True:
            published = self.shared.read()
            reached = self.index.position.offset
            if reached < published.offset:
                reached = self.index.catch_up().offset
            if reached >= offset or published.failed or time.monotonic() >= deadline:
                return reached
            if published.stopped_offset >= 0 and published.stopped_offset <= offset:
                return reached
            time.sleep(_POLL_S)

    def wait_subscribed(self, subscriber: str, after: int, lease_s: float, timeout: float) -> int:
        raise ReplicaError("cache leases are held by the node's replica: the worker forwards them")

    # -- answers ---------------------------------------------------------------------------------

    def _view(self, min_offset: int | None, timeout: float | None) -> IndexView:
        published = self.shared.read()
        if published.failed:
            raise ReplicaError("the node's replica failed and serves no one; see the node's log")
        if self.index.position.offset < published.offset:
            self.index.catch_up()
        if min_offset is not None and self.index.position.offset < min_offset:
            wait = self.settings.max_wait_s if timeout is None else min(timeout, self.settings.max_wait_s)
            reached = self.wait_applied(min_offset, wait)
            if reached < min_offset:
                self._raise_if_cannot_move(min_offset, self.shared.read())
                raise ConsistencyTimeoutError(
                    f"the replica has applied up to offset {reached}, not the requested "
                    f"min_offset {min_offset}, after waiting {wait:g} s "
                    f"({self.status().lag_text()}); retry later or ask a replica further along",
                    min_offset=min_offset,
                    reached=reached,
                )
        return self.index.view()

    def _raise_if_cannot_move(self, offset: int, published: PublishedState) -> None:
        if published.failed:
            raise ReplicaError("the node's replica failed and serves no one; see the node's log")
        stop = self.index.stopped
        if stop is not None and stop.offset <= offset:
            raise ReplicaStoppedError(
                f"the replica is stopped at offset {stop.offset} and cannot reach offset "
                f"{offset}: {stop.reason}",
                offset=stop.offset,
                reason=stop.reason,
            )
