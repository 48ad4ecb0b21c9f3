"""The replica on both log backends: bootstrap, warm restart, fail closed, stops and skips,
too-new events, consistency tokens, settings in log order, and the stored-offset checks.

The reference is ``replica_support.replay`` (the log applied with a dict) or a hand-worked
expectation; the decisions come from the pure rules in ``store.authorizer``.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from replica_support import (
    LogFactory,
    append_events,
    binding,
    config,
    created,
    deleted,
    random_events,
    record,
    replay,
    wait_until,
)

from replicator.encoding import encode_binding, encode_fields
from replicator.errors import (
    ConsistencyTimeoutError,
    ReplicaStoppedError,
    SkipRefusedError,
    StoredOffsetOutOfRangeError,
)
from replicator.replica import Replica, ReplicaSettings
from store.acl import (
    ANY_FILTER,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.authorizer import ALLOWED, DENIED, Action, DecisionRule
from store.codec import codec_named, decode_event, event_key
from store.errors import AuthorizerNotReadyError
from store.events import FORMAT_V2, FORMAT_V3, AclCreated, ConfigAltered
from store.fold import TooNewEvents
from store.fold_fast import FastAclDecoder
from store.log import ChangeLog, EmbeddedChangeLog
from store.log.base import LogRecord, LogUnavailableError

READ_ORDERS = [Action(AclOperation.READ, ResourceType.TOPIC, "orders")]


def open_replica(path: Path, log: ChangeLog, **settings: object) -> Replica:
    replica = Replica.open(path, log, ReplicaSettings(**settings))  # type: ignore[arg-type]
    return replica


def test_bootstrap_builds_exactly_the_replayed_live_set(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    append_events(writer, random_events(random.Random(1), 3000))
    expected = replay(writer)
    with open_replica(tmp_path / "r", open_log(), batch_records=500) as replica:
        assert replica.wait_until_ready(60)
        answer = replica.describe(ANY_FILTER)
        assert answer.value == sorted(expected.bindings.values())
        assert answer.offset == expected.last_offset
        assert answer.timestamp_ms == expected.last_timestamp_ms
        status = replica.status()
        assert (status.bindings, status.lag, status.ready) == (len(expected.bindings), 0, True)
        assert replica.config().value.allow_everyone_if_no_acl_found == (
            expected.settings.get("allow.everyone.if.no.acl.found") == "true"
        )


class CountingLog:
    """A real log, with every ``read`` start offset noted (to prove a restart replays nothing)."""

    def __init__(self, log: ChangeLog) -> None:
        self.log = log
        self.reads: list[int] = []

    def append(self, records, *, timeout=10.0):  # type: ignore[no-untyped-def]
        return self.log.append(records, timeout=timeout)

    def read(self, from_offset, *, max_records=10_000, timeout=1.0):  # type: ignore[no-untyped-def]
        self.reads.append(from_offset)
        return self.log.read(from_offset, max_records=max_records, timeout=timeout)

    def watermarks(self, *, timeout=10.0):  # type: ignore[no-untyped-def]
        return self.log.watermarks(timeout=timeout)

    def close(self) -> None:
        self.log.close()


def test_warm_restart_resumes_from_rocksdb_without_replaying(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    first = append_events(writer, random_events(random.Random(2), 1000))
    with open_replica(tmp_path / "r", open_log()) as replica:
        assert replica.wait_until_ready(60)
        assert replica.position.offset == first
    later = append_events(writer, [created(binding(name="later"))])
    counting = CountingLog(open_log())
    replica = Replica(tmp_path / "r", counting, ReplicaSettings())  # type: ignore[arg-type]
    try:
        # Before tailing: the state, its offset and readiness for the offsets it holds.
        assert replica.position.offset == first
        assert replica.index.counters.bindings == len(replay(writer, until=first).bindings)
        assert not replica.ready  # the log end at start is `later`
        replica.start()
        assert replica.wait_until_ready(30)
        # one read of the anchor record (the last one applied), then tailing from the next
        assert counting.reads[:2] == [first, first + 1]
        assert min(counting.reads) == first
        assert replica.describe(ANY_FILTER).value == sorted(replay(writer).bindings.values())
        assert replica.position.offset == later
    finally:
        replica.close()


def test_fails_closed_until_caught_up_except_for_super_users(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    append_events(writer, [created(binding(principal="User:alice"))])
    replica = Replica(
        tmp_path / "r", open_log(), ReplicaSettings(local_config={"super.users": "User:root"})
    )
    try:
        assert not replica.ready
        with pytest.raises(AuthorizerNotReadyError):
            replica.authorize("User:alice", "10.0.0.1", READ_ORDERS)
        with pytest.raises(AuthorizerNotReadyError):
            replica.describe(ANY_FILTER)
        root = replica.authorize("User:root", "10.0.0.1", READ_ORDERS)
        assert root.value[0].rule is DecisionRule.SUPER_USER
        replica.start()
        assert replica.wait_until_ready(30)
        alice = replica.authorize("User:alice", "10.0.0.1", READ_ORDERS)
        assert alice.value[0].result is ALLOWED
    finally:
        replica.close()


def test_an_empty_log_is_ready_at_once(open_log: LogFactory, tmp_path: Path) -> None:
    with open_replica(tmp_path / "r", open_log()) as replica:
        assert replica.ready
        assert replica.position.offset == -1
        decision = replica.authorize("User:alice", "h", READ_ORDERS).value[0]
        assert (decision.result, decision.rule) == (DENIED, DecisionRule.DEFAULT_DENY)


def test_a_corrupt_record_stops_the_replica_until_an_explicit_skip(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    a, b = binding(name="a"), binding(name="b")
    writer.append([record(created(a))])
    bad = writer.append([(event_key(created(b)), b"\xc3\x01garbage-not-avro")])[0]
    after = writer.append([record(created(b))])[0]
    with open_replica(tmp_path / "r", open_log()) as replica:
        wait_until(lambda: replica.stopped is not None, 30, "the replica to stop")
        stop = replica.stopped
        assert stop is not None and stop.offset == bad
        assert str(bad) in stop.reason
        assert replica.position.offset == bad - 1
        assert not replica.ready  # it stopped before the log end it saw at start
        wait_until(lambda: replica.status().lag == after - (bad - 1), 10, "the lag figure")
        with pytest.raises(ReplicaStoppedError) as stopped:
            replica.authorize("User:alice", "h", READ_ORDERS, min_offset=after, timeout=5)
        assert stopped.value.offset == bad
        with pytest.raises(SkipRefusedError):
            replica.skip(after, reason="wrong one", actor="User:ops")
        skip = replica.skip(bad, reason="damaged; re-created at the next offset", actor="User:ops")
        assert replica.wait_until_ready(30)
        assert replica.describe(ANY_FILTER).value == sorted([a, b])
        assert replica.status().skipped_records == 1
    with Replica(tmp_path / "r", open_log()) as reopened:  # the skip is on record
        assert reopened.index.skips() == [skip]
        assert reopened.stopped is None


def test_an_event_needing_a_newer_format_stops_an_older_replica(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    user_acl = binding(rt=ResourceType.USER, name="bob", op=AclOperation.CREATE_TOKENS)
    offset = append_events(writer, [created(binding()), created(user_acl)])
    with open_replica(tmp_path / "r", open_log(), reader_version=FORMAT_V2) as replica:
        wait_until(lambda: replica.stopped is not None, 30, "the replica to stop")
        stop = replica.stopped
        assert stop is not None and stop.offset == offset
        assert "needs reader format version 3" in stop.reason
        assert replica.position.offset == offset - 1
    # The upgrade: the same index opened by a v3 reader reads the record and goes on.
    with open_replica(tmp_path / "r", open_log(), reader_version=FORMAT_V3) as upgraded:
        assert upgraded.wait_until_ready(30)
        assert upgraded.stopped is None
        assert upgraded.describe(ANY_FILTER).value == sorted([binding(), user_acl])


def test_ignore_policy_treats_newer_bindings_as_absent_and_never_drops_a_delete(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    prefixed_deny = binding(name="pay", pt=PatternType.PREFIXED, perm=AclPermissionType.DENY)
    literal = binding(name="payments")
    events = [
        created(literal),
        created(prefixed_deny),  # needs v2 (KIP-290)
        created(binding(name="other")),
        # a newer writer marks this delete of a v1 binding as needing v2: it must still apply
        deleted(binding(name="other"), min_reader_version=FORMAT_V2),
    ]
    append_events(writer, events)
    with open_replica(
        tmp_path / "r", open_log(), reader_version=1, too_new_events=TooNewEvents.IGNORE
    ) as replica:
        assert replica.wait_until_ready(30)
        assert replica.stopped is None
        assert replica.describe(ANY_FILTER).value == [literal]
        assert replica.status().ignored_events == 2
        # As a broker without KIP-290 would: the prefixed DENY is absent, so the ALLOW wins.
        read = [Action(AclOperation.READ, ResourceType.TOPIC, "payments")]
        assert replica.authorize("User:alice", "h", read).value[0].result is ALLOWED


def test_consistency_tokens_wait_for_the_offset_or_name_the_offset_reached(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    with open_replica(tmp_path / "r", open_log()) as replica:
        assert replica.wait_until_ready(30)
        offset = writer.append([record(created(binding()))])[0]
        answer = replica.authorize("User:alice", "h", READ_ORDERS, min_offset=offset, timeout=10)
        assert answer.offset >= offset
        assert answer.value[0].result is ALLOWED
        assert answer.timestamp_ms == replay(writer).last_timestamp_ms
        started = time.monotonic()
        with pytest.raises(ConsistencyTimeoutError) as timed_out:
            replica.describe(ANY_FILTER, min_offset=offset + 50, timeout=0.3)
        assert time.monotonic() - started < 3
        assert timed_out.value.reached == offset
        assert f"up to offset {offset}" in str(timed_out.value)


class _UnsteadyLog:
    """A real embedded log behind a network that can fail or hang: ``cut`` makes every read and
    watermark request fail at once; while ``released`` is clear, a watermark request waits for
    it, past its own timeout (as a request to a broker that went away can)."""

    def __init__(self, log: EmbeddedChangeLog) -> None:
        self.log = log
        self.cut = False
        self.released = threading.Event()
        self.released.set()

    def _pass(self) -> None:
        if self.cut:
            raise LogUnavailableError("cut off (test)")

    def append(
        self, records: Sequence[tuple[bytes, bytes | None]], *, timeout: float = 10.0
    ) -> list[int]:
        return self.log.append(records, timeout=timeout)

    def read(
        self, from_offset: int, *, max_records: int = 10_000, timeout: float = 1.0
    ) -> list[LogRecord]:
        self._pass()
        return self.log.read(from_offset, max_records=max_records, timeout=timeout)

    def watermarks(self, *, timeout: float = 10.0) -> tuple[int, int]:
        self._pass()
        self.released.wait()
        return self.log.watermarks(timeout=timeout)

    def close(self) -> None:
        self.log.close()


def test_the_lag_is_reported_only_from_a_current_log_end(tmp_path: Path) -> None:
    writer = EmbeddedChangeLog(tmp_path / "log")
    writer.append([record(created(binding(name=f"t{i}"))) for i in range(5)])
    log = _UnsteadyLog(EmbeddedChangeLog(tmp_path / "log"))
    interval, timeout = 0.1, 0.3
    with open_replica(
        tmp_path / "r", log, watermark_interval_s=interval, watermark_timeout_s=timeout,
        retry_backoff_s=0.05,
    ) as replica:  # fmt: skip
        assert replica.wait_until_ready(10)
        status = replica.status()
        assert (status.lag, status.log_end_offset, status.log_error) == (0, 5, None)
        # Cut off: the lag is unknown at once, with the error and the age of the last figure.
        log.cut = True
        wait_until(lambda: replica.status().log_error is not None, 5, "the log error")
        writer.append([record(created(binding(name="u")))])
        time.sleep(4 * (interval + timeout))
        status = replica.status()
        assert status.lag is None and status.log_end_offset == 5
        assert status.log_end_age_ms >= 1000 * 4 * (interval + timeout) - 50
        assert "lag unknown" in status.lag_text() and "cut off" in status.lag_text()
        with pytest.raises(ConsistencyTimeoutError, match="lag unknown"):
            replica.describe(ANY_FILTER, min_offset=5, timeout=0.1)
        # Back: the figure is current again, and so is the replica.
        log.cut = False
        wait_until(lambda: replica.status().lag == 0, 5, "a current lag of 0")
        assert replica.status().log_end_offset == 6
        # A request for the end that hangs: no lag figure once the last one is older than the
        # refresh interval plus its timeout, though no request has failed and reads go on.
        log.released.clear()
        wait_until(lambda: replica.status().log_end_age_ms > 1000 * (interval + timeout), 5,
                   "the figure to age")  # fmt: skip
        status = replica.status()
        assert status.lag is None and status.log_error is None
        later = writer.append([record(created(binding(name="v")))])[0]
        assert replica.describe(ANY_FILTER, min_offset=later, timeout=5).offset == later
        log.released.set()
        wait_until(lambda: replica.status().lag == 0, 5, "a current lag of 0")
    writer.close()


def test_settings_apply_in_log_order(open_log: LogFactory, tmp_path: Path) -> None:
    writer = open_log()
    with open_replica(tmp_path / "r", open_log()) as replica:
        assert replica.wait_until_ready(30)

        def decide(min_offset: int) -> tuple[str, str]:
            answer = replica.authorize("User:boss", "h", READ_ORDERS, min_offset=min_offset)
            return answer.value[0].result.value, answer.value[0].rule.name

        at = writer.append([record(config("allow.everyone.if.no.acl.found", "true"))])[0]
        assert decide(at) == ("ALLOWED", "DEFAULT_ALLOW")
        at = writer.append([record(created(binding(principal="User:x")))])[0]
        assert decide(at) == ("DENIED", "RESOURCE_HAS_ACLS")
        at = writer.append([record(config("super.users", "User:boss;User:other"))])[0]
        assert decide(at) == ("ALLOWED", "SUPER_USER")
        at = writer.append([record(config("super.users", None))])[0]
        assert decide(at) == ("DENIED", "RESOURCE_HAS_ACLS")


def test_an_index_ahead_of_its_log_is_refused_with_the_fix(
    open_log: LogFactory, tmp_path: Path
) -> None:
    writer = open_log()
    append_events(writer, random_events(random.Random(3), 50))
    with open_replica(tmp_path / "r", open_log()) as replica:
        assert replica.wait_until_ready(30)
    other = EmbeddedChangeLog(tmp_path / "recreated")  # a recreated, shorter log
    try:
        other.append([record(created(binding()))])
        with pytest.raises(StoredOffsetOutOfRangeError, match="Rebuild the replica") as refused:
            Replica(tmp_path / "r", other)
        assert refused.value.applied_offset == 49
        Replica.discard_index(tmp_path / "r")
        with Replica.open(tmp_path / "r", other) as rebuilt:
            assert rebuilt.wait_until_ready(30)
            assert rebuilt.describe(ANY_FILTER).value == [binding()]
    finally:
        other.close()


def test_a_replaced_log_that_reaches_past_the_index_is_refused(
    open_log: LogFactory, tmp_path: Path
) -> None:
    """Watermarks cannot see this one: the anchor record at the applied offset differs."""
    writer = open_log()
    append_events(writer, random_events(random.Random(6), 30))
    with open_replica(tmp_path / "r", open_log()) as replica:
        assert replica.wait_until_ready(30)
    replaced = EmbeddedChangeLog(tmp_path / "replaced")
    try:
        time.sleep(0.01)  # other timestamps
        append_events(replaced, random_events(random.Random(7), 60))
        with pytest.raises(StoredOffsetOutOfRangeError, match="the log was replaced"):
            Replica(tmp_path / "r", replaced)
    finally:
        replaced.close()
    # the original log still passes the same check
    with Replica.open(tmp_path / "r", open_log()) as again:
        assert again.ready


def test_records_removed_before_they_were_applied_are_refused(tmp_path: Path) -> None:
    log = EmbeddedChangeLog(tmp_path / "log")
    try:
        append_events(log, random_events(random.Random(4), 20))
        with open_replica(tmp_path / "r", log) as replica:
            assert replica.wait_until_ready(30)
        append_events(log, random_events(random.Random(5), 20))
        # Retention moved the log start past records the replica never applied.
        with sqlite3.connect(log.path) as db:
            db.execute("UPDATE meta SET value = 30 WHERE name = 'log_start_offset'")
        with pytest.raises(StoredOffsetOutOfRangeError, match=r"records 20\.\.29 were removed"):
            Replica(tmp_path / "r", log)
    finally:
        log.close()


def test_an_index_too_old_to_trust_its_tombstones_is_refused(tmp_path: Path) -> None:
    log = EmbeddedChangeLog(tmp_path / "log")
    try:
        append_events(log, [created(binding())])
        with open_replica(tmp_path / "r", log) as replica:
            assert replica.wait_until_ready(30)
        time.sleep(0.05)
        append_events(log, [deleted(binding())])
        with pytest.raises(StoredOffsetOutOfRangeError, match="max_resume_age_ms=10"):
            Replica(tmp_path / "r", log, ReplicaSettings(max_resume_age_ms=10))
        with Replica.open(tmp_path / "r", log, ReplicaSettings(max_resume_age_ms=60_000)) as ok:
            assert ok.wait_until_ready(30)
    finally:
        log.close()


def test_tombstones_remove_bindings_and_settings(open_log: LogFactory, tmp_path: Path) -> None:
    writer = open_log()
    a = binding(name="a")
    append_events(writer, [created(a), config("super.users", "User:root")])
    writer.append([(event_key(created(a)), None), (event_key(config("super.users", None)), None)])
    with open_replica(tmp_path / "r", open_log()) as replica:
        assert replica.wait_until_ready(30)
        assert replica.describe(ANY_FILTER).value == []
        assert replica.config().value.super_users == frozenset()


def test_settings_reject_unknown_keys() -> None:
    from store.errors import InvalidConfigError

    with pytest.raises(InvalidConfigError, match="unknown replica setting"):
        ReplicaSettings.from_properties({"batch_size": 3})
    settings = ReplicaSettings.from_properties({"too_new_events": "ignore", "batch_records": 10})
    assert settings.too_new_events is TooNewEvents.IGNORE


# --- the tailer's fast decoding path equals the codec's full path ----------------------------


def _outcome_of_full_path(value: bytes, reader: int) -> tuple[bool, bytes, bytes, str, str] | str:
    try:
        event = decode_event(value, offset=0, reader_version=reader)
    except Exception as exc:
        return type(exc).__name__
    if isinstance(event, ConfigAltered):
        return "ConfigAltered"
    return (
        isinstance(event, AclCreated), encode_binding(event.binding), event_key(event), event.actor,
        event.request_id,
    )  # fmt: skip


def _values_to_decode() -> list[bytes]:
    rng = random.Random(12)
    values: list[bytes] = []
    fixtures = Path(__file__).resolve().parents[1] / "store" / "fixtures"
    for path in sorted(fixtures.glob("events_v*.jsonl")):
        for line in path.read_text().splitlines():
            item = json.loads(line)
            values += [bytes.fromhex(item["avro"]), item["json"].encode()]
    names = ["orders", "", "é", "*", "a\x00b", "pre"]
    for _ in range(600):
        b = AclBinding.of(
            rng.choice([t for t in ResourceType if t is not ResourceType.ANY]),
            rng.choice(names),
            rng.choice([PatternType.LITERAL, PatternType.PREFIXED, PatternType.UNKNOWN]),
            rng.choice(["User:alice", "User:*", "Group:x"]),
            rng.choice(["*", "10.0.0.1"]),
            rng.choice([o for o in AclOperation if o is not AclOperation.ANY]),
            rng.choice([*list(AclPermissionType)[2:], AclPermissionType.UNKNOWN]),
        )
        event = rng.choice([created, deleted])(b)
        codec = codec_named(rng.choice(["avro", "json"]), writer_version=rng.choice([1, 2, 3]))
        try:
            value = codec.encode(event)
        except Exception:
            continue  # a format the writer cannot write it in
        values.append(value)
        if rng.random() < 0.2:  # damaged copies
            cut = rng.randrange(1, len(value))
            values.append(value[:cut])
            values.append(value[:cut] + bytes([value[cut] ^ 0x5A]) + value[cut + 1 :])
    json_value = codec_named("json").encode(created(binding()))
    record_ = json.loads(json_value)
    for field, odd in [("operation", "read"), ("resourceType", "Topic"), ("actor", 5),
                       ("timeMs", "1"), ("name", None), ("eventType", "ACL_RENAMED")]:
        values.append(json.dumps({**record_, field: odd}).encode())  # fmt: skip
    values.append(codec_named("avro").encode(config("super.users", "User:x")))
    return values


@pytest.mark.parametrize("reader", [1, 2, 3])
def test_fast_decoding_path_equals_the_codec_full_path(reader: int) -> None:
    fast = FastAclDecoder(reader)
    taken = 0
    for value in _values_to_decode():
        full = _outcome_of_full_path(value, reader)
        got = fast.decode(value, 0)
        if got is not None:
            taken += 1
            fields = (got.resource_type, got.pattern_type, got.name, got.principal, got.host,
                      got.operation, got.permission_type)  # fmt: skip
            assert (got.created, encode_fields(*fields), got.key, got.actor, got.request_id) == full, (
                value, full,
            )  # fmt: skip
    assert taken > 50  # the fast path is the common path
