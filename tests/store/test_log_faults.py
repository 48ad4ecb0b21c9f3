"""Faults of the write path against the real broker: bad requests, a broker that is down or
unreachable, retries, corrupt records, and compaction leaving exactly the live set."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from devtools.kafka_process import LocalKafka, free_port
from store.acl import (
    ANY_FILTER,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.admin import AclAdmin
from store.codec import UndecodableRecordError, binding_key, config_key, decode_event
from store.errors import ClusterAuthorizationError, InvalidConfigError
from store.events import AclCreated, AclDeleted, ConfigAltered
from store.log import (
    KafkaChangeLog,
    KafkaLogSettings,
    LogConfigError,
    LogOffsetOutOfRangeError,
    LogRecord,
    LogUnavailableError,
)

pytestmark = pytest.mark.kafka

ADMIN = "User:admin"
FAST_COMPACTION = KafkaLogSettings(
    segment_ms=100, min_cleanable_dirty_ratio=0.01, delete_retention_ms=100, min_compaction_lag_ms=0
)


def topic_acl(name: str, op: AclOperation = AclOperation.READ) -> AclBinding:
    return AclBinding.of(
        ResourceType.TOPIC, name, PatternType.LITERAL, "User:u", "*", op, AclPermissionType.ALLOW
    )


@pytest.fixture
def open_log(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> Iterator[Callable[[], KafkaChangeLog]]:
    """Handles on one fresh fast-compacting topic."""
    topic = unique_topic("faults")
    opened: list[KafkaChangeLog] = []

    def make() -> KafkaChangeLog:
        log = KafkaChangeLog(kafka_bootstrap, topic, FAST_COMPACTION)
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


def create_topic_by_hand(
    bootstrap: str, topic: str, partitions: int, config: dict[str, str]
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config)
    admin.create_topics([new])[topic].result(timeout=30)


def read_all(log: KafkaChangeLog) -> list[LogRecord]:
    high, out, position = log.watermarks()[1], [], 0
    deadline = time.monotonic() + 30
    while position < high and time.monotonic() < deadline:
        batch = log.read(position, timeout=1.0)
        out.extend(batch)
        position = batch[-1].offset + 1 if batch else position
    assert position >= high, f"could not read to {high}"
    return out


def test_invalid_and_unauthorized_requests_write_nothing(
    open_log: Callable[[], KafkaChangeLog],
) -> None:
    log = open_log()
    admin = AclAdmin(log, super_users=[ADMIN])
    bad = AclBinding.of(
        ResourceType.TOPIC,
        "",
        PatternType.LITERAL,
        "User:u",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    result = admin.create_acls([bad], actor=ADMIN)
    assert result.results[0].error is not None
    assert result.results[0].error.error_code.name == "INVALID_REQUEST"
    with pytest.raises(ClusterAuthorizationError):
        admin.create_acls([topic_acl("t")], actor="User:mallory")
    with pytest.raises(ClusterAuthorizationError):
        admin.delete_acls([ANY_FILTER], actor="User:mallory")
    with pytest.raises(InvalidConfigError):
        admin.alter_configs({"allow.everyone.if.no.acl.found": "maybe"}, actor=ADMIN)
    assert log.watermarks() == (0, 0)


def test_an_unreachable_broker_fails_within_the_timeout() -> None:
    nowhere = f"127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(LogUnavailableError, match="could not create the change-log topic"):
        KafkaChangeLog(nowhere, "acls", admin_timeout=2.0)
    assert time.monotonic() - started < 10
    log = KafkaChangeLog(nowhere, "acls", create_topic=False)
    try:
        started = time.monotonic()
        with pytest.raises(LogUnavailableError, match="acknowledged 0 of 1 records"):
            log.append([(b"k", b"v")], timeout=2.0)
        assert time.monotonic() - started < 6
        started = time.monotonic()
        with pytest.raises(LogUnavailableError):
            AclAdmin(log, super_users=[ADMIN]).create_acls(
                [topic_acl("t")], actor=ADMIN, timeout=2.0
            )
        assert time.monotonic() - started < 6
    finally:
        log.close()


def test_a_producer_id_is_acquired_before_the_first_write(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    log = KafkaChangeLog(kafka_bootstrap, unique_topic("pid"))
    try:
        assert log.acquire_producer_id(timeout=30) is True
        assert log.append([(b"k", b"v")]) == [0]
    finally:
        log.close()
    nowhere = KafkaChangeLog(f"127.0.0.1:{free_port()}", "acls", create_topic=False)
    try:
        started = time.monotonic()
        assert nowhere.acquire_producer_id(timeout=1.0) is False  # a warning, not a failure
        assert time.monotonic() - started < 5
    finally:
        nowhere.close()


def test_broker_down_during_writes_never_reports_success_and_retry_does_not_duplicate(
    kafka_broker: LocalKafka | None, open_log: Callable[[], KafkaChangeLog]
) -> None:
    if kafka_broker is None:
        pytest.skip(
            "needs the run's own LocalKafka to stop and start (KAFKA_BOOTSTRAP_SERVERS set)"
        )
    log = open_log()
    admin = AclAdmin(log, super_users=[ADMIN])
    before, during = topic_acl("before"), topic_acl("during")
    assert admin.create_acls([before], actor=ADMIN).results[0].ok
    kafka_broker.stop()
    try:
        # The raw append: no acknowledgement, so no offsets - within the timeout.
        started = time.monotonic()
        with pytest.raises(LogUnavailableError):
            log.append([(b"lost", b"never acknowledged")], timeout=2.0)
        assert time.monotonic() - started < 6
        # The admin calls: a create and a delete both fail, neither reports success.
        for call in (
            lambda: admin.create_acls([during], actor=ADMIN, timeout=2.0),
            lambda: admin.delete_acls([before.to_filter()], actor=ADMIN, timeout=2.0),
        ):
            started = time.monotonic()
            with pytest.raises(LogUnavailableError):
                call()
            assert time.monotonic() - started < 6
    finally:
        kafka_broker.start()
    retried = admin.create_acls([during], actor=ADMIN, timeout=30.0)
    assert retried.results[0].ok
    again = admin.create_acls([during], actor=ADMIN, timeout=30.0)
    assert again.results[0].ok and again.records_written == 0
    records = read_all(open_log())
    assert b"lost" not in {r.key for r in records}  # a failed append does not trail in later
    created = [r.key for r in records if r.value and isinstance(decode_event(r.value), AclCreated)]
    assert created == [binding_key(before), binding_key(during)]
    fresh = AclAdmin(open_log(), super_users=[ADMIN])
    assert set(fresh.describe_acls(ANY_FILTER, actor=ADMIN).bindings) == {before, during}


def test_a_corrupt_record_is_reported_with_its_offset_by_every_reader(
    open_log: Callable[[], KafkaChangeLog],
) -> None:
    log = open_log()
    admin = AclAdmin(log, super_users=[ADMIN])
    admin.create_acls([topic_acl("fine")], actor=ADMIN)
    [bad] = log.append([(binding_key(topic_acl("x")), b"\xc3\x01\x00\x01garbage")])
    readers = [admin, AclAdmin(open_log(), super_users=[ADMIN])]
    for reader in readers:
        with pytest.raises(UndecodableRecordError) as caught:
            reader.describe_acls(ANY_FILTER, actor=ADMIN)
        assert caught.value.offset == bad and f"at offset {bad}" in caught.value.message
        with pytest.raises(UndecodableRecordError):  # and again: it is never skipped silently
            reader.create_acls([topic_acl("after")], actor=ADMIN)
    assert log.watermarks()[1] == bad + 1  # nothing was written past it


def test_after_compaction_a_fresh_reader_rebuilds_exactly_the_live_set(
    open_log: Callable[[], KafkaChangeLog],
) -> None:
    log = open_log()
    admin = AclAdmin(log, super_users=[ADMIN])
    bindings = [topic_acl(f"t{i}") for i in range(30)]
    admin.create_acls(bindings, actor=ADMIN)
    admin.delete_acls([b.to_filter() for b in bindings[:10]], actor=ADMIN)
    admin.create_acls(bindings[:2], actor=ADMIN)  # deleted, then created again: live
    live = set(bindings[:2] + bindings[10:])

    def only_live_records_left() -> bool:
        records = read_all(open_log())
        acl_keys = [r.key for r in records if r.key.startswith(b'["acl"')]
        events = [decode_event(r.value) if r.value else None for r in records]
        leftovers = [e for e in events if e is None or isinstance(e, AclDeleted)]
        return not leftovers and len(acl_keys) == len(set(acl_keys))

    deadline, toggle = time.monotonic() + 90, False
    while not only_live_records_left():
        assert time.monotonic() < deadline, "the log cleaner did not compact within 90 s"
        time.sleep(0.3)
        toggle = not toggle  # new records roll segments, so the cleaner can clean the old ones
        admin.alter_configs({"allow.everyone.if.no.acl.found": str(toggle).lower()}, actor=ADMIN)

    records = read_all(open_log())
    assert {r.key for r in records if r.key.startswith(b'["acl"')} == {binding_key(b) for b in live}
    assert {r.key for r in records if not r.key.startswith(b'["acl"')} == {
        config_key("allow.everyone.if.no.acl.found")
    }
    assert all(
        isinstance(decode_event(r.value or b""), AclCreated | ConfigAltered) for r in records
    )
    fresh = AclAdmin(open_log(), super_users=[ADMIN])
    assert set(fresh.describe_acls(ANY_FILTER, actor=ADMIN).bindings) == live


def test_a_write_the_broker_refuses_is_a_failure_not_a_success(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    """The topic's max.message.bytes is smaller than any event batch: the broker answers the
    produce with an error, so the admin's append (after a successful catch-up) must fail.

    (min.insync.replicas above the replication factor would not do: Kafka 4 caps the
    effective minimum ISR at the replication factor.)
    """
    topic = unique_topic("refusing")
    config = {**FAST_COMPACTION.topic_config(), "max.message.bytes": "100"}
    create_topic_by_hand(kafka_bootstrap, topic, 1, config)
    log = KafkaChangeLog(kafka_bootstrap, topic)  # exists, single partition, compacted: accepted
    try:
        admin = AclAdmin(log, super_users=[ADMIN])
        assert admin.sync() == -1
        started = time.monotonic()
        with pytest.raises(LogUnavailableError, match="acknowledged 0 of 1"):
            admin.create_acls([topic_acl("t")], actor=ADMIN, timeout=5.0)
        assert time.monotonic() - started < 10
        assert log.watermarks() == (0, 0)
        assert admin.describe_acls(ANY_FILTER, actor=ADMIN).bindings == ()
    finally:
        log.close()


def test_an_existing_topic_that_is_not_a_change_log_is_refused(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    topic = unique_topic("notalog")
    create_topic_by_hand(kafka_bootstrap, topic, 3, {"cleanup.policy": "delete"})
    with pytest.raises(
        LogConfigError, match=r"needs exactly 1 partition and cleanup\.policy=compact"
    ):
        KafkaChangeLog(kafka_bootstrap, topic)


def test_a_topic_recreated_under_a_tailing_reader_is_loud_not_a_silent_jump(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    topic = unique_topic("recreated")
    writer = KafkaChangeLog(kafka_bootstrap, topic, FAST_COMPACTION)
    reader = KafkaChangeLog(kafka_bootstrap, topic, FAST_COMPACTION)
    try:
        writer.append([(f"k{i}".encode(), b"v") for i in range(6)])
        assert [r.offset for r in read_all(reader)] == list(range(6))
        writer.close()
        admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
        admin.delete_topics([topic])[topic].result(timeout=30)
        deadline = time.monotonic() + 30
        while topic in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
            time.sleep(0.2)
        writer = KafkaChangeLog(kafka_bootstrap, topic, FAST_COMPACTION)  # recreates the topic
        writer.append([(b"new", b"v")])
        # The reader is positioned at offset 6, which the new topic does not have: it must say
        # so, not deliver offset 0 of the new topic or silently wait past it.
        with pytest.raises(LogOffsetOutOfRangeError, match="rebuild"):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                reader.read(6, timeout=1.0)
    finally:
        writer.close()
        reader.close()
