"""Audit events survive a killed node and an unreachable audit log (real ``aclstore serve``).

The node runs as a child process (``python -m replicator.cli serve``) on a data directory that
outlives it.  With no ACLs and ``allow.everyone.if.no.acl.found`` unset, every decision is a
denial (DEFAULT_DENY), and every denial is audited: the client's own count of the decisions it
got an answer for is the independent expectation.  Each action names a resource no other
action names, so an event in the audit log says which answered decision it records.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from sidecar_support import wait_until

from devtools.kafka_process import LocalKafka
from store.log import ChangeLog, EmbeddedChangeLog, KafkaChangeLog

ROOT = Path(__file__).resolve().parents[2]


class ServeProcess:
    """``aclstore serve`` in a child process, on a free loopback port."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.log_path = data_dir.with_name(data_dir.name + "-serve.log")
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "replicator.cli", "serve", "--listen", "127.0.0.1:0",
                 "--data-dir", str(data_dir), *extra],
                stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if " serving " not in first:
            self.process.kill()
            raise AssertionError(f"serve did not start: {first!r}\n{self.log_path.read_text()}")
        self.port = int(first.rsplit(":", 1)[1])
        threading.Thread(target=self.process.stdout.read, daemon=True).start()  # drain

    def metric(self, name: str) -> float:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"{name} is not in /metrics")

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Burst:
    """Sequential authorize requests over one keep-alive connection, each action a new name."""

    def __init__(self, port: int, prefix: str, batch: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.prefix = prefix
        self.batch = batch
        self.answered: list[str] = []
        self.in_flight: list[str] = []
        self.requests = 0

    def run(self, *, until: threading.Event | None = None, requests: int | None = None) -> None:
        """Until the node stops answering (killed), ``until`` is set or ``requests`` were sent."""
        while (until is None or not until.is_set()) and (requests is None or self.requests < requests):
            names = [f"{self.prefix}-{self.requests}-{i}" for i in range(self.batch)]
            body = {"principal": "User:burst", "host": "10.1.1.1", "actions": [
                {"operation": "READ", "resourceType": "TOPIC", "resourceName": n} for n in names
            ]}  # fmt: skip
            self.in_flight = names
            self.requests += 1
            try:
                self.conn.request("POST", "/v1/authorize", body=json.dumps(body))
                response = self.conn.getresponse()
                answer = json.loads(response.read())
            except (OSError, http.client.HTTPException, ValueError):
                return  # the node is gone: this request's answer never arrived
            assert response.status == 200 and answer["results"] == ["DENIED"] * self.batch
            self.answered.extend(names)
            self.in_flight = []
        self.conn.close()


def audit_events(log: ChangeLog) -> list[dict]:  # type: ignore[type-arg]
    out: list[dict] = []  # type: ignore[type-arg]
    offset = 0
    while True:
        records = log.read(offset, timeout=2.0)
        if not records:
            return out
        out.extend(json.loads(r.value) for r in records if r.value is not None)
        offset = records[-1].offset + 1


def deduplicated(events: list[dict]) -> dict[str, dict]:  # type: ignore[type-arg]
    """By event id, as the pipeline deduplicates; a resent event must be the same event."""
    by_id: dict[str, dict] = {}  # type: ignore[type-arg]
    for event in events:
        assert by_id.setdefault(event["id"], event) == event, "one id, two different events"
    return by_id


def kill_mid_burst(data_dir: Path, kills: int, seconds: float, batch: int) -> tuple[set[str], set[str]]:
    """SIGKILL the node ``kills`` times while a burst runs; (answered names, in-flight names)."""
    answered: list[str] = []
    unanswered: set[str] = set()
    for round_ in range(kills):
        node = ServeProcess(data_dir, "--audit-allow-sample-rate", "0")
        burst = Burst(node.port, f"r{round_}", batch)
        runner = threading.Thread(target=burst.run)
        runner.start()
        time.sleep(seconds)
        node.kill()  # mid-burst: requests are being answered as it dies
        runner.join(30)
        assert burst.requests > 5, f"round {round_}: only {burst.requests} requests were sent"
        answered.extend(burst.answered)
        unanswered.update(burst.in_flight)
    assert len(answered) == len(set(answered))
    return set(answered), unanswered


def check_the_log_holds_exactly_the_answers(
    events: list[dict], answered: set[str], unanswered: set[str]  # type: ignore[type-arg]
) -> None:
    by_id = deduplicated(events)
    names = Counter(e["data"]["resourceName"] for e in by_id.values())
    assert [n for n, c in names.items() if c > 1] == [], "a decision recorded under two ids"
    assert {e["data"]["result"] for e in by_id.values()} == {"DENIED"}
    missing = answered - names.keys()
    assert not missing, f"{len(missing)} answered denials are not in the audit log"
    # A request whose events were written when the kill came, but whose answer was not sent.
    assert names.keys() - answered <= unanswered


@pytest.mark.slow
def test_a_sigkilled_node_loses_no_audit_event_and_doubles_none(tmp_path: Path) -> None:
    data_dir = tmp_path / "node"
    answered, unanswered = kill_mid_burst(data_dir, kills=3, seconds=2.0, batch=20)
    node = ServeProcess(data_dir)
    try:
        wait_until(lambda: node.metric("aclstore_audit_buffered_events") == 0, 60, "shipping")
        assert node.metric("aclstore_audit_dropped_events_total") == 0
    finally:
        node.stop()
    log = EmbeddedChangeLog(data_dir / "audit")
    try:
        events = audit_events(log)
    finally:
        log.close()
    assert len(answered) > 1000
    check_the_log_holds_exactly_the_answers(events, answered, unanswered)


# --- the audit log unreachable for a while -----------------------------------------------------


@pytest.mark.kafka
def test_an_unreachable_audit_log_holds_the_bound_counts_drops_and_totals_match(
    restartable_broker: LocalKafka, unique_topic: object, tmp_path: Path
) -> None:
    topic = unique_topic("acls")  # type: ignore[operator]
    bootstrap = restartable_broker.bootstrap_servers
    bound = 300
    node = ServeProcess(
        tmp_path / "node", "--bootstrap-servers", bootstrap, "--topic", topic,
        "--audit-buffer-max-events", str(bound),
    )  # fmt: skip
    audit_log = None
    try:
        before = Burst(node.port, "up", 10)
        before.run(requests=20)
        wait_until(lambda: node.metric("aclstore_audit_buffered_events") == 0, 60, "shipping")
        restartable_broker.stop()
        down = Burst(node.port, "down", 10)
        down.run(requests=50)  # 500 denials, answered from the replica's state
        assert len(down.answered) == 500
        wait_until(lambda: node.metric("aclstore_audit_sink_up") == 0, 60, "the sink to be down")
        assert node.metric("aclstore_audit_buffered_events") == bound
        assert node.metric("aclstore_audit_dropped_events_total") == 500 - bound
        restartable_broker.start()
        wait_until(lambda: node.metric("aclstore_audit_buffered_events") == 0, 120, "recovery")
        after = Burst(node.port, "after", 10)
        after.run(requests=20)
        wait_until(lambda: node.metric("aclstore_audit_buffered_events") == 0, 60, "shipping")
        assert node.metric("aclstore_audit_sink_up") == 1
        sent = node.metric("aclstore_audit_sent_events_total")
    finally:
        node.stop()
        if not restartable_broker.running:
            restartable_broker.start()
    audit_log = KafkaChangeLog(bootstrap, f"{topic}-audit", create_topic=False)
    try:
        by_id = deduplicated(audit_events(audit_log))
    finally:
        audit_log.close()
    names = [e["data"]["resourceName"] for e in by_id.values()]
    kept = down.answered[:bound]  # the spool keeps the oldest up to its bound
    assert sorted(names) == sorted(before.answered + kept + after.answered)
    assert len(by_id) == sent == 200 + bound + 200
