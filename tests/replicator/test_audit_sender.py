"""The audit sender as a process of its own: what a node runs.

A node hands the sender a way to open the audit log and starts it as a child process; the
spool's files are the only hand-off.  The independent count is the client's: the decisions it
was answered, against the events the embedded audit log holds and the figures ``/metrics``
shows from the other process.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from embedded_log_support import earlier_embedded_log, indexes, row_counts
from sidecar_support import Raw, action_json, start_node, wait_until

from replicator.contract.audit_event import DecisionItems
from replicator.server.audit import AuditSettings, Spool
from replicator.server.audit import lines as lines_module
from replicator.server.audit.sender import Sender
from replicator.server.audit.spool import SpoolReader
from replicator.server.metrics import AuditFigures
from replicator.server.node import Node
from store.acl import AclOperation, ResourceType
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule
from store.log import EmbeddedChangeLog

READ = AclOperation.READ
TOPIC = ResourceType.TOPIC


def denied_burst(raw: Raw, prefix: str, requests: int, batch: int) -> list[str]:
    """``requests`` requests of ``batch`` actions each, none granted (each one audited)."""
    names = []
    for r in range(requests):
        batch_names = [f"{prefix}-{r}-{i}" for i in range(batch)]
        status, answer = raw.post("/v1/authorize", {
            "principal": "User:mallory", "host": "192.0.2.9",
            "actions": [action_json(READ, TOPIC, name) for name in batch_names],
        })  # fmt: skip
        assert (status, set(answer["results"])) == (200, {"DENIED"})
        names.extend(batch_names)
    return names


def shipped_names(data_dir: Path) -> list[str]:
    log = EmbeddedChangeLog(data_dir / "audit")
    try:
        records = log.read(0, max_records=1_000_000, timeout=1.0)
    finally:
        log.close()
    return [json.loads(r.value)["data"]["resourceName"] for r in records if r.value is not None]


def figures(node: Node) -> AuditFigures:
    assert node.audit is not None
    return node.audit.figures()


@pytest.mark.slow  # a live node, its sender process killed and restarted
def test_a_killed_sender_process_is_restarted_and_ships_every_event(tmp_path: Path) -> None:
    node = start_node(tmp_path / "n", audit=AuditSettings(allow_sample_rate=0.0, linger_s=0.05))
    raw = Raw(node)
    try:
        assert node.audit is not None and node.audit.sender_process is not None
        sender = node.audit.sender_process
        first_pid = sender.pid
        assert first_pid != os.getpid()
        before = denied_burst(raw, "before", requests=20, batch=5)
        assert node.audit.flush(20)
        os.kill(first_pid, signal.SIGKILL)
        wait_until(lambda: sender.restarts == 1, 30, "the node to restart its audit sender")
        assert sender.pid != first_pid
        after = denied_burst(raw, "after", requests=20, batch=5)
        assert node.audit.flush(30)
        shown = figures(node)
        assert (shown.buffered, shown.dropped, shown.sink_up, shown.sender_restarts) == (0, 0, True, 1)
        # Counted by the sender processes, shown by the node: every event, resends included.
        assert shown.sent >= len(before) + len(after)
    finally:
        raw.close()
        node.stop()
    shipped = shipped_names(tmp_path / "n")
    assert set(shipped) == set(before) | set(after)
    assert shipped[: len(before)] == before  # shipped before the kill, in order, once


@pytest.mark.slow  # a live node and its sender process
def test_the_sender_process_runs_at_a_lower_priority_than_its_node(tmp_path: Path) -> None:
    """The sender is background work: its scheduling priority is the node's lowered by
    ``sender_nice`` (10 by default), and a niceness outside 0-19 is refused."""
    node = start_node(tmp_path / "n")
    try:
        assert node.audit is not None and node.audit.sender_process is not None
        pid = node.audit.sender_process.pid
        wanted = min(os.getpriority(os.PRIO_PROCESS, 0) + AuditSettings().sender_nice, 19)
        lowered = lambda: os.getpriority(os.PRIO_PROCESS, pid) == wanted  # noqa: E731
        wait_until(lowered, 30, "the sender to lower its priority")
    finally:
        node.stop()
    assert AuditSettings().sender_nice == 10
    with pytest.raises(ValueError, match="sender_nice"):
        AuditSettings(sender_nice=20)


@pytest.mark.slow  # a live node and its sender process
def test_the_node_shows_the_sender_process_figures_and_a_stopped_node_leaves_none(
    tmp_path: Path,
) -> None:
    node = start_node(tmp_path / "n", audit=AuditSettings(allow_sample_rate=0.0, linger_s=0.05))
    raw = Raw(node)
    try:
        names = denied_burst(raw, "t", requests=10, batch=3)
        assert node.audit is not None and node.audit.flush(20)
        shown = figures(node)
        assert (shown.buffered, shown.sent, shown.dropped, shown.sink_up) == (0, len(names), 0, True)
        assert shown.spool_bytes == 0  # everything shipped
        sender = node.audit.sender_process
        assert sender is not None
        pid = sender.pid
    finally:
        raw.close()
        node.stop()
    with pytest.raises(ProcessLookupError):  # stopped with the node, and reaped
        os.kill(pid, 0)
    assert shipped_names(tmp_path / "n") == names

    # A restarted node shows its own start's counts and the drops kept across restarts.
    again = start_node(tmp_path / "n", audit=AuditSettings(allow_sample_rate=0.0))
    try:
        shown = figures(again)
        assert (shown.buffered, shown.sent, shown.dropped) == (0, 0, 0)
    finally:
        again.stop()


@pytest.mark.slow  # a live node and its sender process
def test_the_sender_process_makes_an_earlier_audit_log_delete_and_appends_after_it(
    tmp_path: Path,
) -> None:
    """An audit log of an earlier version (one row a record, the key index) is kept: its
    events are read back unchanged at their offsets, the sender's follow them as batches, and
    the index is gone (the audit log is never compacted, and every append paid for it)."""
    earlier = [(b"old-%d" % i, b'{"data":{"resourceName":"old-%d"}}' % i, 1000 + i) for i in range(3)]
    path = earlier_embedded_log(tmp_path / "n" / "audit", earlier)
    node = start_node(tmp_path / "n", audit=AuditSettings(allow_sample_rate=0.0, linger_s=0.05))
    raw = Raw(node)
    try:
        names = denied_burst(raw, "t", requests=10, batch=3)
        assert node.audit is not None and node.audit.flush(20)
    finally:
        raw.close()
        node.stop()
    assert indexes(path) == set()
    records_rows, batch_rows = row_counts(path)
    assert records_rows == 3 and 1 <= batch_rows <= len(names)
    with EmbeddedChangeLog(tmp_path / "n" / "audit") as log:
        assert log.cleanup_policy == "delete"
        records = log.read(0, timeout=1.0)
    assert [(r.offset, r.key, r.value, r.timestamp_ms) for r in records[:3]] == [
        (i, k, v, t) for i, (k, v, t) in enumerate(earlier)
    ]
    assert [r.offset for r in records] == list(range(3 + len(names)))
    assert shipped_names(tmp_path / "n") == [f"old-{i}" for i in range(3)] + names


class _WriterStillWriting:
    """A sink that, at each append, has the (next) node write one more request to the spool."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.appended: list[int] = []

    def append(self, records: Sequence[tuple[bytes, bytes | None]], *, timeout: float = 10.0) -> list[int]:
        if len(self.appended) > 20:
            raise AssertionError("the closing sender keeps shipping what was written after it")
        self.appended.append(len(records))
        decision = [Decision(AuthorizationResult.DENIED, DecisionRule.DEFAULT_DENY)]
        emitter_line(self.spool, f"late-{len(self.appended)}", decision)
        return list(range(len(records)))


def emitter_line(spool: Spool, name: str, decisions: list[Decision]) -> None:
    fragment = DecisionItems()(Action(READ, TOPIC, name), decisions[0])
    body = lines_module.line_body(lines_module.line_head(1, "User:a", "h", 0), [fragment])
    spool.append(1, body, lambda _: body)


@pytest.mark.unit
def test_a_closing_sender_ships_what_was_written_when_it_was_told_and_stops(tmp_path: Path) -> None:
    """A sender whose node died keeps its input's end as its closing signal: it ships what the
    spool held then, and leaves what the next node writes to that node's sender."""
    spool = Spool(tmp_path, capacity=1000, segment_bytes=1 << 20)
    denied = [Decision(AuthorizationResult.DENIED, DecisionRule.DEFAULT_DENY)]
    for i in range(5):
        emitter_line(spool, f"early-{i}", denied)
    sink = _WriterStillWriting(spool)
    closing = threading.Event()
    closing.set()
    settings = AuditSettings(batch_events=2, linger_s=0)
    sender = Sender(
        sink, SpoolReader(tmp_path), settings, wake=threading.Event(), closing=closing, idle_s=1.0,
        hand_over=False,
    )  # fmt: skip
    sender.run()
    shipped = SpoolReader(tmp_path).shipped.seq
    # The five early events, in batches of two; the batch that reaches them may hold one more.
    assert 5 <= shipped <= 6 and sum(sink.appended) == shipped
    assert spool.backlog == 5 + len(sink.appended) - shipped > 0  # left for the next sender
    spool.close()
