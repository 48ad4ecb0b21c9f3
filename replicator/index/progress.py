"""How far the index has applied the log, and waiting for it to get further.

A :class:`Progress` holds the applied position, the stop record and whether the index is
closed, under one condition variable: commits publish under it, readers wait on it
("answer at least as fresh as offset N", the log's offsets being its consistency token).
"""

from __future__ import annotations

import threading
import time

from replicator.index.records import IndexPosition, StopRecord


class Progress:
    def __init__(self, position: IndexPosition, stopped: StopRecord | None) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.position = position
        self.stopped = stopped
        self.closed = False

    def wait_applied(self, offset: int, timeout: float) -> IndexPosition:
        """Wait up to ``timeout`` s until ``offset`` is applied; returns the position reached.

        Returns early when the index is stopped at or before ``offset`` (it cannot get there
        without an operator) or closed.
        """
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.position.offset < offset and not self.closed:
                if self.stopped is not None and self.stopped.offset <= offset:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.cond.wait(remaining)
            return self.position

    def notify(self) -> None:
        with self.cond:
            self.cond.notify_all()
