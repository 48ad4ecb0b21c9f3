"""Audit events survive a killed node and an unreachable audit log (real ``aclstore serve``).

The node runs as a child process (``python -m cli serve``) on a data directory that
outlives it.  With no ACLs and ``allow.everyone.if.no.acl.found`` unset, every decision is a
denial (DEFAULT_DENY), and every denial is audited: the client's own count of the decisions it
got an answer for is the independent expectation.  Each action names a resource no other
action names, so an event in the audit log says which answered decision it records.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from audit_support import Burst, ServeProcess
from sidecar_support import wait_until

from devtools.kafka_process import LocalKafka
from store.log import ChangeLog, EmbeddedChangeLog, KafkaChangeLog


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
        # Killed mid-burst, the node's decision workers answer the requests in hand and no
        # other: none meets the index or spool they close (a 503 naming a full disk, before).
        assert burst.unexpected == [], f"round {round_}"
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
    # Two decision workers share the node's bound (300 each); the burst's one connection
    # stays with one of them, so that worker's share is what the spool keeps.
    bound = 600
    node = ServeProcess(
        tmp_path / "node", "--bootstrap-servers", bootstrap, "--topic", topic,
        "--audit-buffer-max-events", str(bound), "--decision-workers", "2",
    )  # fmt: skip
    share = bound // 2
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
        assert node.metric("aclstore_audit_buffered_events") == share
        assert node.metric("aclstore_audit_buffer_capacity_events") == bound
        assert node.metric("aclstore_audit_dropped_events_total") == 500 - share
        # The replica's figures say that the log end is not current: no lag, its age, the error;
        # /readyz stays 200 (the replica answers from its state) and says the same.
        wait_until(lambda: node.metric("aclstore_replica_log_error") == 1, 30, "the log error")
        figures = node.metrics()
        assert "aclstore_replica_lag" not in figures
        assert figures["aclstore_replica_log_end_age_seconds"] > 0
        code, body = node.get("/readyz")
        ready = json.loads(body)
        assert code == 200 and ready["lag"] is None and ready["logError"]
        restartable_broker.start()
        wait_until(lambda: node.metric("aclstore_audit_buffered_events") == 0, 120, "recovery")
        after = Burst(node.port, "after", 10)
        after.run(requests=20)
        wait_until(lambda: node.metric("aclstore_audit_buffered_events") == 0, 60, "shipping")
        assert node.metric("aclstore_audit_sink_up") == 1
        wait_until(lambda: node.metrics().get("aclstore_replica_lag") == 0, 10, "a current lag")
        assert node.metric("aclstore_replica_log_error") == 0
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
    kept = down.answered[:share]  # the spool keeps the oldest up to its bound
    assert sorted(names) == sorted(before.answered + kept + after.answered)
    assert len(by_id) == sent == 200 + share + 200
