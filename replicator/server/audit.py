"""Audit emission: decisions as CloudEvents-style JSON on an audit topic of the log backend.

Denials are always emitted; allows are sampled (``allow_sample_rate``).  The request path only
appends a small tuple to an in-memory queue; a sender thread turns them into CloudEvents
(built by :mod:`replicator.contract.audit_event`, declared in ``schemas/audit_event_v1.json``:
``specversion`` 1.0, ``data`` holding principal, host, operation, resource, pattern type,
result, reason and the replica offset the decision reflects) and
appends them to the sink, a :class:`~store.log.base.ChangeLog` (an audit topic next to the ACL
topic on Kafka, or an embedded log in the data directory), which acknowledges before anything
counts as sent.

When the sink is down, events go to a durable on-disk buffer (SQLite, ``synchronous=FULL``) up
to ``buffer_max_events``, and are sent oldest first once the sink answers again (also after a
restart).  An event that finds the buffer full is dropped and *counted*: the figures appear in
``/metrics`` (``aclstore_audit_dropped_events``), never silently.  Delivery is at least once:
a crash between the sink's acknowledgement and the buffer's delete may resend an event, which
its CloudEvents ``id`` identifies.
"""

from __future__ import annotations

import collections
import logging
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from replicator.contract.audit_event import audit_event, encode_audit_event
from replicator.server.metrics import AuditFigures
from store.authorizer import ALLOWED, Action, Decision
from store.errors import StoreError

BUFFER_FILE: Final = "audit-buffer.sqlite3"

_log = logging.getLogger("aclstore.audit")


class AuditSink(Protocol):
    """Where audit events go: the ``append`` of a :class:`~store.log.base.ChangeLog`."""

    def append(
        self, records: Sequence[tuple[bytes, bytes | None]], *, timeout: float = 10.0
    ) -> list[int]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditSettings:
    """How much to emit and how much to keep while the sink is down."""

    allow_sample_rate: float = 0.01
    """Share of ALLOWED decisions emitted (0 to 1); DENIED ones are always emitted."""
    buffer_max_events: int = 100_000
    queue_max_events: int = 50_000
    """In-memory events awaiting the sender; past it, events are dropped and counted."""
    batch_events: int = 500
    sink_timeout_s: float = 5.0
    retry_backoff_s: float = 1.0
    linger_s: float = 0.05
    """How long the sender lets events gather before a batch: it wakes a few times a second
    instead of once per decision, so it takes little from the request threads."""
    source: str = "aclstore"
    """CloudEvents ``source``: which node decided."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.allow_sample_rate <= 1.0:
            raise ValueError(
                f"allow_sample_rate must be within [0, 1], got {self.allow_sample_rate}"
            )
        for name in ("buffer_max_events", "queue_max_events", "batch_events"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.sink_timeout_s <= 0 or self.retry_backoff_s <= 0 or self.linger_s < 0:
            raise ValueError("sink_timeout_s and retry_backoff_s must be > 0, linger_s >= 0")


# (time_ns, principal, host, action, decision, offset)
_Pending = tuple[int, str, str, Action, Decision, int]


def cloud_event(item: _Pending, source: str) -> tuple[bytes, bytes]:
    """One decision as a CloudEvents JSON record: (key = event id, value = the event)."""
    time_ns, principal, host, action, decision, offset = item
    event_id = uuid.uuid4().hex
    event = audit_event(
        event_id=event_id, source=source, time_ns=time_ns, principal=principal, host=host,
        action=action, decision=decision, offset=offset,
    )  # fmt: skip
    return event_id.encode(), encode_audit_event(event)


class AuditBuffer:
    """The durable on-disk buffer: a bounded FIFO of encoded events in SQLite."""

    def __init__(self, path: Path, capacity: int) -> None:
        self.path = path
        self.capacity = capacity
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "key BLOB NOT NULL, value BLOB NOT NULL)"
        )
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER)")
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('dropped', 0)")
        self.size = int(self._db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        self.dropped = int(
            self._db.execute("SELECT value FROM meta WHERE name='dropped'").fetchone()[0]
        )

    def put(self, records: Sequence[tuple[bytes, bytes]]) -> int:
        """Keep as many as fit; return how many were dropped (counted, also across restarts)."""
        room = max(0, self.capacity - self.size)
        kept, dropped = records[:room], len(records) - min(room, len(records))
        with self._db:
            self._db.executemany("INSERT INTO events (key, value) VALUES (?, ?)", kept)
            if dropped:
                self._db.execute(
                    "UPDATE meta SET value = value + ? WHERE name='dropped'", (dropped,)
                )
        self.size += len(kept)
        self.dropped += dropped
        return dropped

    def oldest(self, limit: int) -> list[tuple[int, bytes, bytes]]:
        rows = self._db.execute(
            "SELECT seq, key, value FROM events ORDER BY seq LIMIT ?", (limit,)
        ).fetchall()
        return [(int(seq), bytes(key), bytes(value)) for seq, key, value in rows]

    def remove_through(self, seq: int, count: int) -> None:
        with self._db:
            self._db.execute("DELETE FROM events WHERE seq <= ?", (seq,))
        self.size = max(0, self.size - count)

    def close(self) -> None:
        self._db.close()


class AuditEmitter:
    """Samples decisions, queues them, and sends them to the sink (or the buffer) in batches."""

    def __init__(
        self, sink: AuditSink, buffer_path: Path, settings: AuditSettings | None = None
    ) -> None:
        self.sink = sink
        self.settings = settings or AuditSettings()
        self.buffer = AuditBuffer(buffer_path, self.settings.buffer_max_events)
        self._queue: collections.deque[_Pending] = collections.deque()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._idle = threading.Event()
        self._sent = 0
        self._dropped_in_memory = 0
        self._sink_up = True
        self._next_retry = 0.0
        self._rate = self.settings.allow_sample_rate
        self._random = random.random
        self._thread = threading.Thread(target=self._run, name="aclstore-audit", daemon=True)
        self._thread.start()

    # --- the request path ------------------------------------------------------------------

    def record(
        self,
        principal: str,
        host: str,
        actions: Sequence[Action],
        decisions: Sequence[Decision],
        offset: int,
    ) -> None:
        """Queue the decisions to emit: every denial, a sample of the allows."""
        now = 0
        rate, queue = self._rate, self._queue
        for action, decision in zip(actions, decisions, strict=True):
            if decision.result is ALLOWED and (rate <= 0.0 or self._random() >= rate):
                continue
            if len(queue) >= self.settings.queue_max_events:
                self._dropped_in_memory += 1
                continue
            now = now or time.time_ns()
            queue.append((now, principal, host, action, decision, offset))
        if now:
            self._idle.clear()
            if not self._wake.is_set():
                self._wake.set()

    # --- figures -------------------------------------------------------------------------------

    def figures(self) -> AuditFigures:
        return AuditFigures(
            queued=len(self._queue),
            buffered=self.buffer.size,
            buffer_capacity=self.buffer.capacity,
            dropped=self.buffer.dropped + self._dropped_in_memory,
            sent=self._sent,
            sink_up=self._sink_up,
        )

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every recorded event was acknowledged by the sink; False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._wake.set()
            if self._idle.wait(0.05) and not self._queue and self.buffer.size == 0:
                return True
        return False

    # --- the sender thread ---------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            closing = self._closing.is_set()
            if not closing and 0 < len(self._queue) < self.settings.batch_events:
                self._closing.wait(self.settings.linger_s)  # let a batch gather
            batch = self._take()
            try:
                if batch:
                    self._deliver([cloud_event(item, self.settings.source) for item in batch])
                if self.buffer.size and self._may_try_sink():
                    self._drain_buffer()
            except StoreError as exc:
                if self._sink_up:
                    _log.warning("audit sink unavailable, buffering on disk: %s", exc)
                self._sink_up = False
                self._next_retry = time.monotonic() + self.settings.retry_backoff_s
            except Exception:  # a bug: keep the events on disk rather than lose them
                if self._sink_up:
                    _log.exception("audit sender failed; events stay buffered")
                self._sink_up = False
                self._next_retry = time.monotonic() + self.settings.retry_backoff_s
            if closing and not self._queue:
                return
            if not self._queue:
                self._idle.set()
                wait = self.settings.retry_backoff_s if self.buffer.size else 1.0
                self._wake.wait(wait)
                self._wake.clear()

    def _take(self) -> list[_Pending]:
        queue, batch = self._queue, []
        for _ in range(min(len(queue), self.settings.batch_events)):
            batch.append(queue.popleft())
        return batch

    def _deliver(self, records: list[tuple[bytes, bytes]]) -> None:
        """Send at once when nothing older waits on disk, else queue behind it (order kept)."""
        if self.buffer.size == 0 and self._may_try_sink():
            try:
                self.sink.append(records, timeout=self.settings.sink_timeout_s)
            except Exception:
                self._spill(records)
                raise
            self._sent += len(records)
            self._sink_up = True
            return
        self._spill(records)

    def _may_try_sink(self) -> bool:
        return self._sink_up or time.monotonic() >= self._next_retry

    def _spill(self, records: list[tuple[bytes, bytes]]) -> None:
        dropped = self.buffer.put(records)
        if dropped:
            _log.error(
                "audit buffer full (%d events): dropped %d events", self.buffer.capacity, dropped
            )

    def _drain_buffer(self) -> None:
        while self.buffer.size:
            rows = self.buffer.oldest(self.settings.batch_events)
            if not rows:
                self.buffer.size = 0
                return
            self.sink.append(
                [(key, value) for _, key, value in rows], timeout=self.settings.sink_timeout_s
            )
            self.buffer.remove_through(rows[-1][0], len(rows))
            self._sent += len(rows)
            if not self._sink_up:
                _log.warning("audit sink is back; sending the buffered events")
            self._sink_up = True
            if self._queue:  # new events wait behind the buffer: buffer them, keep the order
                self._spill([cloud_event(item, self.settings.source) for item in self._take()])

    def close(self, timeout: float = 10.0) -> None:
        """Send what is queued (or buffer it on disk), then stop."""
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout)
        if self._queue:  # the sender did not finish: keep the rest on disk
            self._spill([cloud_event(item, self.settings.source) for item in self._take_all()])
        self.buffer.close()

    def _take_all(self) -> list[_Pending]:
        items = list(self._queue)
        self._queue.clear()
        return items
