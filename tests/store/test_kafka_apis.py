"""The protocol table and kafka-acls.sh role expansions, against the authorization docs' table
and AclCommand's --producer/--consumer sets, restated by hand."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.kafka_apis import (
    API_KEY_TABLE,
    Check,
    MissingRequestDetailError,
    NotAclControlledError,
    UnknownApiKeyError,
    checks_for,
    consumer_bindings,
    producer_bindings,
)

pytestmark = pytest.mark.unit

# The shared docs live beside the repository (../shared/reference), as the vectors do.
DOCS = (
    Path(os.environ.get("ACLSTORE_REFERENCE_DIR") or Path(__file__).resolve().parents[3] / "shared"
         / "reference")
    / "kafka-authorization-docs.txt"
)  # fmt: skip
Op, Rt = AclOperation, ResourceType


def c(op: AclOperation, rt: ResourceType, name: str) -> Check:
    return Check(operation=op, resource_type=rt, name=name)


def steps(*alternatives: tuple[Check, ...]) -> list[tuple[Check, ...]]:
    return list(alternatives)


def got(api_key: int, **details: object) -> list[tuple[Check, ...]]:
    return [step.any_of for step in checks_for(api_key, **details)]  # type: ignore[arg-type]


CLUSTER = "kafka-cluster"


def test_table_has_every_row_of_the_docs() -> None:
    """Each "API (key) | Operation | Resource" line of the docs is a row, and no other."""
    assert DOCS.is_file(), f"Kafka authorization docs missing at {DOCS}"
    line = re.compile(r"^([A-Z_]+) \((\d+)\) \| ([A-Za-z]+) \| ([A-Za-z]+) \|", re.M)
    documented = {
        (int(key), name, Op.parse(op), Rt.parse(rt))
        for name, key, op, rt in line.findall(DOCS.read_text(encoding="utf-8"))
    }
    ours = {
        (row.api_key, row.api_name, row.operation, row.resource_type)
        for row in API_KEY_TABLE
        if row.operation is not None
    }
    assert len(documented) == 62  # counted by hand: 68 API lines, 6 without a check
    assert ours == documented
    every_api = {int(key) for key in re.findall(r"^[A-Z_]+ \((\d+)\) \|", DOCS.read_text(), re.M)}
    assert every_api == {row.api_key for row in API_KEY_TABLE}


def test_produce() -> None:
    assert got(0, topics=["t"]) == steps((c(Op.WRITE, Rt.TOPIC, "t"),))
    assert got(0, topics=["t"], idempotent=True) == steps(
        (c(Op.IDEMPOTENT_WRITE, Rt.CLUSTER, CLUSTER),), (c(Op.WRITE, Rt.TOPIC, "t"),)
    )
    assert got(0, topics=["a", "b"], transactional_id="tx", idempotent=True) == steps(
        (c(Op.WRITE, Rt.TRANSACTIONAL_ID, "tx"),),
        (c(Op.WRITE, Rt.TOPIC, "a"),),
        (c(Op.WRITE, Rt.TOPIC, "b"),),
    )


def test_fetch_from_follower_or_consumer() -> None:
    assert got(1, follower=True, topics=["t"]) == steps((c(Op.CLUSTER_ACTION, Rt.CLUSTER, CLUSTER),))
    assert got(1, topics=["t"]) == steps((c(Op.READ, Rt.TOPIC, "t"),))


def test_metadata_auto_create_falls_back_from_cluster_to_topic() -> None:
    assert got(3, topics=["t"]) == steps((c(Op.DESCRIBE, Rt.TOPIC, "t"),))
    assert got(3, topics=["t"], auto_create=True) == steps(
        (c(Op.DESCRIBE, Rt.TOPIC, "t"),),
        (c(Op.CREATE, Rt.CLUSTER, CLUSTER), c(Op.CREATE, Rt.TOPIC, "t")),
    )


def test_create_topics_is_create_on_cluster_or_on_each_topic() -> None:
    assert got(19, topics=["a", "b"]) == steps(
        (c(Op.CREATE, Rt.CLUSTER, CLUSTER), c(Op.CREATE, Rt.TOPIC, "a")),
        (c(Op.CREATE, Rt.CLUSTER, CLUSTER), c(Op.CREATE, Rt.TOPIC, "b")),
    )


def test_group_is_checked_before_topics() -> None:
    assert got(8, group="g", topics=["t"]) == steps(
        (c(Op.READ, Rt.GROUP, "g"),), (c(Op.READ, Rt.TOPIC, "t"),)
    )
    assert got(9, group="g", topics=["t"]) == steps(
        (c(Op.DESCRIBE, Rt.GROUP, "g"),), (c(Op.DESCRIBE, Rt.TOPIC, "t"),)
    )
    assert got(28, transactional_id="x", group="g", topics=["t"]) == steps(
        (c(Op.WRITE, Rt.TRANSACTIONAL_ID, "x"),),
        (c(Op.READ, Rt.GROUP, "g"),),
        (c(Op.READ, Rt.TOPIC, "t"),),
    )


def test_offset_delete() -> None:
    assert got(47, group="g", topics=["t"]) == steps(
        (c(Op.DELETE, Rt.GROUP, "g"),), (c(Op.READ, Rt.TOPIC, "t"),)
    )


def test_find_coordinator_by_key_type() -> None:
    assert got(10, group="g") == steps((c(Op.DESCRIBE, Rt.GROUP, "g"),))
    assert got(10, transactional_id="x") == steps((c(Op.DESCRIBE, Rt.TRANSACTIONAL_ID, "x"),))


def test_init_producer_id() -> None:
    assert got(22, transactional_id="x") == steps((c(Op.WRITE, Rt.TRANSACTIONAL_ID, "x"),))
    assert got(22) == steps((c(Op.IDEMPOTENT_WRITE, Rt.CLUSTER, CLUSTER),))


def test_configs_broker_or_topic() -> None:
    assert got(32, broker_configs=True) == steps((c(Op.DESCRIBE_CONFIGS, Rt.CLUSTER, CLUSTER),))
    assert got(33, topics=["t"]) == steps((c(Op.ALTER_CONFIGS, Rt.TOPIC, "t"),))
    assert got(44, broker_configs=True, topics=["t"]) == steps(
        (c(Op.ALTER_CONFIGS, Rt.CLUSTER, CLUSTER),), (c(Op.ALTER_CONFIGS, Rt.TOPIC, "t"),)
    )


def test_list_groups_and_leader_epoch_fallbacks() -> None:
    assert got(16, groups=["g"]) == steps(
        (c(Op.DESCRIBE, Rt.CLUSTER, CLUSTER), c(Op.DESCRIBE, Rt.GROUP, "g"))
    )
    assert got(23, topics=["t"]) == steps(
        (c(Op.CLUSTER_ACTION, Rt.CLUSTER, CLUSTER), c(Op.DESCRIBE, Rt.TOPIC, "t"))
    )


@pytest.mark.parametrize(
    ("api_key", "op"),
    [(29, Op.DESCRIBE), (30, Op.ALTER), (31, Op.ALTER), (4, Op.CLUSTER_ACTION),
     (27, Op.CLUSTER_ACTION), (45, Op.ALTER), (46, Op.DESCRIBE)],
)  # fmt: skip
def test_cluster_only_apis(api_key: int, op: AclOperation) -> None:
    assert got(api_key) == steps((c(op, Rt.CLUSTER, CLUSTER),))


@pytest.mark.parametrize("api_key", [17, 18, 36])
def test_handshake_apis_need_no_checks(api_key: int) -> None:
    assert got(api_key) == []


@pytest.mark.parametrize("api_key", [38, 39, 40])
def test_delegation_token_rules_are_not_acl_checks(api_key: int) -> None:
    with pytest.raises(NotAclControlledError, match="Delegation Tokens"):
        checks_for(api_key)


def test_unknown_api_key() -> None:
    with pytest.raises(UnknownApiKeyError, match="API key 999"):
        checks_for(999)


@pytest.mark.parametrize(("api_key", "missing"), [(11, "group"), (26, "transactional_id")])
def test_required_details(api_key: int, missing: str) -> None:
    with pytest.raises(MissingRequestDetailError, match=missing):
        checks_for(api_key)


# --- kafka-acls.sh -----------------------------------------------------------------------

BOB = "User:Bob"


def b(rt: ResourceType, name: str, op: AclOperation, pt: PatternType = PatternType.LITERAL,
      host: str = "*", perm: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding.of(rt, name, pt, BOB, host, op, perm)  # fmt: skip


def test_producer_topic_only() -> None:
    assert set(producer_bindings(principal=BOB, topic="t")) == {
        b(Rt.TOPIC, "t", Op.WRITE), b(Rt.TOPIC, "t", Op.DESCRIBE), b(Rt.TOPIC, "t", Op.CREATE)
    }


def test_producer_transactional_and_idempotent_prefixed() -> None:
    pre = PatternType.PREFIXED
    result = producer_bindings(
        principal=BOB, topic="Test-", transactional_id="tx-", idempotent=True, pattern_type=pre
    )
    assert set(result) == {
        b(Rt.TOPIC, "Test-", Op.WRITE, pre),
        b(Rt.TOPIC, "Test-", Op.DESCRIBE, pre),
        b(Rt.TOPIC, "Test-", Op.CREATE, pre),
        b(Rt.TRANSACTIONAL_ID, "tx-", Op.WRITE, pre),
        b(Rt.TRANSACTIONAL_ID, "tx-", Op.DESCRIBE, pre),
        b(Rt.CLUSTER, CLUSTER, Op.IDEMPOTENT_WRITE),  # the cluster is always LITERAL
    }
    assert len(result) == 6
    assert result == sorted(result)


def test_consumer() -> None:
    result = consumer_bindings(
        principal=BOB, topic="t", group="g", host="10.0.0.1", permission_type=AclPermissionType.DENY
    )
    deny = AclPermissionType.DENY
    assert set(result) == {
        b(Rt.TOPIC, "t", Op.READ, host="10.0.0.1", perm=deny),
        b(Rt.TOPIC, "t", Op.DESCRIBE, host="10.0.0.1", perm=deny),
        b(Rt.GROUP, "g", Op.READ, host="10.0.0.1", perm=deny),
    }


def test_consumer_needs_a_group() -> None:
    with pytest.raises(MissingRequestDetailError, match="group"):
        consumer_bindings(principal=BOB, topic="t", group="")
