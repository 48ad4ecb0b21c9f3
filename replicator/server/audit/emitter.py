"""Audit emission: every answered decision that is audited is on local disk before the answer.

Denials are always audited; allows are sampled (``allow_sample_rate``), except that the first
ALLOWED decision of each binding in every usage period (``usage_period_s``, an hour) is always
audited, so that a grant in use is never reported unused for want of a sample (``audit report``'s
unused grants are exact to within a period).  The request path
writes the request's audited decisions as one line to the spool
(:mod:`replicator.server.audit.spool`): one ``write(2)`` per request, no fsync, so a killed
process loses nothing.  A sender (:mod:`replicator.server.audit.sender`; in a node, a process
of its own, so that it takes no turn of the request threads' interpreter lock) reads the
spool, turns each decision into a CloudEvent (built by :mod:`replicator.contract.audit_event`,
declared in ``schemas/audit_event_v1.json``: principal, host, operation, resource, result, the
deciding rule or binding, and the change-log offset the decision reflects), appends them to
the sink, a :class:`~store.log.base.ChangeLog` (an audit topic next to the ACL topic on Kafka,
or an embedded log in the data directory), and only after the sink acknowledged records the
shipped position.  A restarted node resumes from that position; an event sent but not
recorded as shipped is sent again under the same id (delivery is at least once, the id is
what downstream deduplicates on).

While the sink is down the spool holds the events, up to ``buffer_max_events`` not yet
shipped; past that, new events are dropped and *counted* (``aclstore_audit_dropped_events`` in
``/metrics``), never silently.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Final, Protocol

from replicator.contract.audit_event import AuditEventEncoder, DecisionItems
from replicator.server.audit.lines import line_body, line_head
from replicator.server.audit.progress import SENT, SINK_UP
from replicator.server.audit.sender import Sender, SenderConfig, SenderProcess
from replicator.server.audit.settings import AuditSettings
from replicator.server.audit.sinks import AuditSink, AuditSinkOpener
from replicator.server.audit.spool import Spool
from replicator.server.metrics import AuditFigures
from store.acl import AclPermissionType
from store.authorizer import ALLOWED, DENIED, Action, AuthorizationResult, Decision

_RESULT: Final = attrgetter("result")
_MARK: Final = attrgetter("_mark")
_PERIODS: Final = itertools.count(1)
"""Usage period numbers, unique in the process (AclBinding._mark, Decision._mark)."""
_DENY: Final = AclPermissionType.DENY

SPOOL_DIR: Final = "audit-spool"
LEGACY_BUFFER_FILE: Final = "audit-buffer.sqlite3"
"""The SQLite buffer of earlier versions: its events are moved into the spool at start."""

_log = logging.getLogger("aclstore.audit")


class LogFlags(Protocol):
    """Kafka's ``Action.logIfAllowed`` / ``logIfDenied`` (KIP-504) of an action a broker sent."""

    @property
    def log_if_allowed(self) -> bool: ...
    @property
    def log_if_denied(self) -> bool: ...


class AuditEmitter:
    """Writes audited decisions to the spool; a sender ships them to the sink.

    Given a sink object, the sender is a thread of this process (it then shares the request
    threads' interpreter lock).  Given an :class:`AuditSinkOpener`, it is a process of its own
    (:class:`~replicator.server.audit.sender.SenderProcess`), which opens the sink there: what
    a node does.
    """

    def __init__(
        self,
        sink: AuditSink | AuditSinkOpener,
        spool_dir: Path,
        settings: AuditSettings | None = None,
    ) -> None:
        self.settings = settings or AuditSettings()
        s = self.settings
        self.spool = Spool(spool_dir, capacity=s.buffer_max_events, segment_bytes=s.segment_bytes)
        _adopt_legacy_buffer(spool_dir.parent / LEGACY_BUFFER_FILE, self.spool, AuditEventEncoder(s.source))
        progress = self.spool.progress
        progress.set(SENT, 0)  # counted from this start, as the node's other counters
        progress.set(SINK_UP, 1)
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._rate = s.allow_sample_rate
        self._random = random.random
        # Each binding object whose use this period was written carries the period's number
        # (AclBinding._mark; numbers are unique in the process, so two emitters sharing an
        # object only cost each other events, never miss one), and so does each decision
        # object looked at this period (Decision._mark).  The replica hands out the same
        # objects for a binding while it is cached, and another object for the same
        # binding only costs one more event.
        self._period = 0
        self._items = DecisionItems()
        self._log_unsampled = math.log(1.0 - self._rate) if self._rate < 1.0 else -math.inf
        self._skip = self._gap() if self._rate > 0.0 else 0
        self._usage_period_end = 0.0  # the first request starts a period
        self._thread: threading.Thread | None = None
        self.sender_process: SenderProcess | None = None
        if isinstance(sink, AuditSinkOpener):  # it can be opened elsewhere: in a process of its own
            config = SenderConfig(spool_dir, s, sink, _log.getEffectiveLevel())
            self.sender_process = SenderProcess(config, progress)
        else:
            sender = Sender(
                sink, self.spool, s, wake=self._wake, closing=self._closing, idle_s=1.0,
                hand_over=True,
            )  # fmt: skip
            self._thread = threading.Thread(target=sender.run, name="aclstore-audit", daemon=True)
            self._thread.start()

    # --- the request path ------------------------------------------------------------------

    def record(
        self,
        principal: str,
        host: str,
        actions: Sequence[Action],
        decisions: Sequence[Decision],
        offset: int,
        *,
        results: Sequence[AuthorizationResult] | None = None,
        flags: Sequence[LogFlags] | None = None,
    ) -> None:
        """Write the request's audited decisions (every denial, a sample of the allows, and
        each binding's first ALLOWED decision of the usage period).  ``results``: the
        decisions' results, when the caller has them listed already.  ``flags``: each
        action's KIP-504 flags, as a broker sent them: a decision its action marks quiet
        (``logIfAllowed`` false and ALLOWED, ``logIfDenied`` false and DENIED) is not written,
        and a quiet ALLOWED decision is not its binding's first use either."""
        if len(actions) != len(decisions):
            raise ValueError(f"{len(actions)} actions but {len(decisions)} decisions")
        if results is None:
            results = list(map(_RESULT, decisions))
        elif len(results) != len(decisions):
            raise ValueError(f"{len(results)} results but {len(decisions)} decisions")
        if flags is not None and len(flags) != len(decisions):
            raise ValueError(f"{len(flags)} actions' flags but {len(decisions)} decisions")
        positions = self._audited(decisions, results, flags)
        if not positions:
            return
        item = self._items
        items = [item(actions[i], decisions[i]) for i in positions]
        head = line_head(time.time_ns(), principal, host, offset)
        dropped = self.spool.append(len(items), line_body(head, items), lambda n: line_body(head, items[:n]))
        if dropped:
            _log.error(
                "audit spool full (%d events not yet shipped): dropped %d events",
                self.spool.capacity, dropped,
            )  # fmt: skip
        if not self._wake.is_set():
            self._wake.set()

    def _audited(
        self,
        decisions: Sequence[Decision],
        results: Sequence[AuthorizationResult],
        flags: Sequence[LogFlags] | None = None,
    ) -> list[int]:
        """The positions of the decisions to write, in order: every denial, each binding's
        first ALLOWED decision of the usage period, and the sample of the allows; of these,
        those whose action is not marked quiet (``flags``).

        Done with whole-list operations (``count``, ``index``, ``map`` over the decisions'
        period numbers) rather than a step per decision: most of a request's decisions are
        allows of bindings already used this period, and those cost nothing here unless
        sampled.  So too the flags: only a position picked is looked up in them (a broker
        marks few actions quiet, if any).  The sample is a Bernoulli process over all
        positions (the gaps between sampled positions are geometric, carried from one request
        to the next), so over the logged ones too; a sampled denial or first use is written
        once."""
        n = len(decisions)
        picked = []
        denied = n - results.count(ALLOWED)
        if denied:
            at = 0
            for _ in range(denied):
                at = results.index(DENIED, at)
                if flags is None or flags[at].log_if_denied:
                    picked.append(at)
                at += 1
        period = self._usage_period()
        if period and list(map(_MARK, decisions)).count(period) != n:
            # A decision not looked at this period: the first use of its binding, unless
            # another decision object of the same binding was used already (a binding's mark
            # is what counts; a decision's only spares the next request that look).
            for i, decision in enumerate(decisions):
                if decision._mark == period:
                    continue
                binding = decision.binding
                if binding is not None and binding._mark != period:
                    if results[i] is ALLOWED:
                        if flags is not None and not flags[i].log_if_allowed:
                            continue  # quiet: not a use the trail sees (neither is marked)
                        picked.append(i)  # its first use this period
                    elif binding.permission_type is not _DENY:
                        continue  # not a use (a denial names only DENY bindings)
                    # Marked for the period (a DENY binding never allows: not looked at again).
                    object.__setattr__(binding, "_mark", period)
                object.__setattr__(decision, "_mark", period)
        if self._rate > 0.0:
            skip = self._skip
            while skip < n:
                if flags is None or (
                    flags[skip].log_if_allowed if results[skip] is ALLOWED else flags[skip].log_if_denied
                ):
                    picked.append(skip)
                skip += 1 + self._gap()
            self._skip = skip - n
        return sorted(set(picked)) if len(picked) > 1 else picked

    def _gap(self) -> int:
        """How many positions pass unsampled before the next sampled one (geometric)."""
        if self._rate >= 1.0:
            return 0
        return int(math.log(1.0 - self._random()) / self._log_unsampled)

    def _usage_period(self) -> int:
        """This usage period's number (a new one once the period ended); 0 when usage is not
        tracked."""
        length = self.settings.usage_period_s
        if length <= 0.0:
            return 0
        now = time.monotonic()
        if now >= self._usage_period_end:
            self._period = next(_PERIODS)
            self._usage_period_end = now + length
        return self._period

    # --- figures -------------------------------------------------------------------------------

    def figures(self) -> AuditFigures:
        return AuditFigures(
            buffered=self.spool.backlog,
            buffer_capacity=self.spool.capacity,
            dropped=self.spool.dropped,
            sent=self.spool.progress.get(SENT),
            sink_up=bool(self.spool.progress.get(SINK_UP)),
            spool_bytes=self.spool.size_bytes(),
            corrupt_lines=self.spool.corrupt_lines,
            sender_restarts=self.sender_process.restarts if self.sender_process is not None else 0,
        )

    def storage_problem(self) -> str | None:
        """Why audited decisions cannot be written now (the spool's file system is full),
        naming the directory and the fix; None when they can."""
        return self.spool.storage_problem()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every written event was acknowledged by the sink; False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.spool.backlog == 0:
                return True
            self._wake.set()
            time.sleep(0.02)
        return self.spool.backlog == 0

    def close(self, timeout: float | None = None) -> None:
        """Ship what the sink takes within ``timeout``, then stop: the rest stays on disk."""
        wait = timeout if timeout is not None else self.settings.sink_timeout_s + 5
        if self.sender_process is not None:
            self.sender_process.close(wait)
        if self._thread is not None:
            self._closing.set()
            self._wake.set()
            self._thread.join(wait)
        self.spool.close()


def _adopt_legacy_buffer(path: Path, spool: Spool, encoder: AuditEventEncoder) -> None:
    """Move the events of an earlier version's SQLite buffer into the spool, then remove it."""
    if not path.exists():
        return
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT value FROM events ORDER BY seq").fetchall()
    except sqlite3.DatabaseError as exc:
        _log.error("audit buffer %s is unreadable (%s): moved aside", path, exc)
        rows = []
    finally:
        db.close()
    for (value,) in rows:
        event = json.loads(value)
        data = event["data"]
        reason = data["reason"]
        b = reason.get("binding")
        item = [
            data["operation"], data["resourceType"], data["resourceName"], data["patternType"],
            data["result"], reason["rule"],
            None if b is None else [
                b["resourceType"], b["resourceName"], b["patternType"], b["principal"],
                b["host"], b["operation"], b["permissionType"],
            ],
        ]  # fmt: skip
        time_ns = _time_ns(event["time"])
        body = line_body(line_head(time_ns, data["principal"], data["host"], data["offset"]),
                     [encoder.item(item)])  # fmt: skip
        spool.append(1, body, _whole(body))
    path.rename(path.with_name(path.name + ".adopted"))
    _log.warning("moved %d audit events from %s into the spool", len(rows), path)


def _whole(body: bytes) -> Callable[[int], bytes]:
    return lambda _: body


def _time_ns(text: str) -> int:
    from datetime import datetime

    moment = datetime.fromisoformat(text)
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
