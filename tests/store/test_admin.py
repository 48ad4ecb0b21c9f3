"""The admin API over the embedded log: Kafka's CreateAcls/DeleteAcls semantics (checked against
the conformance vectors), caller authorization, configs as events, format gating, replay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.conformance.acl_kinds import binding_of, fields_of, filter_of
from store.acl import (
    ANY_FILTER,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.admin import AclAdmin
from store.codec import AvroEventCodec, UndecodableRecordError, binding_key, decode_event
from store.codec.avro_codec import schema_fingerprint
from store.downgrade import UnsafeFormatDowngradeError
from store.errors import ClusterAuthorizationError, InvalidConfigError, InvalidRequestError
from store.events import AclCreated, AclDeleted, ConfigAltered
from store.log import EmbeddedChangeLog
from store.log.base import ChangeLog
from store.principal import SuperUsersConfigError
from store.settings import (
    AlterConfigsRequest,
    PolicyViolationError,
    UnsupportedFormatVersionError,
)
from store.validation import ValidationLayer
from tests.store.vectors import ACL_VECTORS, load

pytestmark = pytest.mark.unit

ADMIN = "User:admin"
RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType


def acl(
    rt: ResourceType,
    name: str,
    pt: PatternType,
    principal: str,
    op: AclOperation,
    perm: AclPermissionType = PERM.ALLOW,
    host: str = "*",
) -> AclBinding:
    return AclBinding.of(rt, name, pt, principal, host, op, perm)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[EmbeddedChangeLog]:
    with EmbeddedChangeLog(tmp_path / "data") as change_log:
        yield change_log


@pytest.fixture
def admin(log: EmbeddedChangeLog) -> AclAdmin:
    return AclAdmin(log, super_users=[ADMIN])


def events_after(log: ChangeLog, offset: int) -> list[Any]:
    """Decoded values (None for tombstones) of every record after ``offset``."""
    high = log.watermarks()[1]
    records = log.read(offset + 1, timeout=0.1) if offset + 1 < high else []
    return [None if r.value is None else decode_event(r.value, offset=r.offset) for r in records]


# --- Kafka's semantics, from the conformance vectors ----------------------------------------


def vectors(*kinds: str) -> list[dict[str, Any]]:
    return load(ACL_VECTORS, *kinds)


def expected_item(expected: Any, error: Any) -> None:
    if isinstance(expected, dict) and "error" in expected:
        assert error is not None, f"expected {expected}"
        assert error.error_code.name == expected["error"]
        assert error.message == expected["message"]
    else:
        assert error is None, f"unexpected {error!r}"


@pytest.mark.parametrize("vector", vectors("create_acl", "create_acls"), ids=lambda v: v["id"])
def test_create_conformance(vector: dict[str, Any], log: EmbeddedChangeLog) -> None:
    layer = ValidationLayer(vector.get("layer", "broker"))
    admin = AclAdmin(log, super_users=[ADMIN], validation_layer=layer)
    bindings = [binding_of(b) for b in vector.get("bindings", [vector.get("binding")])]
    expects = vector["expect"] if vector["kind"] == "create_acls" else [vector["expect"]]
    before = log.watermarks()[1]
    result = admin.create_acls(bindings, actor=ADMIN)
    for expected, item in zip(expects, result.results, strict=True):
        expected_item(expected, item.error)
    written = [e for e in events_after(log, before - 1) if isinstance(e, AclCreated)]
    assert result.records_written == len(written)
    if "expect_new_records" in vector:
        assert len(written) == vector["expect_new_records"]
    ok = [
        b
        for b, e in zip(bindings, expects, strict=True)
        if not (isinstance(e, dict) and "error" in e)
    ]
    assert set(
        AclAdmin(log, super_users=[ADMIN]).describe_acls(ANY_FILTER, actor=ADMIN).bindings
    ) == set(ok)


@pytest.mark.parametrize("vector", vectors("delete_acls"), ids=lambda v: v["id"])
def test_delete_conformance(
    vector: dict[str, Any], admin: AclAdmin, log: EmbeddedChangeLog
) -> None:
    seeded = admin.create_acls([binding_of(a) for a in vector["acls"]], actor=ADMIN)
    assert all(r.ok for r in seeded.results)
    result = admin.delete_acls([filter_of(f) for f in vector["filters"]], actor=ADMIN)
    for expected, item in zip(vector["expect_per_filter"], result.results, strict=True):
        if isinstance(expected, dict):
            expected_item(expected, item.error)
        else:
            assert item.error is None
            assert sorted(fields_of(b) for b in item.deleted) == sorted(expected)
    remaining = admin.describe_acls(ANY_FILTER, actor=ADMIN).bindings
    assert sorted(fields_of(b) for b in remaining) == sorted(vector["expect_remaining"])
    removals = [e for e in events_after(log, seeded.offset) if isinstance(e, AclDeleted)]
    assert result.records_written == len(removals)
    if "expect_remove_records" in vector:
        assert len(removals) == vector["expect_remove_records"]


# --- what the log holds ----------------------------------------------------------------------


def test_a_create_writes_one_event_per_new_binding_and_returns_its_offset(
    admin: AclAdmin, log: EmbeddedChangeLog
) -> None:
    b1 = acl(RT.TOPIC, "orders", PT.LITERAL, "User:alice", OP.READ)
    b2 = acl(RT.GROUP, "team-", PT.PREFIXED, "User:alice", OP.READ)
    result = admin.create_acls([b1, b2, b1], actor=ADMIN)
    assert [r.ok for r in result.results] == [True, True, True]
    assert result.records_written == 2 and result.offset == log.watermarks()[1] - 1 == 1
    records = log.read(0)
    assert [r.key for r in records] == [binding_key(b1), binding_key(b2)]
    event = decode_event(records[0].value or b"")
    assert isinstance(event, AclCreated) and event.binding == b1 and event.actor == ADMIN
    again = admin.create_acls([b1], actor=ADMIN)  # a duplicate of a live binding writes nothing
    assert again.results[0].ok and again.records_written == 0
    assert log.watermarks()[1] == 2 and again.offset == 1


def test_a_delete_writes_the_event_then_a_tombstone_for_its_key(
    admin: AclAdmin, log: EmbeddedChangeLog
) -> None:
    b = acl(RT.TOPIC, "orders", PT.LITERAL, "User:alice", OP.READ)
    created = admin.create_acls([b], actor=ADMIN)
    deleted = admin.delete_acls([b.to_filter(), b.to_filter()], actor=ADMIN)
    assert [r.deleted for r in deleted.results] == [(b,), (b,)]
    records = log.read(created.offset + 1)
    assert [(r.key, r.value is None) for r in records] == [
        (binding_key(b), False),
        (binding_key(b), True),
    ]
    event = decode_event(records[0].value or b"")
    assert isinstance(event, AclDeleted) and event.binding == b
    assert deleted.offset == records[-1].offset
    assert admin.delete_acls([b.to_filter()], actor=ADMIN).records_written == 0


def test_alter_acls_writes_deletes_creates_and_settings_as_one_batch(
    admin: AclAdmin, log: EmbeddedChangeLog
) -> None:
    keep = acl(RT.TOPIC, "keep", PT.LITERAL, "User:a", OP.READ)
    drop = acl(RT.TOPIC, "drop", PT.LITERAL, "User:b", OP.READ)
    back = acl(RT.GROUP, "back-", PT.PREFIXED, "User:c", OP.READ)
    again = acl(RT.TOPIC, "again", PT.LITERAL, "User:d", OP.WRITE)
    before = admin.create_acls([keep, drop, again], actor=ADMIN).offset
    bad = acl(RT.TOPIC, "", PT.LITERAL, "User:e", OP.READ)  # an empty name is refused
    result = admin.alter_acls(
        deletes=[drop.to_filter(), again.to_filter()], creates=[back, again, bad],
        configs={"allow.everyone.if.no.acl.found": "true"}, actor=ADMIN,
    )  # fmt: skip
    assert [r.deleted for r in result.deleted] == [(drop,), (again,)]
    assert [r.ok for r in result.created] == [True, True, False]
    assert result.configs_changed == ("allow.everyone.if.no.acl.found",)
    records = log.read(before + 1)
    # One batch: 2 x (AclDeleted + tombstone), the 2 creates (``again`` written again after its
    # delete), the setting; one request id; the answer's one offset is the batch's last.
    assert result.offset == records[-1].offset == before + 7 == log.watermarks()[1] - 1
    assert result.records_written == 5
    events = [decode_event(r.value) for r in records if r.value is not None]
    assert [type(e) for e in events] == [AclDeleted, AclDeleted, AclCreated, AclCreated, ConfigAltered]
    assert len({e.request_id for e in events}) == 1
    fresh = AclAdmin(log, super_users=[ADMIN])
    assert set(fresh.describe_acls(AclBindingFilter(), actor=ADMIN).bindings) == {keep, back, again}
    assert dict(fresh.state.configs) == {"allow.everyone.if.no.acl.found": "true"}
    with pytest.raises(InvalidConfigError):  # a refused setting refuses the whole request
        admin.alter_acls(creates=[drop], configs={"super.users": "no-colon"}, actor=ADMIN)
    assert log.watermarks()[1] - 1 == result.offset


def test_invalid_bindings_get_kafkas_message_and_nothing_is_written(
    admin: AclAdmin, log: EmbeddedChangeLog
) -> None:
    bad = acl(RT.CLUSTER, "foobar", PT.LITERAL, "User:a", OP.READ)
    result = admin.create_acls([bad], actor=ADMIN)
    assert result.results[0].error is not None
    assert (
        result.results[0].error.message
        == "The only valid name for the CLUSTER resource is kafka-cluster"
    )
    assert log.watermarks() == (0, 0)


# --- caller authorization (Kafka broker's rules) ---------------------------------------------


def test_callers_need_cluster_permissions(admin: AclAdmin, log: EmbeddedChangeLog) -> None:
    topic = acl(RT.TOPIC, "t", PT.LITERAL, "User:x", OP.READ)
    with pytest.raises(
        ClusterAuthorizationError, match=r"User:bob from 127\.0\.0\.1 is not authorized to ALTER"
    ):
        admin.create_acls([topic], actor="User:bob")
    with pytest.raises(ClusterAuthorizationError):
        admin.describe_acls(ANY_FILTER, actor="User:bob")
    with pytest.raises(ClusterAuthorizationError):
        admin.describe_configs(actor="User:bob")
    assert log.watermarks() == (0, 0)  # nothing written
    cluster = (RT.CLUSTER, "kafka-cluster", PT.LITERAL)
    admin.create_acls(
        [
            acl(*cluster, "User:bob", OP.ALTER),
            acl(*cluster, "User:carol", OP.DESCRIBE),
            acl(*cluster, "User:bob", OP.ALTER, PERM.ALLOW, host="10.0.0.9"),
        ],
        actor=ADMIN,
    )
    assert admin.create_acls([topic], actor="User:bob").results[0].ok
    assert (
        topic in admin.describe_acls(ANY_FILTER, actor="User:bob").bindings
    )  # ALTER implies DESCRIBE
    assert topic in admin.describe_acls(ANY_FILTER, actor="User:carol").bindings
    with pytest.raises(ClusterAuthorizationError):
        admin.delete_acls([ANY_FILTER], actor="User:carol")
    with pytest.raises(ClusterAuthorizationError):
        admin.alter_configs({"super.users": "User:carol"}, actor="User:bob")
    admin.create_acls(
        [acl(*cluster, "User:bob", OP.ALTER, PERM.DENY, host="10.0.0.66")], actor=ADMIN
    )
    with pytest.raises(ClusterAuthorizationError):
        admin.create_acls([topic], actor="User:bob", host="10.0.0.66")


def test_super_users_from_the_log_are_honoured_by_every_admin(log: EmbeddedChangeLog) -> None:
    AclAdmin(log, super_users=[ADMIN]).alter_configs({"super.users": "User:ops"}, actor=ADMIN)
    other = AclAdmin(log)  # no local super users at all
    topic = acl(RT.TOPIC, "t", PT.LITERAL, "User:x", OP.READ)
    assert other.create_acls([topic], actor="User:ops").results[0].ok
    with pytest.raises(ClusterAuthorizationError):
        other.create_acls([], actor=ADMIN)


def test_allow_everyone_if_no_acl_found_opens_an_empty_cluster(log: EmbeddedChangeLog) -> None:
    AclAdmin(log, super_users=[ADMIN]).alter_configs(
        {"allow.everyone.if.no.acl.found": "true"}, actor=ADMIN
    )
    assert AclAdmin(log).describe_acls(ANY_FILTER, actor="User:anyone").bindings == ()


# --- several writers, replay, offsets ----------------------------------------------------------


def test_two_admins_on_one_log_see_each_others_changes(
    log: EmbeddedChangeLog, tmp_path: Path
) -> None:
    other_log = EmbeddedChangeLog(tmp_path / "data")
    a, b = AclAdmin(log, super_users=[ADMIN]), AclAdmin(other_log, super_users=[ADMIN])
    x = acl(RT.TOPIC, "x", PT.LITERAL, "User:u", OP.WRITE)
    y = acl(RT.TOPIC, "y", PT.PREFIXED, "User:u", OP.READ, PERM.DENY)
    first = a.create_acls([x], actor=ADMIN)
    second = b.create_acls([x, y], actor=ADMIN)  # x is already live: written once only
    assert second.records_written == 1 and second.offset > first.offset
    deleted = a.delete_acls(
        [AclBindingFilter.of(RT.TOPIC, None, PT.ANY, None, None, OP.ANY, PERM.ANY)], actor=ADMIN
    )
    assert set(deleted.results[0].deleted) == {x, y}
    described = b.describe_acls(ANY_FILTER, actor=ADMIN)
    assert described.bindings == () and described.offset == deleted.offset
    other_log.close()


class ReadRecordingLog:
    """The embedded log, noting the offset each read starts from."""

    def __init__(self, log: EmbeddedChangeLog) -> None:
        self.log = log
        self.reads: list[int] = []

    def append(self, records: Any, *, timeout: float = 10.0) -> list[int]:
        return self.log.append(records, timeout=timeout)

    def read(self, from_offset: int, *, max_records: int = 10_000, timeout: float = 1.0) -> Any:
        self.reads.append(from_offset)
        return self.log.read(from_offset, max_records=max_records, timeout=timeout)

    def watermarks(self, *, timeout: float = 10.0) -> tuple[int, int]:
        return self.log.watermarks(timeout=timeout)

    def close(self) -> None:
        self.log.close()


def test_an_admin_reads_back_only_what_other_writers_appended(log: EmbeddedChangeLog) -> None:
    recording = ReadRecordingLog(log)
    mine, other = AclAdmin(recording, super_users=[ADMIN]), AclAdmin(log, super_users=[ADMIN])
    live = [acl(RT.TOPIC, f"t{i}", PT.LITERAL, "User:u", OP.READ) for i in range(6)]
    mine.create_acls(live[:3], actor=ADMIN)  # offsets 0-2
    mine.delete_acls([live[1].to_filter()], actor=ADMIN)  # AclDeleted and tombstone: 3, 4
    assert recording.reads == []
    theirs = other.create_acls([live[3]], actor=ADMIN)  # offset 5, after replaying 0-4
    mine.create_acls(live[4:], actor=ADMIN)  # reads offset 5 only, then writes 6-7
    assert recording.reads == [theirs.offset]
    described = mine.describe_acls(ANY_FILTER, actor=ADMIN)
    assert recording.reads == [theirs.offset] and described.offset == 7
    replayed = AclAdmin(log, super_users=[ADMIN]).describe_acls(ANY_FILTER, actor=ADMIN)
    expected = sorted(b for i, b in enumerate(live) if i != 1)
    assert list(described.bindings) == list(replayed.bindings) == expected


def test_a_fresh_admin_replays_the_same_state(admin: AclAdmin, log: EmbeddedChangeLog) -> None:
    live = [acl(RT.TOPIC, f"t{i}", PT.LITERAL, "User:u", OP.READ) for i in range(10)]
    admin.create_acls(live, actor=ADMIN)
    admin.delete_acls([live[3].to_filter(), live[7].to_filter()], actor=ADMIN)
    admin.create_acls([live[3]], actor=ADMIN)
    admin.alter_configs({"allow.everyone.if.no.acl.found": "true"}, actor=ADMIN)
    fresh = AclAdmin(log, super_users=[ADMIN])
    expected = sorted(b for i, b in enumerate(live) if i != 7)
    assert list(fresh.describe_acls(ANY_FILTER, actor=ADMIN).bindings) == expected
    values = {e.name: e.value for e in fresh.describe_configs(actor=ADMIN).entries}
    assert values["allow.everyone.if.no.acl.found"] == "true"


def test_a_corrupt_record_stops_every_reader_at_its_offset(
    admin: AclAdmin, log: EmbeddedChangeLog
) -> None:
    admin.create_acls([acl(RT.TOPIC, "before", PT.LITERAL, "User:u", OP.READ)], actor=ADMIN)
    [bad] = log.append(
        [(b'["acl","TOPIC","x","LITERAL","User:u","*","READ","ALLOW"]', b"\xc3\x01garbage")]
    )
    for reader in (admin, AclAdmin(log, super_users=[ADMIN])):
        with pytest.raises(UndecodableRecordError, match=f"at offset {bad}") as caught:
            reader.describe_acls(ANY_FILTER, actor=ADMIN)
        assert caught.value.offset == bad
    skipping = AclAdmin(log, super_users=[ADMIN], skip_offsets=[bad])
    assert len(skipping.describe_acls(ANY_FILTER, actor=ADMIN).bindings) == 1
    assert skipping.state.skipped == [bad]


# --- configs and format gating ---------------------------------------------------------------


def test_configs_are_events_with_defaults_described(
    admin: AclAdmin, log: EmbeddedChangeLog
) -> None:
    entries = {e.name: e for e in admin.describe_configs(actor=ADMIN).entries}
    assert entries["super.users"].value == "" and entries["super.users"].is_default
    assert entries["acl.format.version"].value == "3"
    result = admin.alter_configs({"super.users": "User:ops;User:dev"}, actor=ADMIN)
    assert result.changed == ("super.users",)
    [event] = events_after(log, -1)
    assert (
        isinstance(event, ConfigAltered)
        and event.value == "User:ops;User:dev"
        and event.actor == ADMIN
    )
    entry = admin.describe_configs(["super.users"], actor=ADMIN).entries[0]
    assert (entry.value, entry.is_default) == ("User:ops;User:dev", False)
    admin.alter_configs({"super.users": None}, actor=ADMIN)
    assert admin.describe_configs(["super.users"], actor=ADMIN).entries[0].is_default


@pytest.mark.parametrize(
    ("configs", "error"),
    [
        ({"no.such.config": "1"}, InvalidConfigError),
        ({"allow.everyone.if.no.acl.found": "yes"}, InvalidConfigError),
        ({"acl.format.version": "4"}, InvalidConfigError),
        ({"acl.format.version": "\u00b2"}, InvalidConfigError),  # a digit, but no decimal one
        ({"acl.format.version": "\u00a02"}, InvalidConfigError),  # trim keeps U+00A0
        ({"super.users": "alice"}, SuperUsersConfigError),
        ({}, InvalidRequestError),
    ],
)
def test_bad_configs_are_refused_and_nothing_written(
    admin: AclAdmin, log: EmbeddedChangeLog, configs: dict[str, str], error: type[Exception]
) -> None:
    with pytest.raises(error):
        admin.alter_configs(configs, actor=ADMIN)
    assert log.watermarks() == (0, 0)


def test_validate_only_and_the_policy(log: EmbeddedChangeLog) -> None:
    seen: list[AlterConfigsRequest] = []

    class NoOpenCluster:
        def validate(self, request: AlterConfigsRequest) -> None:
            seen.append(request)
            if request.configs.get("allow.everyone.if.no.acl.found") == "true":
                raise PolicyViolationError("this cluster may not allow everyone by default")

    admin = AclAdmin(log, super_users=[ADMIN], alter_config_policy=NoOpenCluster())
    dry = admin.alter_configs({"super.users": "User:ops"}, actor=ADMIN, validate_only=True)
    assert dry.validate_only and dry.changed == () and log.watermarks() == (0, 0)
    with pytest.raises(PolicyViolationError, match="may not allow everyone"):
        admin.alter_configs({"allow.everyone.if.no.acl.found": "true"}, actor=ADMIN)
    assert log.watermarks() == (0, 0)
    assert seen[-1].actor == ADMIN and seen[-1].configs == {
        "allow.everyone.if.no.acl.found": "true"
    }


def test_a_format_version_is_trimmed_as_java_trims_it(admin: AclAdmin) -> None:
    """Settings' values are trimmed with Java's trim (chars <= U+0020, control chars too): the
    check and the downgrade analysis read the version alike (the analysis used str.strip, kept
    the U+0001 and failed with a ValueError on a value the check had accepted)."""
    admin.create_acls([acl(RT.TOPIC, "t-", PT.PREFIXED, "User:u", OP.READ)], actor=ADMIN)
    for value in ("\x012", "2\x01\t", " 3\x1f"):
        changed = admin.alter_configs({"acl.format.version": value}, actor=ADMIN).changed
        assert changed == ("acl.format.version",)
    # Version 1 has no PREFIXED pattern: the analysis read "\x011" as 1 and refuses it.
    with pytest.raises(InvalidConfigError, match=r"cannot lower acl\.format\.version to 1"):
        admin.alter_configs({"acl.format.version": "\x011"}, actor=ADMIN)


def test_format_gating(admin: AclAdmin, log: EmbeddedChangeLog) -> None:
    prefixed = acl(RT.TOPIC, "secret-", PT.PREFIXED, "User:*", OP.READ, PERM.DENY)
    literal = acl(RT.TOPIC, "orders", PT.LITERAL, "User:u", OP.READ)
    user = acl(RT.USER, "alice", PT.LITERAL, "User:u", OP.CREATE_TOKENS)
    admin.alter_configs({"acl.format.version": "1"}, actor=ADMIN)
    result = admin.create_acls([prefixed, literal], actor=ADMIN)
    error = result.results[0].error
    assert isinstance(error, UnsupportedFormatVersionError)
    assert "PREFIXED" in error.message and "acl.format.version 2 or greater" in error.message
    assert result.results[1].ok and result.records_written == 1
    written = log.read(result.offset)[0].value or b""
    assert int.from_bytes(written[2:10], "little") == schema_fingerprint(1)  # written as format 1
    admin.alter_configs({"acl.format.version": "2"}, actor=ADMIN)
    second = admin.create_acls([prefixed, user], actor=ADMIN)
    assert second.results[0].ok and isinstance(
        second.results[1].error, UnsupportedFormatVersionError
    )
    with pytest.raises(InvalidConfigError, match=r"cannot lower acl\.format\.version to 1"):
        admin.alter_configs({"acl.format.version": "1"}, actor=ADMIN)
    admin.alter_configs({"acl.format.version": "3"}, actor=ADMIN)
    assert admin.create_acls([user], actor=ADMIN).results[0].ok
    # A format-1 release reads everything written while format 1 was finalized.
    old = AvroEventCodec(writer_version=1, known_versions=[1])
    assert old.decode(written, reader_version=1) == decode_event(written)


def test_a_downgrade_that_widens_access_is_refused_with_the_widened_access_unless_forced(
    admin: AclAdmin, log: EmbeddedChangeLog
) -> None:
    """KIP-290's hole: everyone may read every topic, bob is denied ``secret-`` by a PREFIXED
    DENY; a format-1 reader ignores the DENY, so lowering to 1 would let bob read them."""
    everyone = acl(RT.TOPIC, "*", PT.LITERAL, "User:*", OP.READ)
    deny_bob = acl(RT.TOPIC, "secret-", PT.PREFIXED, "User:bob", OP.READ, PERM.DENY)
    assert all(r.ok for r in admin.create_acls([everyone, deny_bob], actor=ADMIN).results)
    end = log.watermarks()[1]
    with pytest.raises(UnsafeFormatDowngradeError) as refused:
        admin.alter_configs({"acl.format.version": "1"}, actor=ADMIN)
    message = refused.value.message
    assert message.startswith("cannot lower acl.format.version to 1: a reader of format 1 ")
    assert "ignores 1 live binding(s)" in message
    assert "READ on TOPIC secret-* for User:bob (e.g. User:bob from " in message
    with pytest.raises(UnsafeFormatDowngradeError):
        admin.alter_configs({"acl.format.version": "1"}, actor=ADMIN, validate_only=True)
    with pytest.raises(InvalidRequestError, match="needs a reason"):
        admin.alter_configs({"acl.format.version": "1"}, actor=ADMIN, force_reason="  ")
    with pytest.raises(InvalidConfigError, match=r"acl\.format\.version\.forced is read-only"):
        admin.alter_configs({"acl.format.version.forced": "x"}, actor=ADMIN)
    assert log.watermarks()[1] == end  # nothing written by the refusals
    # a downgrade to 2 loses nothing: allowed without force, and no forced record
    assert admin.alter_configs({"acl.format.version": "2"}, actor=ADMIN).changed == (
        "acl.format.version",
    )

    forced = admin.alter_configs(
        {"acl.format.version": "1"}, actor=ADMIN, force_reason="roll back broker 3 tonight"
    )
    assert forced.changed == ("acl.format.version.forced", "acl.format.version")
    record, version = events_after(log, forced.offset - 2)
    assert isinstance(record, ConfigAltered) and isinstance(version, ConfigAltered)
    assert (record.name, record.actor, record.request_id) == (
        "acl.format.version.forced", ADMIN, version.request_id
    )
    assert record.value == (
        "lowered from 2 to 1 with 1 binding(s) an older reader ignores and 1 widened access "
        "set(s): roll back broker 3 tonight"
    )
    assert (version.name, version.value) == ("acl.format.version", "1")
    entries = {e.name: e for e in admin.describe_configs(actor=ADMIN).entries}
    assert entries["acl.format.version"].value == "1"
    assert entries["acl.format.version.forced"].is_read_only
    assert entries["acl.format.version.forced"].value.endswith("roll back broker 3 tonight")


def test_a_downgrade_without_lost_bindings_runs_no_refusal(admin: AclAdmin) -> None:
    literal = acl(RT.TOPIC, "orders", PT.LITERAL, "User:u", OP.READ)
    assert admin.create_acls([literal], actor=ADMIN).results[0].ok
    assert admin.alter_configs({"acl.format.version": "1"}, actor=ADMIN).changed == (
        "acl.format.version",
    )
