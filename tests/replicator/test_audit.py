"""Audit emission: denials always, allows sampled, CloudEvents JSON, a bounded durable buffer.

The sink is a real change log: the embedded one, or a Kafka topic on the real broker.  "Sink
down" is a real Kafka client pointed at a port where nothing listens.
"""

from __future__ import annotations

import json
import re
import time
import zlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from schema_support import violations
from sidecar_support import Raw, action_json, admin_client, binding, create_acls, start_node, wait_until, wire

from replicator.contract.audit_event import EVENT_TYPE, audit_event_schema
from replicator.contract.requests import AuthorizeAction
from replicator.server.audit import AuditEmitter, AuditSettings
from replicator.server.audit import emitter as emitter_module
from replicator.server.audit import lines as lines_module
from replicator.server.metrics import SidecarMetrics
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule
from store.log import EmbeddedChangeLog, KafkaChangeLog, KafkaLogSettings

READ = AclOperation.READ
TOPIC = ResourceType.TOPIC
DENIED = Decision(AuthorizationResult.DENIED, DecisionRule.DEFAULT_DENY)
ALLOWED = Decision(AuthorizationResult.ALLOWED, DecisionRule.SUPER_USER)


def events_in(log: EmbeddedChangeLog | KafkaChangeLog) -> list[dict]:  # type: ignore[type-arg]
    records = []
    while True:
        batch = log.read(len(records) and records[-1].offset + 1, timeout=2.0)
        if not batch:
            return [json.loads(r.value) for r in records if r.value is not None]
        records.extend(batch)


@pytest.mark.slow  # a live node and its sender's shipping rounds
def test_denials_are_always_emitted_and_allows_sampled(tmp_path: Path) -> None:
    actions = [Action(READ, TOPIC, f"t{i}") for i in range(5)]
    decisions = [DENIED, ALLOWED, DENIED, ALLOWED, ALLOWED]
    for rate, expected in ((0.0, ["t0", "t2"]), (1.0, ["t0", "t1", "t2", "t3", "t4"])):
        sink = EmbeddedChangeLog(tmp_path / f"sink-{rate}")
        emitter = AuditEmitter(sink, tmp_path / f"spool-{rate}", AuditSettings(allow_sample_rate=rate))
        emitter.record("User:bob", "10.0.0.1", actions, decisions, 41)
        assert emitter.flush(10)
        emitter.close()
        assert [e["data"]["resourceName"] for e in events_in(sink)] == expected
        sink.close()


@pytest.mark.unit
def test_a_sampled_share_of_allows(tmp_path: Path) -> None:
    sink = EmbeddedChangeLog(tmp_path / "sink")
    emitter = AuditEmitter(sink, tmp_path / "spool", AuditSettings(allow_sample_rate=0.25))
    emitter.record("User:a", "h", [Action(READ, TOPIC, "t")] * 4000, [ALLOWED] * 4000, 0)
    assert emitter.flush(20)
    sent = emitter.figures().sent
    emitter.close()
    assert 800 <= sent <= 1200  # binomial(4000, 0.25): mean 1000, sd 27


def _allowed_by(grant: AclBinding) -> Decision:
    return Decision(AuthorizationResult.ALLOWED, DecisionRule.MATCHING_ACL, grant)


class _SkewedClock:
    """The emitter module's ``time``, with a monotonic clock a test moves forward at will."""

    def __init__(self) -> None:
        self.skew = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.skew

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


@pytest.mark.unit
def test_each_bindings_first_allow_of_a_usage_period_is_emitted_whatever_the_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An hour's period and a clock moved past it: however slow the machine, the three first
    # requests fall in one period and the fourth in the next.
    clock = _SkewedClock()
    monkeypatch.setattr(emitter_module, "time", clock)
    b1 = binding(TOPIC, "a", "User:bob", READ)
    b2 = binding(TOPIC, "b", "User:bob", READ)
    actions = [Action(READ, TOPIC, n) for n in ("a", "a", "b", "c", "a")]
    decisions = [_allowed_by(b1), _allowed_by(b1), _allowed_by(b2), ALLOWED, _allowed_by(b1)]
    sink = EmbeddedChangeLog(tmp_path / "sink")
    emitter = AuditEmitter(
        sink, tmp_path / "spool", AuditSettings(allow_sample_rate=0.0, usage_period_s=3600)
    )
    for _ in range(3):  # three requests in one period: each binding once, the rule never
        emitter.record("User:bob", "h", actions, decisions, 7)
    assert emitter.flush(10)
    first = [e["data"]["resourceName"] for e in events_in(sink)]
    assert first == ["a", "b"]
    clock.skew += 3600  # the next period: used again, emitted again
    emitter.record("User:bob", "h", actions[2:], decisions[2:], 8)
    assert emitter.flush(10)
    emitter.close()
    assert [e["data"]["resourceName"] for e in events_in(sink)] == ["a", "b", "b", "a"]
    sink.close()

    off = EmbeddedChangeLog(tmp_path / "off")  # period 0: the sample alone (none at rate 0)
    emitter = AuditEmitter(
        off, tmp_path / "spool-off", AuditSettings(allow_sample_rate=0.0, usage_period_s=0)
    )
    emitter.record("User:bob", "h", actions, decisions, 7)
    assert emitter.flush(10)
    emitter.close()
    assert events_in(off) == []
    off.close()


@pytest.mark.unit
def test_emitters_sharing_binding_objects_never_miss_a_first_use(tmp_path: Path) -> None:
    # The period a binding's use was written in is kept on the binding object.  Two emitters
    # (two nodes in one process) handed the same objects overwrite each other's marks: that
    # may cost an extra event, never a missed one.  Alone, an emitter writes exactly the
    # hand-worked events: denials always, a binding's first allow of the period once, the
    # other allows (rate 0) never.
    grants = [binding(TOPIC, f"g{i}", "User:bob", READ) for i in range(3)]
    deny = binding(TOPIC, "x", "User:bob", READ, permission=AclPermissionType.DENY)
    denied_by = Decision(AuthorizationResult.DENIED, DecisionRule.MATCHING_ACL, deny)
    requests = [
        (["g0", "g1", "x"], [_allowed_by(grants[0]), _allowed_by(grants[1]), denied_by]),
        (["g1", "g2", "x", "g0"], [_allowed_by(grants[1]), _allowed_by(grants[2]), denied_by,
                                   _allowed_by(grants[0])]),
        (["g2", "g2"], [_allowed_by(grants[2]), _allowed_by(grants[2])]),
    ]  # fmt: skip
    alone = [["g0", "g1", "x"], ["g2", "x"], []]

    def run(names: list[str]) -> list[list[list[str]]]:
        sinks = {n: EmbeddedChangeLog(tmp_path / f"sink-{n}") for n in names}
        settings = AuditSettings(allow_sample_rate=0.0)
        emitters = {n: AuditEmitter(sinks[n], tmp_path / f"spool-{n}", settings) for n in names}
        for offset, (resources, decisions) in enumerate(requests):  # the emitters take turns
            for emitter in emitters.values():
                actions = [Action(READ, TOPIC, r) for r in resources]
                emitter.record("User:bob", "h", actions, decisions, offset)
        written = []
        for n in names:
            assert emitters[n].flush(10)
            emitters[n].close()
            events = events_in(sinks[n])
            sinks[n].close()
            written.append([
                [e["data"]["resourceName"] for e in events if e["data"]["offset"] == offset]
                for offset in range(len(requests))
            ])  # fmt: skip
        return written

    assert run(["alone"]) == [alone]
    for per_request in run(["a", "b"]):
        for got, wanted in zip(per_request, alone, strict=True):
            assert set(wanted) <= set(got) and got.count("x") == wanted.count("x")
            assert set(got) - set(wanted) <= {"g0", "g1", "g2"}  # extra: allows of the grants


@pytest.mark.unit
def test_decisions_the_broker_marks_quiet_are_not_written_nor_a_first_use(tmp_path: Path) -> None:
    # KIP-504: an action whose logIfAllowed (logIfDenied) is false leaves its ALLOWED
    # (DENIED) decision out of the trail.  A quiet use of a grant is no first use either: the
    # grant's first logged use, later in the request or in a later one, is the one written.
    # Hand-worked, at sample rates 0 (first uses and denials only) and 1 (every logged one).
    grant = binding(TOPIC, "g", "User:bob", READ)
    quiet_allow = AuthorizeAction(READ, TOPIC, "g", log_if_allowed=False)
    quiet_deny = AuthorizeAction(READ, TOPIC, "n", log_if_denied=False)
    logged = AuthorizeAction(READ, TOPIC, "g")
    allow_only_quiet = AuthorizeAction(READ, TOPIC, "d", log_if_allowed=False)  # denied: logged
    requests = [
        [(quiet_allow, _allowed_by(grant)), (quiet_deny, DENIED), (allow_only_quiet, DENIED)],
        [(quiet_allow, _allowed_by(grant)), (logged, _allowed_by(grant)), (quiet_deny, DENIED)],
        [(logged, _allowed_by(grant)), (quiet_allow, _allowed_by(grant))],
    ]
    wanted = {
        0.0: [["d"], ["g"], []],
        1.0: [["d"], ["g"], ["g"]],
    }
    for rate, expected in wanted.items():
        sink = EmbeddedChangeLog(tmp_path / f"sink-{rate}")
        emitter = AuditEmitter(sink, tmp_path / f"spool-{rate}", AuditSettings(allow_sample_rate=rate))
        for offset, request in enumerate(requests):
            actions = [a for a, _ in request]
            emitter.record("User:bob", "h", actions, [d for _, d in request], offset, flags=actions)
        with pytest.raises(ValueError, match="1 actions' flags but 2 decisions"):
            emitter.record("User:bob", "h", actions, [d for _, d in request], 9, flags=actions[:1])
        assert emitter.flush(10)
        emitter.close()
        events = events_in(sink)
        sink.close()
        got = [[e["data"]["resourceName"] for e in events if e["data"]["offset"] == o] for o in range(3)]
        assert got == expected, rate


@pytest.mark.slow  # a live node and its sender's shipping rounds
def test_a_node_with_no_allow_sample_still_names_each_grant_in_use(tmp_path: Path) -> None:
    node = start_node(tmp_path / "n", audit=AuditSettings(allow_sample_rate=0.0))
    raw = Raw(node)
    used = binding(TOPIC, "orders", "User:alice", READ)
    idle = binding(TOPIC, "payments", "User:alice", READ)
    try:
        with admin_client(node) as admin:
            offset = create_acls(admin, [used, idle])
        for _ in range(20):
            status, answer = raw.post("/v1/authorize", {
                "principal": "User:alice", "host": "192.0.2.7", "minOffset": offset,
                "actions": [action_json(READ, TOPIC, "orders")],
            })  # fmt: skip
            assert (status, answer["results"]) == (200, ["ALLOWED"])
        assert node.audit is not None and node.audit.flush(10)
        events = events_in(EmbeddedChangeLog(tmp_path / "n" / "audit"))
    finally:
        raw.close()
        node.stop()
    named = [e["data"]["reason"].get("binding") for e in events]
    assert named and all(b == wire(used) for b in named), named
    assert len(events) <= 2  # first use per period, not per decision (a replica reload: one more)


@pytest.mark.slow  # a live node and its sender's shipping rounds
def test_a_node_emits_cloudevents_with_the_replica_offset(tmp_path: Path) -> None:
    node = start_node(tmp_path / "n", audit=AuditSettings(allow_sample_rate=0.0, source="aclstore://test"))
    raw = Raw(node)
    try:
        with admin_client(node) as admin:
            deny = binding(
                TOPIC,
                "secret",
                "User:eve",
                READ,
                pattern=PatternType.PREFIXED,
                permission=AclPermissionType.DENY,
            )
            offset = create_acls(admin, [deny])
        status, answer = raw.post(
            "/v1/authorize",
            {
                "principal": "User:eve",
                "host": "192.0.2.7",
                "minOffset": offset,
                "actions": [action_json(READ, TOPIC, "secret-plans"), action_json(READ, TOPIC, "x")],
            },
        )
        assert (status, answer["results"]) == (200, ["DENIED", "DENIED"])
        assert node.audit is not None and node.audit.flush(10)
        events = events_in(EmbeddedChangeLog(tmp_path / "n" / "audit"))
    finally:
        raw.close()
        node.stop()
    assert len(events) == 2
    schema = audit_event_schema()  # schemas/audit_event_v1.json
    assert [violations(event, schema) for event in events] == [[], []]
    first = events[0]
    assert {k: first[k] for k in ("specversion", "type", "source", "datacontenttype", "subject")} == {
        "specversion": "1.0",
        "type": EVENT_TYPE,
        "source": "aclstore://test",
        "datacontenttype": "application/json",
        "subject": "User:eve",
    }
    assert re.fullmatch(r"[0-9a-f]{32}", first["id"]) and first["id"] != events[1]["id"]
    assert datetime.fromisoformat(first["time"]).tzinfo is not None
    assert first["data"] == {
        "principal": "User:eve",
        "host": "192.0.2.7",
        "operation": "READ",
        "resourceType": "TOPIC",
        "resourceName": "secret-plans",
        "patternType": "LITERAL",
        "result": "DENIED",
        "offset": offset,
        "reason": {
            "rule": "MATCHING_ACL",
            "description": first["data"]["reason"]["description"],
            "binding": wire(deny),
        },
    }
    assert (
        events[1]["data"]["reason"]["rule"] == "RESOURCE_HAS_ACLS"
        or events[1]["data"]["reason"]["rule"] == "DEFAULT_DENY"
    )


@pytest.mark.kafka
def test_a_down_sink_buffers_durably_up_to_the_bound_counts_drops_then_delivers(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    topic = unique_topic("audit")
    buffer = tmp_path / "audit-spool"
    settings = AuditSettings(buffer_max_events=5, sink_timeout_s=0.5, retry_backoff_s=0.2)
    fast = KafkaLogSettings(message_timeout_ms=500)
    down = KafkaChangeLog("127.0.0.1:9", topic, fast, create_topic=False)  # nothing listens on 9
    emitter = AuditEmitter(down, buffer, settings)
    metrics = SidecarMetrics()
    metrics.bind_audit(emitter.figures)
    emitter.record("User:a", "h", [Action(READ, TOPIC, f"t{i}") for i in range(8)], [DENIED] * 8, 3)
    # The events are on disk at once; the sender finds the sink down on its first try.
    wait_until(lambda: not emitter.figures().sink_up, 30, "the sender to find the sink down")
    figures = emitter.figures()
    assert (figures.buffered, figures.dropped, figures.sent, figures.sink_up) == (5, 3, 0, False)
    page = metrics.render().decode()
    assert "aclstore_audit_dropped_events_total 3.0" in page
    assert "aclstore_audit_buffered_events 5.0" in page
    emitter.close(timeout=5)
    down.close()

    # Restart with the sink up: the buffered events go first, then new ones, nothing lost.
    up = KafkaChangeLog(kafka_bootstrap, topic)
    emitter = AuditEmitter(up, buffer, AuditSettings(buffer_max_events=5, sink_timeout_s=15))
    assert (emitter.figures().buffered, emitter.figures().dropped) == (5, 3)  # kept across restart
    assert emitter.flush(30)  # the spool is at its bound until the kept events are shipped
    emitter.record("User:b", "h", [Action(READ, TOPIC, "late")], [DENIED], 4)
    assert emitter.flush(30)
    figures = emitter.figures()
    assert (figures.buffered, figures.sent, figures.dropped, figures.sink_up) == (0, 6, 3, True)
    emitter.close()
    events = events_in(up)
    up.close()
    assert len({e["id"] for e in events}) == 6
    assert [e["data"]["resourceName"] for e in events] == [
        "t0",
        "t1",
        "t2",
        "t3",
        "t4",
        "late",
    ]  # "x" has no ACL applying to it (the DENY is PREFIXED "secret"): the no-ACL default.
    assert events[1]["data"]["reason"]["rule"] == "DEFAULT_DENY"


@pytest.mark.slow  # a live node and its sender's shipping rounds
def test_events_left_in_an_earlier_versions_sqlite_buffer_are_shipped_first(tmp_path: Path) -> None:
    """The SQLite buffer of earlier versions, as they wrote it: its events move into the spool."""
    import sqlite3

    from replicator.contract.audit_event import audit_event, encode_audit_event
    from replicator.server.audit import LEGACY_BUFFER_FILE, SPOOL_DIR

    deny = binding(TOPIC, "secret", "User:eve", READ, permission=AclPermissionType.DENY)
    old = [
        audit_event(
            event_id=f"old{i}",
            source="aclstore://old",
            time_ns=1_700_000_000_000_001_000 + i,
            principal="User:eve",
            host="10.0.0.9",
            action=Action(READ, TOPIC, f"secret-{i}"),
            decision=Decision(AuthorizationResult.DENIED, DecisionRule.MATCHING_ACL, deny),
            offset=7,
        )
        for i in range(3)
    ]
    db = sqlite3.connect(tmp_path / LEGACY_BUFFER_FILE)
    db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, key BLOB, value BLOB)")
    db.executemany(
        "INSERT INTO events (key, value) VALUES (?, ?)",
        [(e["id"].encode(), encode_audit_event(e)) for e in old],
    )
    db.commit()
    db.close()
    sink = EmbeddedChangeLog(tmp_path / "sink")
    emitter = AuditEmitter(sink, tmp_path / SPOOL_DIR, AuditSettings(source="aclstore://new"))
    emitter.record("User:bob", "h", [Action(READ, TOPIC, "new")], [DENIED], 8)
    assert emitter.flush(10)
    emitter.close()
    events = events_in(sink)
    sink.close()
    assert not (tmp_path / LEGACY_BUFFER_FILE).exists()
    assert [e["data"]["resourceName"] for e in events] == ["secret-0", "secret-1", "secret-2", "new"]
    # The same events but for the id and source, which the spool gives: the data is kept whole.
    assert [e["data"] for e in events[:3]] == [e["data"] for e in old]
    assert [e["time"] for e in events[:3]] == [e["time"] for e in old]


def test_spool_lines_an_earlier_version_wrote_ship_as_the_same_events(tmp_path: Path) -> None:
    """Version 1 of the spool line (compact JSON of the decisions as names) and version 2 (each
    decision's event fields as JSON, tab-separated after a CRC), as earlier releases wrote
    them: read as they are, each event the bytes the event dict encodes to."""
    from replicator.contract.audit_event import audit_event, decision_names, encode_audit_event
    from replicator.server.audit.spool import ID_FILE, segment_name

    quoted = binding(TOPIC, 'caf\u00e9 "q"\t', "User:\u00e9ve", READ, pattern=PatternType.PREFIXED)
    by_acl = Decision(AuthorizationResult.ALLOWED, DecisionRule.MATCHING_ACL, quoted)
    cases = [(Action(READ, TOPIC, 'caf\u00e9 "q"\tx'), by_acl), (Action(READ, TOPIC, "other"), DENIED)]
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    (spool_dir / ID_FILE).write_text("00112233445566ff\n")
    lines = [
        (0, [1_700_000_000_000_001_000, "User:\u00e9ve", "10.0.0.9", 7, [decision_names(*cases[0])]]),
        (1, [1_700_000_000_000_002_000, 'User:"x"', "::1", 8, [decision_names(*c) for c in cases]]),
    ]  # fmt: skip
    v2 = (3, [1_700_000_000_000_003_000, "User:\u00e9ve", "10.0.0.9", 9, []])
    fragments = []
    for action, decision in cases:
        data = audit_event(
            event_id="x", source="s", time_ns=0, principal="p", host="h", action=action,
            decision=decision, offset=0,
        )["data"]  # fmt: skip
        fields = {k: v for k, v in data.items() if k not in ("principal", "host", "offset")}
        fragments.append(json.dumps(fields, separators=(",", ":"))[1:-1])
    time_ns, principal, host, offset, _ = v2[1]
    rest = "\t".join([str(time_ns), json.dumps(principal), json.dumps(host), str(offset), *fragments])
    v2_body = b"v2\t%08x\t%s" % (zlib.crc32(rest.encode()), rest.encode())
    (spool_dir / segment_name(0)).write_bytes(b"".join(
        [b"%d %d %s\n" % (seq, len(body[4]), json.dumps(body, separators=(",", ":")).encode())
         for seq, body in lines]
        + [b"3 2 %s\n" % v2_body]
    ))  # fmt: skip
    sink = EmbeddedChangeLog(tmp_path / "sink")
    emitter = AuditEmitter(sink, spool_dir, AuditSettings(source="aclstore://n"))
    assert emitter.flush(10)
    emitter.close()
    shipped = [(r.key, r.value) for r in sink.read(0, timeout=1.0)]
    sink.close()
    expected = []
    for seq, (time_ns, principal, host, offset, _), pairs in (
        (0, lines[0][1], cases[:1]), (1, lines[1][1], cases), (3, v2[1], cases),
    ):  # fmt: skip
        for i, (action, decision) in enumerate(pairs):
            event_id = f"00112233445566ff{seq + i:016x}"
            event = audit_event(
                event_id=event_id, source="aclstore://n", time_ns=time_ns, principal=principal,
                host=host, action=action, decision=decision, offset=offset,
            )  # fmt: skip
            expected.append((event_id.encode(), encode_audit_event(event)))
    assert shipped == expected


@pytest.mark.unit
def test_a_spool_line_changed_on_disk_is_skipped_not_shipped(tmp_path: Path) -> None:
    """The sender does not parse a line's JSON, so its CRC is what keeps a changed line (same
    number of decisions, one name's byte altered) out of the audit log: the line is counted
    as corrupt and skipped, the intact line beside it ships."""
    from replicator.contract.audit_event import DecisionItems
    from replicator.server.audit.spool import ID_FILE, segment_name

    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    (spool_dir / ID_FILE).write_text("00112233445566ff\n")
    fragment = DecisionItems()
    bodies = [
        lines_module.line_body(
            lines_module.line_head(1_700_000_000_000_000_000 + seq, "User:bob", "10.0.0.1", 5),
            [fragment(Action(READ, TOPIC, f"orders{seq}"), DENIED)],
        )
        for seq in range(2)
    ]
    damaged = bodies[0].replace(b"orders0", b"orderz0")
    assert damaged != bodies[0]
    (spool_dir / segment_name(0)).write_bytes(b"0 1 %s\n1 1 %s\n" % (damaged, bodies[1]))
    sink = EmbeddedChangeLog(tmp_path / "sink")
    emitter = AuditEmitter(sink, spool_dir, AuditSettings(source="aclstore://n"))
    assert emitter.flush(10)
    corrupt = emitter.spool.corrupt_lines
    emitter.close()
    shipped = events_in(sink)
    sink.close()
    assert corrupt == 1
    assert [e["data"]["resourceName"] for e in shipped] == ["orders1"]


@pytest.mark.unit
def test_results_given_by_the_caller_audit_the_same_decisions_and_must_match(tmp_path: Path) -> None:
    # The decision endpoints hand the emitter the results they listed to count them: the
    # decisions written are the same as when the emitter lists them itself.
    b1 = binding(TOPIC, "a", "User:bob", READ)
    actions = [Action(READ, TOPIC, n) for n in ("a", "b", "c", "a", "d")]
    decisions = [_allowed_by(b1), DENIED, ALLOWED, _allowed_by(b1), DENIED]
    written = []
    for given in (False, True):
        sink = EmbeddedChangeLog(tmp_path / f"sink-{given}")
        emitter = AuditEmitter(sink, tmp_path / f"spool-{given}", AuditSettings(allow_sample_rate=0.0))
        results = [d.result for d in decisions] if given else None
        emitter.record("User:bob", "h", actions, decisions, 3, results=results)
        with pytest.raises(ValueError, match="4 results but 5 decisions"):
            emitter.record("User:bob", "h", actions, decisions, 3, results=[DENIED.result] * 4)
        assert emitter.flush(10)
        emitter.close()
        written.append([(e["data"]["resourceName"], e["data"]["result"]) for e in events_in(sink)])
        sink.close()
    # b1's first use of the period, and both denials; the unsampled allow of "c" is not.
    assert written[0] == written[1] == [("a", "ALLOWED"), ("b", "DENIED"), ("d", "DENIED")]
