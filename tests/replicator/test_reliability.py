"""Reliability of the replica: SIGKILLed processes, a restarted broker, a corrupt record, and a
differential check of its answers against the pure decision rules.

The SIGKILL loop runs a replica in a child process (:mod:`replica_child`) and kills it
at random moments while it ingests 40,000 events; after every kill the index on disk must be
exactly a fresh replay of the log up to the offset the index says it applied: the same
bindings and the same settings (``super.users``, ``allow.everyone.if.no.acl.found``,
``acl.format.version``), which the log changes now and then.  The loops are the slow tier
(``pytest -m slow``).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from replica_child import start_replica
from replica_support import (
    NAMES,
    OPERATIONS,
    PRINCIPALS,
    RESOURCE_TYPES,
    LogFactory,
    append_events,
    binding,
    config,
    created,
    random_events,
    replay,
    wait_until,
)

from devtools.kafka_process import LocalKafka
from replicator.index import AclIndex
from replicator.replica import Replica, ReplicaSettings
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.authorizer import (
    Action,
    AuthorizerConfig,
    Decision,
    InMemoryAclIndex,
    authorize,
    authorize_by_resource_type,
)
from store.codec import decode_event, event_key, parse_key
from store.codec.keys import ConfigKey
from store.events import (
    LATEST_FORMAT_VERSION,
    SUPPORTED_FORMAT_VERSIONS,
    AclCreated,
    AclDeleted,
    ChangeEvent,
    ConfigAltered,
)
from store.log import ChangeLog, EmbeddedChangeLog, KafkaChangeLog

# --- the SIGKILL loop -----------------------------------------------------------------------


SETTINGS = {
    "super.users": ["User:admin", "User:alice;User:bob", "User:carol", None],
    "allow.everyone.if.no.acl.found": ["true", "false", None],
    "acl.format.version": [*map(str, SUPPORTED_FORMAT_VERSIONS), None],
}


def events_with_settings(rng: random.Random, count: int, names: list[str]) -> list[ChangeEvent]:
    """``count`` events: bindings created and deleted, and every setting changed now and then."""
    changes = 300
    events = random_events(rng, count - changes, names=names)
    for _ in range(changes):
        name = rng.choice(sorted(SETTINGS))
        events.insert(rng.randrange(len(events) + 1), config(name, rng.choice(SETTINGS[name])))
    return events


class LogTimeline:
    """The log read once with the codec alone; ``state_at(offset)`` replays a prefix with dicts."""

    def __init__(self, log: ChangeLog) -> None:
        # (offset, is a setting, binding key or setting name, binding or value; None removes)
        self.changes: list[tuple[int, bool, bytes | str, AclBinding | str | None]] = []
        self.end = log.watermarks()[1] - 1
        position = 0
        while position <= self.end:
            for rec in log.read(position, max_records=20_000, timeout=1.0):
                position = rec.offset + 1
                if rec.value is None:
                    target = parse_key(rec.key)
                    if isinstance(target, ConfigKey):
                        self.changes.append((rec.offset, True, target.name, None))
                    else:
                        self.changes.append((rec.offset, False, rec.key, None))
                    continue
                event = decode_event(rec.value)
                if isinstance(event, AclCreated):
                    self.changes.append((rec.offset, False, rec.key, event.binding))
                elif isinstance(event, AclDeleted):
                    self.changes.append((rec.offset, False, rec.key, None))
                elif isinstance(event, ConfigAltered):
                    self.changes.append((rec.offset, True, event.name, event.value))

    def state_at(self, offset: int) -> tuple[dict[bytes, AclBinding], dict[str, str]]:
        live: dict[bytes, AclBinding] = {}
        settings: dict[str, str] = {}
        for at, is_setting, key, value in self.changes:
            if at > offset:
                break
            table: dict[Any, Any] = settings if is_setting else live
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
        return live, settings


def check_index_equals_replay(index_dir: Path, timeline: LogTimeline, *, deep: bool) -> int:
    """Open the index as a restarted replica would; compare it with the replayed prefix.

    ``deep`` also compares the pattern and principal tables with the pure rules' index.
    """
    index = AclIndex(index_dir, reader_version=LATEST_FORMAT_VERSION)
    try:
        applied = index.position.offset
        expected, settings = timeline.state_at(applied)
        view = index.view()
        found = list(view.bindings())
        assert len(found) == len(expected) == index.counters.bindings, f"at offset {applied}"
        assert set(found) == set(expected.values()), f"at offset {applied}"
        assert dict(index.config) == settings, f"settings at offset {applied}"
        if not deep:
            return applied
        # the secondary tables agree with the primary one
        rng = random.Random(applied)
        model = InMemoryAclIndex(expected.values())
        for _ in range(50):
            rt, principal = rng.choice(RESOURCE_TYPES), rng.choice(PRINCIPALS)
            name = rng.choice(NAMES) + rng.choice(["", "-x", "z"])
            assert Counter(view.matching_acls(rt, name)) == Counter(model.matching_acls(rt, name))
            assert Counter(view.acls_for_principal(rt, principal)) == Counter(
                model.acls_for_principal(rt, principal)
            )
        return applied
    finally:
        index.close()


def sigkill_loop(
    log_spec: str, timeline: LogTimeline, index_dir: Path, *, min_kills: int, batch_records: int
) -> tuple[int, list[int]]:
    """Kill the replica at random moments until it has ingested the whole log (``timeline``,
    the log read once: reading 100,000 records again takes as long as several kills)."""
    rng = random.Random(20240605)
    kills, mid_ingest, offsets = 0, 0, [-1]
    # The kill comes at a random moment of a window that adapts to the ingest speed, so that
    # well over ``min_kills`` kills land before the log end on a fast or a slow machine.
    window, step_goal = 0.05, (timeline.end + 1) / (min_kills * 1.25)
    while offsets[-1] < timeline.end:
        proc = start_replica(log_spec, index_dir, batch_records)
        time.sleep(rng.uniform(0.1 * window, window))
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        assert proc.exitcode == -signal.SIGKILL, f"the replica ended by itself: {proc.exitcode}"
        kills += 1
        applied = check_index_equals_replay(index_dir, timeline, deep=kills % 3 == 1)
        assert applied >= offsets[-1], "the applied offset went backwards"
        if applied < timeline.end:
            mid_ingest += 1
        window *= 0.7 if applied - offsets[-1] > step_goal else 1.15
        offsets.append(applied)
        assert kills < 400, "the replica makes no progress between kills"
    assert mid_ingest >= min_kills, f"only {mid_ingest} kills landed while it was ingesting"
    return kills, offsets


@pytest.mark.slow
def test_sigkilled_replica_process_restarts_to_exactly_the_replayed_log(tmp_path: Path) -> None:
    log = EmbeddedChangeLog(tmp_path / "log")
    try:
        events = events_with_settings(random.Random(100), 40_000, _many_names())
        append_events(log, events, chunk=10_000)
        assert log.watermarks() == (0, 40_000)
        timeline = LogTimeline(log)
        # The comparison has teeth: every setting takes several values along the log.
        for name, values in SETTINGS.items():
            seen = {value for _, is_setting, key, value in timeline.changes if is_setting and key == name}
            assert seen == set(values), name
        _, offsets = sigkill_loop(
            f"embedded:{tmp_path / 'log'}", timeline, tmp_path / "index", min_kills=12,
            batch_records=500,
        )
        assert offsets[-1] == 39_999
        assert len(set(offsets[1:-1])) > 8, f"kills did not land at varied offsets: {offsets}"
        assert timeline.state_at(39_999)[1], "the log ends with no setting at all: a weak check"
    finally:
        log.close()


@pytest.mark.slow
@pytest.mark.kafka
def test_sigkilled_replica_process_on_kafka(
    kafka_bootstrap: str, unique_topic: object, tmp_path: Path
) -> None:
    topic = unique_topic("sigkill")  # type: ignore[operator]
    log = KafkaChangeLog(kafka_bootstrap, topic)
    try:
        append_events(log, events_with_settings(random.Random(101), 20_000, _many_names()))
        _, offsets = sigkill_loop(
            f"kafka:{kafka_bootstrap}/{topic}", LogTimeline(log), tmp_path / "index", min_kills=6,
            batch_records=500,
        )
        assert offsets[-1] == 19_999
    finally:
        log.close()


def test_the_replay_comparison_checks_the_settings_too(tmp_path: Path) -> None:
    """The SIGKILL loop's check fails on an index whose settings differ from the replay."""
    log = EmbeddedChangeLog(tmp_path / "log")
    try:
        events = [
            created(binding()),
            config("super.users", "User:alice"),
            config("allow.everyone.if.no.acl.found", "true"),
        ]
        append_events(log, events)
        with Replica.open(tmp_path / "index", log) as replica:
            assert replica.wait_until_ready(30)
        timeline = LogTimeline(log)
        assert check_index_equals_replay(tmp_path / "index", timeline, deep=True) == 2
        # A setting the index never saw: the same bindings, different settings.
        timeline.changes.insert(0, (0, True, "acl.format.version", "1"))
        with pytest.raises(AssertionError, match="settings at offset 2"):
            check_index_equals_replay(tmp_path / "index", timeline, deep=False)
    finally:
        log.close()


def _many_names() -> list[str]:
    rng = random.Random(5)
    return [*NAMES, *(f"{rng.choice(NAMES)}-{i}" for i in range(300))]


# --- a broker restart while a replica tails it -----------------------------------------------


CATCH_UP_BOUND_S = 2.0
"""After a broker restart, a replica applies a write within this long of the log acknowledging
it (the clients' reconnect backoff is at most 0.5 s, 0.75 s with jitter; the request for the
log end runs on its own thread, so a hung one never holds the tailing back)."""


def test_broker_restart_replica_keeps_answering_then_catches_up(
    restartable_broker: LocalKafka, unique_topic: object, tmp_path: Path
) -> None:
    topic = unique_topic("restart")  # type: ignore[operator]
    bootstrap = restartable_broker.bootstrap_servers
    writer = KafkaChangeLog(bootstrap, topic)
    reader = KafkaChangeLog(bootstrap, topic, create_topic=False)
    read = [Action(AclOperation.READ, ResourceType.TOPIC, "orders")]
    try:
        before = append_events(writer, random_events(random.Random(7), 500))
        append_events(writer, [created(binding(principal="User:alice"))])
        settings = ReplicaSettings(
            retry_backoff_s=0.2, watermark_interval_s=0.2, watermark_timeout_s=0.5
        )
        with Replica.open(tmp_path / "r", reader, settings) as replica:
            assert replica.wait_until_ready(30)
            applied = replica.position.offset
            assert applied > before
            restartable_broker.stop()
            # Down: answers keep coming from the replica's own state, at its offset...
            for _ in range(20):
                answer = replica.authorize("User:alice", "h", read)
                assert answer.value[0].allowed and answer.offset == applied
            # ...and the replica says it cannot see the log end: no lag figure from an old one.
            wait_until(lambda: replica.status().log_error is not None, 30, "the log error flag")
            # Long enough down for every client's reconnect backoff to reach its maximum.
            time.sleep(3)
            status = replica.status()
            assert status.ready and status.offset == applied
            assert status.lag is None and status.log_error is not None
            assert status.log_end_age_ms >= 3000
            restartable_broker.start()
            later = append_events(writer, random_events(random.Random(8), 300))
            answer = replica.authorize(
                "User:alice", "h", read, min_offset=later, timeout=CATCH_UP_BOUND_S
            )
            assert answer.offset >= later
            deadline = time.monotonic() + 5
            while (status := replica.status()).lag != 0:
                assert time.monotonic() < deadline, f"no current lag of 0 within 5 s: {status}"
                time.sleep(0.01)
            assert replica.status().log_error is None
            assert replica.describe(AclBindingFilter()).value == sorted(
                replay(writer).bindings.values()
            )
    finally:
        if not restartable_broker.running:
            restartable_broker.start()
        reader.close()
        writer.close()


# --- a corrupt record, skipped by an operator while the replica is down ----------------------


def test_corrupt_record_stops_the_replica_and_an_offline_skip_is_recorded(tmp_path: Path) -> None:
    log = EmbeddedChangeLog(tmp_path / "log")
    try:
        events = random_events(random.Random(9), 2000)
        append_events(log, events[:1000])
        bad = log.append([(event_key(events[1000]), b'{"version":1,"resourceType":')])[0]
        append_events(log, events[1000:])
        with Replica.open(tmp_path / "r", log) as replica:
            wait_until(lambda: replica.stopped is not None, 30, "the stop")
            status = replica.status()
            assert status.stopped is not None and status.stopped.offset == bad
            assert status.offset == bad - 1 and not status.ready
            assert "cannot be decoded" in status.stopped.reason
        # The operator inspects the record and records the skip with the replica down.
        index = AclIndex(tmp_path / "r", reader_version=LATEST_FORMAT_VERSION)
        try:
            assert index.stopped is not None and index.stopped.offset == bad
            skip = index.record_skip(bad, reason="truncated JSON", actor="User:ops")
        finally:
            index.close()
        with Replica.open(tmp_path / "r", log) as replica:
            assert replica.wait_until_ready(30)
            assert replica.index.skips() == [skip]
            expected = replay_without(log, bad)
            assert replica.describe(AclBindingFilter()).value == sorted(expected.values())
    finally:
        log.close()


def replay_without(log: ChangeLog, skipped: int) -> dict[bytes, AclBinding]:
    live: dict[bytes, AclBinding] = {}
    for rec in log.read(0, max_records=1_000_000, timeout=1.0):
        if rec.offset == skipped or rec.value is None:
            continue
        event = decode_event(rec.value)
        if isinstance(event, AclCreated):
            live[rec.key] = event.binding
        elif isinstance(event, AclDeleted):
            live.pop(rec.key, None)
    return live


# --- differential: the replica's answers equal the pure rules over the replayed live set -----


@pytest.mark.slow  # 3,000 random decisions, each compared with the pure rules
def test_differential_replica_answers_equal_the_pure_rules(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    rng = random.Random(11)
    names = [*NAMES, "", "orders-eu-1", "abcd", "pa", "*x"]
    events = random_events(rng, 5000, names=names)
    events += [
        ConfigAltered(
            name="super.users", value="User:root", actor="User:a", request_id="r", time_ms=1
        )
    ]
    last = append_events(writer, events)
    expected = replay(writer)
    model = InMemoryAclIndex(expected.bindings.values())
    config = AuthorizerConfig.from_properties(expected.settings, ignore_unknown=True)
    with Replica.open(tmp_path / "r", open_log(), ReplicaSettings(cache_size=256)) as replica:
        assert replica.wait_until_ready(60) and replica.position.offset == last
        seen: Counter[tuple[str, str]] = Counter()
        for i in range(3000):
            principal = rng.choice([*PRINCIPALS, "User:root", "User:dave"])
            host = rng.choice(["10.0.0.1", "10.0.0.2"])
            actions = [
                Action(rng.choice(OPERATIONS), rng.choice(RESOURCE_TYPES), rng.choice(names) + tail)
                for tail in rng.sample(["", "-1", "x", "d", "-eu"], 2)
            ]
            got = replica.authorize(principal, host, actions)
            assert got.offset == last
            want = authorize(model, config, principal, host, actions)
            assert [outcome(d) for d in got.value] == [outcome(d) for d in want], (i, actions)
            seen.update(outcome(d) for d in got.value)
            for decision in got.value:
                assert decision.binding is None or decision.binding in model
            op, rt = rng.choice(OPERATIONS), rng.choice(RESOURCE_TYPES)
            by_type = replica.authorize_by_resource_type(principal, host, op, rt).value
            want_by_type = authorize_by_resource_type(model, config, principal, host, op, rt)
            assert outcome(by_type) == outcome(want_by_type), (principal, host, op, rt)
            if i % 10 == 0:
                acl_filter = AclBindingFilter.of(
                    rng.choice([ResourceType.ANY, *RESOURCE_TYPES]),
                    rng.choice([None, *names]),
                    rng.choice(list(PatternType)[1:]),
                    rng.choice([None, *PRINCIPALS]),
                    rng.choice([None, "*"]),
                    rng.choice([AclOperation.ANY, *OPERATIONS]),
                    rng.choice([AclPermissionType.ANY, AclPermissionType.DENY]),
                )
                assert replica.describe(acl_filter).value == model.acls(acl_filter)
    # every kind of answer came up, so the comparison was not trivially one-sided
    assert {rule for _, rule in seen} >= {"SUPER_USER", "MATCHING_ACL", "RESOURCE_HAS_ACLS"}
    assert {result for result, _ in seen} == {"ALLOWED", "DENIED"}, seen


def outcome(decision: Decision) -> tuple[str, str]:
    """A decision's result and rule (two ACLs may decide alike; which one is named may differ)."""
    return decision.result.value, decision.rule.name
