"""Differential test: our decision rules against Kafka 4.3.1's own ``StandardAuthorizer``.

``tests/java/KafkaAuthorizerHarness.java`` (compiled here with javac against the Kafka jars)
answers the same randomized scenarios with Kafka's real authorizer: ACL sets whose names
share prefixes, LITERAL / PREFIXED / ``*``, ``User:*``, hosts, DENY and ALLOW, ALL and
implied operations, super users, allow-everyone, not-yet-loaded, and
``authorizeByResourceType``.  Every answer must be identical, except on Kafka's two defect
inputs, where ours must give the intended answer instead (computed by a brute-force
restatement of the rule, itself checked against Kafka on every other input):

* ACL names that sort below ``*`` (possible for GROUP and TRANSACTIONAL_ID): Kafka's
  wildcard-section scan loops forever or throws StringIndexOutOfBoundsException;
* resource names that start with ``*`` (other than ``*`` itself): Kafka's scan takes the
  LITERAL ``*`` ACL for a literal prefix of the name and skips it, so the wildcard ACL does
  not apply to them (found by this test; topic names cannot contain ``*``, group names can).

No broker is needed, only the jars (hence the ``kafka`` mark).
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.authorizer import KafkaHarness
from store.acl import (
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    java_string_key,
)
from store.authorizer import (
    Action,
    AuthorizerConfig,
    InMemoryAclIndex,
    InvalidActionError,
    authorize,
    authorize_by_resource_type,
)
from store.errors import AuthorizerNotReadyError

pytestmark = pytest.mark.kafka

SEED = int(os.environ.get("ACLSTORE_DIFF_SEED", "4301"))
SCENARIOS = 260
BY_TYPE_SCENARIOS = 200
QUERIES_PER_SCENARIO = 40
MIN_CASES = 10_000

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType
TYPES = [RT.TOPIC, RT.TOPIC, RT.GROUP, RT.GROUP, RT.TRANSACTIONAL_ID, RT.CLUSTER]
OPERATIONS = [op for op in OP if op not in (OP.UNKNOWN, OP.ANY)]
COMMON_OPS = [OP.READ, OP.WRITE, OP.DESCRIBE, OP.ALL, OP.ALTER_CONFIGS, OP.DESCRIBE_CONFIGS, OP.ALTER]
STEMS = ["a", "ab", "abc", "abd", "b", "ba", "orders", "orders-eu", "orders-eu-1", "pay.", "pay.in", "_x"]
LOW_STEMS = ["!a", "!ab", "!b", "!abd", "#q", " s"]  # sort below "*": Kafka's defect inputs
ACL_PRINCIPALS = ["User:alice", "User:bob", "User:*", "User:*", "Group:ops", "User:a:b", "Group:*"]
REQUEST_PRINCIPALS = ["User:alice", "User:bob", "Group:ops", "User:a:b", "User:admin", "User:carol"]
ACL_HOSTS = ["*", "*", "10.0.0.1", "10.0.0.2"]
REQUEST_HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
DEFECT_ANSWERS = {"TIMEOUT", "THROW:StringIndexOutOfBoundsException"}
STEMS += ["*x", "*"]  # names that start with "*" (group names may)


@dataclass(frozen=True)
class Scenario:
    acls: list[AclBinding]
    super_users: list[str]
    allow_everyone: bool
    loading_complete: bool
    queries: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "super_users": self.super_users,
            "allow_everyone": self.allow_everyone,
            "loading_complete": self.loading_complete,
            "acls": [list(b.fields()) for b in self.acls],
            "queries": self.queries,
        }


def _below_wildcard(name: str) -> bool:
    return java_string_key(name) < java_string_key(WILDCARD_RESOURCE)


def _resource_name(rng: random.Random, rt: ResourceType, stems: list[str]) -> str:
    if rt is RT.CLUSTER:
        return "kafka-cluster"
    roll = rng.random()
    if roll < 0.08:
        return WILDCARD_RESOURCE
    stem = rng.choice(stems)
    if roll < 0.55:
        return stem
    return stem + rng.choice(["", "c", "-1", "x", "bc", "d"])


def _scenario(rng: random.Random, with_low_names: bool) -> Scenario:
    stems = STEMS + (LOW_STEMS if with_low_names else [])
    acls = []
    for _ in range(rng.randint(0, 30)):
        rt = rng.choice(TYPES)
        name = _resource_name(rng, rt, stems)
        pattern = rng.choice([PT.LITERAL, PT.PREFIXED]) if name != WILDCARD_RESOURCE else PT.LITERAL
        op = rng.choice(COMMON_OPS) if rng.random() < 0.7 else rng.choice(OPERATIONS)
        perm = PERM.DENY if rng.random() < 0.3 else PERM.ALLOW
        acls.append(
            AclBinding.of(rt, name, pattern, rng.choice(ACL_PRINCIPALS), rng.choice(ACL_HOSTS), op, perm)
        )
    acls = list(dict.fromkeys(acls))
    queries = []
    for _ in range(QUERIES_PER_SCENARIO):
        rt = rng.choice(TYPES)
        op = rng.choice(COMMON_OPS) if rng.random() < 0.6 else rng.choice(OPERATIONS)
        query: dict[str, Any] = {
            "principal": rng.choice(REQUEST_PRINCIPALS),
            "host": rng.choice(REQUEST_HOSTS),
            "op": op.name,
            "rt": rt.name,
        }
        if rng.random() < 0.25:
            query["kind"] = "by_type"
            if rng.random() < 0.02:
                query["rt"] = "ANY"  # refused by the argument checks on both sides
        else:
            query["kind"] = "authorize"
            name = rng.choice(acls).name if acls and rng.random() < 0.4 else _resource_name(rng, rt, stems)
            query["name"] = name + (rng.choice(["", "z", "bc"]) if rt is not RT.CLUSTER else "")
            query["guard"] = any(b.resource_type is rt and _below_wildcard(b.name) for b in acls)
        queries.append(query)
    return Scenario(
        acls=acls,
        super_users=rng.sample(["User:admin", "User:bob"], k=rng.choice([0, 0, 1, 2])),
        allow_everyone=rng.random() < 0.3,
        loading_complete=rng.random() > 0.05,
        queries=queries,
    )


def _by_type_scenario(rng: random.Random) -> Scenario:
    """Many ALLOW/DENY names sharing prefixes for one principal: exercises domination."""
    acls = []
    for _ in range(rng.randint(1, 24)):
        name = rng.choice(STEMS[:-2]) + rng.choice(["", "c", "-1", "x"])
        acls.append(
            AclBinding.of(
                RT.TOPIC,
                WILDCARD_RESOURCE if rng.random() < 0.04 else name,
                rng.choice([PT.LITERAL, PT.PREFIXED]),
                rng.choice(["User:bob", "User:bob", "User:*", "User:alice"]),
                rng.choice(["*", "10.0.0.1", "10.0.0.2"]),
                rng.choice([OP.READ, OP.READ, OP.ALL, OP.WRITE, OP.DESCRIBE]),
                PERM.DENY if rng.random() < 0.55 else PERM.ALLOW,
            )
        )
    queries = [
        {
            "kind": "by_type",
            "principal": rng.choice(["User:bob", "User:bob", "User:alice", "Group:x"]),
            "host": rng.choice(["10.0.0.1", "10.0.0.2"]),
            "op": rng.choice([OP.READ, OP.WRITE, OP.DESCRIBE]).name,
            "rt": "TOPIC",
        }
        for _ in range(QUERIES_PER_SCENARIO // 4)
    ]
    return Scenario(list(dict.fromkeys(acls)), [], rng.random() < 0.2, True, queries)


def kafka_defect(scenario: Scenario, query: dict[str, Any]) -> str | None:
    """Why Kafka cannot be trusted on this query, or None."""
    if query["kind"] != "authorize":
        return None
    if query.get("guard"):
        return "an ACL name of this type sorts below '*'"
    name, rt = query["name"], ResourceType.parse(query["rt"])
    has_wildcard = any(
        b.resource_type is rt and b.pattern_type is PT.LITERAL and b.name == WILDCARD_RESOURCE
        for b in scenario.acls
    )
    if has_wildcard and name.startswith(WILDCARD_RESOURCE) and name != WILDCARD_RESOURCE:
        return "the resource name starts with '*'"
    return None


def scenarios() -> list[Scenario]:
    rng = random.Random(SEED)
    return [_scenario(rng, with_low_names=index % 12 == 0) for index in range(SCENARIOS)] + [
        _by_type_scenario(rng) for _ in range(BY_TYPE_SCENARIOS)
    ]


# --- ours, and the intended rule restated --------------------------------------------------


def ours(index: InMemoryAclIndex, scenario: Scenario, query: dict[str, Any]) -> str:
    config = AuthorizerConfig.of(scenario.super_users, scenario.allow_everyone)
    op, rt = AclOperation.parse(query["op"]), ResourceType.parse(query["rt"])
    try:
        if query["kind"] == "by_type":
            decision = authorize_by_resource_type(
                index, config, query["principal"], query["host"], op, rt,
                loading_complete=scenario.loading_complete,
            )  # fmt: skip
        else:
            decision = authorize(
                index, config, query["principal"], query["host"], [Action(op, rt, query["name"])],
                loading_complete=scenario.loading_complete,
            )[0]  # fmt: skip
    except AuthorizerNotReadyError:
        return "THROW:AuthorizerNotReadyException"
    except InvalidActionError:
        return "THROW:IllegalArgumentException"
    return decision.result.value


IMPLIES = {
    OP.DESCRIBE: {OP.DESCRIBE, OP.READ, OP.WRITE, OP.DELETE, OP.ALTER},
    OP.DESCRIBE_CONFIGS: {OP.DESCRIBE_CONFIGS, OP.ALTER_CONFIGS},
}


def intended(scenario: Scenario, query: dict[str, Any]) -> str:
    """KIP-290's rule by brute force over all ACLs (for the inputs Kafka cannot answer)."""
    principal, host, name = query["principal"], query["host"], query["name"]
    op, rt = AclOperation.parse(query["op"]), ResourceType.parse(query["rt"])
    if principal in scenario.super_users:
        return "ALLOWED"
    if not scenario.loading_complete:
        return "THROW:AuthorizerNotReadyException"
    applicable = [
        b
        for b in scenario.acls
        if b.resource_type is rt
        and (
            (b.pattern_type is PT.LITERAL and b.name in (name, WILDCARD_RESOURCE))
            or (b.pattern_type is PT.PREFIXED and name.startswith(b.name))
        )
    ]

    def covers(b: AclBinding) -> bool:
        if b.operation in (OP.ALL, op):
            return True
        return b.permission_type is PERM.ALLOW and b.operation in IMPLIES.get(op, set())

    matching = [
        b for b in applicable if b.principal in (principal, "User:*") and b.host in (host, "*") and covers(b)
    ]
    if any(b.permission_type is PERM.DENY for b in matching):
        return "DENIED"
    if matching:
        return "ALLOWED"
    return "ALLOWED" if not applicable and scenario.allow_everyone else "DENIED"


# --- the test ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def harness() -> KafkaHarness:
    return KafkaHarness()


def test_ours_equals_kafkas_standard_authorizer(harness: KafkaHarness, tmp_path: Path) -> None:
    cases = scenarios()
    kafka_answers = harness.run_cases([s.to_json() for s in cases], tmp_path)
    tally: Counter[str] = Counter()
    mismatches = []
    for scenario, answers in zip(cases, kafka_answers, strict=True):
        index = InMemoryAclIndex(scenario.acls)
        for query, kafka in zip(scenario.queries, answers, strict=True):
            mine = ours(index, scenario, query)
            tally["cases"] += 1
            tally[query["kind"]] += 1
            tally[f"kafka {kafka}"] += 1
            defect = kafka_defect(scenario, query)
            if defect is not None and mine != kafka:
                # Kafka errs only where we know it does; there ours must be the intended answer
                tally["differs on a defect input"] += 1
                expected = intended(scenario, query)
            else:
                expected = kafka
            if mine != expected:
                mismatches.append((scenario.to_json(), query, kafka, mine, expected))
    assert not mismatches, f"{len(mismatches)} of {tally['cases']} differ; first: {mismatches[0]}"
    assert tally["cases"] >= MIN_CASES
    # the sample covers what it claims to
    assert tally["by_type"] >= 1000 and tally["kafka ALLOWED"] >= 1000 and tally["kafka DENIED"] >= 1000
    assert tally["kafka THROW:AuthorizerNotReadyException"] > 0
    assert tally["kafka THROW:IllegalArgumentException"] > 0
    assert tally["kafka TIMEOUT"] > 0 and tally["kafka THROW:StringIndexOutOfBoundsException"] > 0
    assert tally["differs on a defect input"] > tally["kafka TIMEOUT"]  # the '*'-name defect too
    print(f"differential: {dict(tally)}")


def test_intended_rule_agrees_with_kafka_where_kafka_answers(harness: KafkaHarness, tmp_path: Path) -> None:
    """The brute-force restatement used for defect inputs is itself checked against Kafka."""
    cases = scenarios()[:60]
    kafka_answers = harness.run_cases([s.to_json() for s in cases], tmp_path)
    compared = 0
    for scenario, answers in zip(cases, kafka_answers, strict=True):
        for query, kafka in zip(scenario.queries, answers, strict=True):
            if query["kind"] == "authorize" and kafka_defect(scenario, query) is None:
                compared += 1
                assert intended(scenario, query) == kafka, (scenario.to_json(), query)
    assert compared > 1000
