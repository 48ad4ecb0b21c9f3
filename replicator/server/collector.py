"""Short pauses of Python's cyclic garbage collector in a process that answers decisions.

A replica's cache of answers holds a few objects per cached resource (the summaries of its
patterns: dictionaries of grants), and a full collection walks every object that lives long:
at 65,536 cached resources a full collection takes tens of milliseconds, and while the cache
fills or turns over, the collector starts one each time the long-lived objects grew by a
quarter.  Those pauses were the tail of the decision latency (a p99 of 3 to 4 ms and a maximum
of 150 ms at 1,000,000 bindings with a cold cache).

So a decision process freezes what is alive ten times a second (``gc.freeze()``: the objects
move to a permanent generation the collector does not walk), and the collector walks only what
the last tenth of a second made.  Frozen objects are still freed by their reference counts
when they are dropped (a cache entry has no reference cycles).  A cycle that was alive when it
was frozen and became garbage afterwards is reclaimed only by a full collection (unfreeze,
collect, freeze): a decision worker runs one an hour; the node's own process runs none, since
its heap holds the admin's state (at 1,000,000 bindings a full collection every ten minutes
stopped its writes for about five seconds in the soak), and such cycles are rare and small
(an exception's traceback, caught in the tenth of a second it lived).  Filling a cache at
40,000 entries a second, the longest pause was 147 ms without the policy and 11.5 ms with it.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Final

FREEZE_INTERVAL_S: Final = 0.1
WORKER_FULL_COLLECTION_S: Final = 3600.0
"""A decision worker's heap is small (its cache, its modules): a full collection an hour."""


class CollectorPolicy:
    """A daemon thread freezing the heap every ``freeze_s`` and collecting it all every
    ``collect_s``; :meth:`close` stops it."""

    def __init__(self, *, freeze_s: float = FREEZE_INTERVAL_S, collect_s: float | None) -> None:
        """``collect_s`` None: never a full collection (a node's process, whose heap holds
        the admin's state: at 1,000,000 bindings a full collection stopped it for seconds)."""
        self.freeze_s, self.collect_s = freeze_s, collect_s
        self.full_collections = 0
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aclstore-gc", daemon=True)

    def start(self) -> CollectorPolicy:
        gc.collect()
        gc.freeze()
        self._thread.start()
        return self

    def _run(self) -> None:
        next_full = None if self.collect_s is None else time.monotonic() + self.collect_s
        while not self._closing.wait(self.freeze_s):
            if next_full is not None and time.monotonic() >= next_full:
                gc.unfreeze()
                gc.collect()
                self.full_collections += 1
                next_full = time.monotonic() + (self.collect_s or 0.0)
            gc.freeze()

    def close(self) -> None:
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
