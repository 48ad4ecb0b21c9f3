"""Change events: minimum reader versions derived from content, record form, upcasting."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.events import (
    LATEST_FORMAT_VERSION,
    AclCreated,
    AclDeleted,
    ConfigAltered,
    downcast_to,
    from_record,
    to_record,
    upcast,
    upcast_v1_to_v2,
    upcast_v2_to_v3,
)
from tests.store.samples import SAMPLE_TIME_MS, binding, created

pytestmark = pytest.mark.unit

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType


# The feature history, worked by hand from the Kafka releases that introduced each feature.
@pytest.mark.parametrize(
    ("b", "needed"),
    [
        (binding(), 1),
        (binding(rt=RT.GROUP, op=OP.DESCRIBE, perm=PERM.DENY), 1),
        (binding(rt=RT.CLUSTER, name="kafka-cluster", op=OP.IDEMPOTENT_WRITE), 1),
        (binding(rt=RT.TRANSACTIONAL_ID, op=OP.WRITE), 1),
        (binding(pt=PT.PREFIXED), 2),
        (binding(pt=PT.PREFIXED, perm=PERM.DENY), 2),
        (binding(rt=RT.USER), 3),
        (binding(rt=RT.DELEGATION_TOKEN, op=OP.DESCRIBE), 3),
        (binding(rt=RT.USER, op=OP.CREATE_TOKENS), 3),
        (binding(op=OP.DESCRIBE_TOKENS), 3),
        (binding(rt=RT.USER, pt=PT.PREFIXED), 3),
        (binding(op=OP.UNKNOWN), LATEST_FORMAT_VERSION + 1),
        (binding(rt=RT.UNKNOWN), LATEST_FORMAT_VERSION + 1),
    ],
)
def test_min_reader_version_is_derived_from_the_binding(b: AclBinding, needed: int) -> None:
    assert created(b).min_reader_version == needed
    assert (
        AclDeleted(binding=b, actor="User:a", request_id="r", time_ms=0).min_reader_version
        == needed
    )


def test_config_events_need_format_3() -> None:
    event = ConfigAltered(
        name="super.users", value="User:a", actor="User:a", request_id="r", time_ms=0
    )
    assert event.min_reader_version == 3
    assert not event.readable_by(2) and event.readable_by(3)


def test_a_stored_min_reader_version_is_never_lowered_by_derivation() -> None:
    # A newer writer may know that a binding needs more than this release can see.
    assert created(binding(), min_reader_version=5).min_reader_version == 5
    # ...but a record can never claim less than its content needs.
    assert created(binding(pt=PT.PREFIXED), min_reader_version=1).min_reader_version == 2


def test_events_are_frozen_and_hashable() -> None:
    event = created(binding())
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.actor = "User:mallory"  # type: ignore[misc]
    assert hash(event) == hash(created(binding()))
    assert event.schema_version == LATEST_FORMAT_VERSION


def test_record_form_uses_kafka_enum_names() -> None:
    record = to_record(created(binding(pt=PT.PREFIXED, op=OP.DESCRIBE_CONFIGS, perm=PERM.DENY)))
    assert record == {
        "schemaVersion": 3,
        "minReaderVersion": 2,
        "actor": "User:admin",
        "requestId": "req-1",
        "timeMs": SAMPLE_TIME_MS,
        "eventType": "ACL_CREATED",
        "resourceType": "TOPIC",
        "name": "orders",
        "patternType": "PREFIXED",
        "principal": "User:alice",
        "host": "*",
        "operation": "DESCRIBE_CONFIGS",
        "permissionType": "DENY",
        "config": None,
    }


def test_config_record_carries_the_entry_and_no_real_binding() -> None:
    record = to_record(
        ConfigAltered(
            name="allow.everyone.if.no.acl.found",
            value=None,
            actor="User:a",
            request_id="r",
            time_ms=3,
        )
    )
    assert record["eventType"] == "CONFIG_ALTERED"
    assert record["config"] == {"name": "allow.everyone.if.no.acl.found", "value": None}
    assert record["resourceType"] == "UNKNOWN" and record["operation"] == "UNKNOWN"


bindings = st.builds(
    AclBinding.of,
    st.sampled_from(
        [RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID, RT.DELEGATION_TOKEN, RT.USER]
    ),
    st.text(min_size=1, max_size=20),
    st.sampled_from([PT.LITERAL, PT.PREFIXED]),
    st.text(max_size=12).map(lambda s: "User:" + s),
    st.sampled_from(["*", "10.0.0.1", "::1"]),
    st.sampled_from([op for op in OP if op not in (OP.ANY, OP.UNKNOWN)]),
    st.sampled_from([PERM.ALLOW, PERM.DENY]),
)


@given(bindings, st.booleans(), st.text(max_size=8), st.integers(0, 2**62))
def test_record_round_trip(b: AclBinding, create: bool, request_id: str, time_ms: int) -> None:
    cls = AclCreated if create else AclDeleted
    event = cls(binding=b, actor="User:x", request_id=request_id, time_ms=time_ms)
    assert from_record(to_record(event)) == event


def test_upcasts_fill_what_older_formats_implied_without_mutating_input() -> None:
    v1 = {"schemaVersion": 1, "minReaderVersion": 1, "name": "t"}
    v2 = upcast_v1_to_v2(v1)
    assert v2["patternType"] == "LITERAL" and "patternType" not in v1
    v3 = upcast_v2_to_v3(v2)
    assert v3["config"] is None and "config" not in v2
    assert upcast(v1, from_version=1) == v3
    assert v3["schemaVersion"] == 1  # the version it was written with is kept


def test_upcast_of_a_format_1_record_builds_a_literal_binding() -> None:
    v1 = downcast_to(to_record(created(binding())), 1)
    assert "patternType" not in v1 and "config" not in v1 and v1["schemaVersion"] == 1
    event = from_record(upcast(v1, from_version=1))
    assert event == AclCreated(
        binding=binding(),
        actor="User:admin",
        request_id="req-1",
        time_ms=SAMPLE_TIME_MS,
        schema_version=1,
    )


def test_unknown_event_type_is_refused() -> None:
    record = to_record(created(binding()))
    record["eventType"] = "UNKNOWN"
    with pytest.raises(ValueError, match="unknown event type"):
        from_record(record)
