"""Conversion to and from confluent-kafka's AclBinding / AclBindingFilter."""

from __future__ import annotations

import confluent_kafka.admin as ck
import pytest

from store.acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType
from store.interop import (
    UnsupportedByClientError,
    from_confluent,
    from_confluent_filter,
    to_confluent,
    to_confluent_filter,
)

pytestmark = pytest.mark.unit

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType


def test_binding_converts_field_by_field() -> None:
    ours = AclBinding.of(RT.TOPIC, "orders-", PT.PREFIXED, "User:alice", "10.0.0.1", OP.WRITE, PERM.DENY)
    theirs = to_confluent(ours)
    assert theirs == ck.AclBinding(
        ck.ResourceType.TOPIC,
        "orders-",
        ck.ResourcePatternType.PREFIXED,
        "User:alice",
        "10.0.0.1",
        ck.AclOperation.WRITE,
        ck.AclPermissionType.DENY,
    )
    assert from_confluent(theirs) == ours


def test_cluster_is_brokers_code() -> None:
    theirs = ck.AclBinding("BROKER", "kafka-cluster", "LITERAL", "User:a", "*", "ALTER", "ALLOW")
    ours = from_confluent(theirs)
    assert ours.resource_type is RT.CLUSTER
    assert to_confluent(ours).restype is ck.ResourceType.BROKER


@pytest.mark.parametrize(
    "binding",
    [
        AclBinding.of(RT.USER, "bob", PT.LITERAL, "User:a", "*", OP.ALTER, PERM.ALLOW),
        AclBinding.of(RT.DELEGATION_TOKEN, "t", PT.LITERAL, "User:a", "*", OP.DESCRIBE, PERM.ALLOW),
        AclBinding.of(RT.CLUSTER, "kafka-cluster", PT.LITERAL, "User:a", "*", OP.CREATE_TOKENS, PERM.ALLOW),
    ],
)
def test_values_librdkafka_lacks_are_refused(binding: AclBinding) -> None:
    with pytest.raises(UnsupportedByClientError, match="confluent-kafka has no"):
        to_confluent(binding)


def test_filter_keeps_none_as_any_and_star_as_exact() -> None:
    ours = AclBindingFilter.of(RT.ANY, None, PT.MATCH, None, "*", OP.ANY, PERM.ANY)
    theirs = to_confluent_filter(ours)
    assert isinstance(theirs, ck.AclBindingFilter)
    assert theirs.name is None and theirs.principal is None and theirs.host == "*"
    assert theirs.resource_pattern_type is ck.ResourcePatternType.MATCH
    assert from_confluent_filter(theirs) == ours


def test_a_filter_is_not_taken_for_a_binding() -> None:
    theirs = ck.AclBindingFilter("ANY", None, "ANY", None, None, "ANY", "ANY")
    with pytest.raises(TypeError):
        from_confluent(theirs)
