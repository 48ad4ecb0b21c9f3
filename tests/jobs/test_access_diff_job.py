"""The Spark path of the access diff on real Spark (``local[2]``): the same rows as the pure
engine on the same states, for several partition depths, including the KIP-290 downgrade."""

from __future__ import annotations

import random
from typing import Any

import pytest

from jobs.access_diff import distributed_access_diff
from store.access_diff import AccessDiff, AclState, access_diff, compact, older_reader_state
from tests.store.test_access_diff import acl, mutate, random_state, versioned_state

pytestmark = pytest.mark.spark


def same(left: AccessDiff, right: AccessDiff) -> None:
    assert len(left.widened) == len(set(left.widened))  # no region decided twice
    assert len(left.narrowed) == len(set(left.narrowed))
    assert set(left.widened) == set(right.widened)
    assert set(left.narrowed) == set(right.narrowed)


def test_the_spark_path_gives_the_pure_engines_rows(spark: Any) -> None:
    rng = random.Random(77)
    pairs: list[tuple[AclState, AclState]] = []
    for _ in range(12):
        before = random_state(rng)
        pairs.append((before, mutate(before, rng)))
        state = versioned_state(rng)
        pairs.append((state, older_reader_state(state, rng.choice([1, 2]))[0]))
    for before, after in pairs:
        expected = access_diff(before, after)
        for depth in (1, 2):
            same(distributed_access_diff(spark, before, after, depth=depth, partitions=2), expected)
        # folded in each partition, then in the union: the pure engine's rows, folded
        folded = distributed_access_diff(spark, before, after, depth=2, partitions=2, folded=True)
        same(folded, compact(expected))


def test_the_kip_290_hole_found_on_spark(spark: Any) -> None:
    from store.acl import AclPermissionType, PatternType

    state = AclState.of([
        acl("*", principal="User:*"),
        acl("secret-", permission=AclPermissionType.DENY, pattern=PatternType.PREFIXED),
        acl("secret-eu", permission=AclPermissionType.DENY),
    ])  # fmt: skip
    older, _ = older_reader_state(state, 1)
    diff = distributed_access_diff(spark, state, older, depth=3, partitions=2)
    assert [(r.principal, r.operation.name, str(r.names)) for r in diff.widened] == [
        ("User:bob", "READ", "secret-* except secret-eu")
    ]
    same(diff, access_diff(state, older))


def test_each_binding_is_shipped_once_with_the_states_it_is_in() -> None:
    from jobs.access_diff import AFTER, BEFORE, binding_columns
    from store.acl import PatternType

    kept = acl("orders")
    dropped = acl("ord", pattern=PatternType.PREFIXED)
    added = acl("orders", principal="User:eve")
    wildcard = acl("*", principal="User:*")  # short: goes with the job, not in the columns
    before = AclState.of([kept, dropped, wildcard])
    after = AclState.of([kept, added, wildcard])
    columns = binding_columns(before, after, 3, None)
    shipped = sorted(zip(columns["name"], columns["principal"], columns["patternType"],
                         columns["states"], columns["stem"], strict=True))  # fmt: skip
    assert shipped == [
        ("ord", "User:bob", "PREFIXED", BEFORE, "ord"),
        ("orders", "User:bob", "LITERAL", BEFORE | AFTER, "ord"),
        ("orders", "User:eve", "LITERAL", AFTER, "ord"),
    ]
    # only the keys asked for
    assert binding_columns(before, after, 3, {(int(kept.resource_type), "xyz")})["name"] == []


def test_a_changed_short_binding_is_decided_for_its_type_alone(spark: Any) -> None:
    from store.acl import AclOperation, ResourceType

    group_rule = acl("*", principal="User:*", rt=ResourceType.GROUP)
    before = AclState.of([acl("*", principal="User:*"), group_rule, acl("payments")])
    after = AclState.of([group_rule, acl("payments")])  # the topics' wildcard ALLOW goes
    diff = distributed_access_diff(spark, before, after, depth=3, partitions=2)
    assert not diff.widened
    # every principal loses READ (and the DESCRIBE it implies) on every topic name but
    # "payments", where bob keeps both: its rows name the others; no group changes
    rows = {(r.resource_type, str(r.names), r.operation, r.principal, r.principal_except)
            for r in diff.narrowed}  # fmt: skip
    assert rows == {
        (ResourceType.TOPIC, names, op, who, but)
        for op in (AclOperation.READ, AclOperation.DESCRIBE)
        for names, who, but in (
            ("any name except *, payments", "*", ()),
            ("*", "*", ()),  # the literal name "*" is a name too
            ("payments", "User:*", ()),  # the principal named User:* itself
            ("payments", "*", ("User:*", "User:bob")),
        )
    }
    same(diff, access_diff(before, after))
