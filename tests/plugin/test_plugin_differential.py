"""A differential: the plugin answers Kafka clients as Kafka's own ``StandardAuthorizer`` does.

Two brokers with the same SASL users and super users: one authorized by the plugin (with
``aclstore serve`` as its sidecar), one by ``org.apache.kafka.metadata.authorizer.
StandardAuthorizer``.  The same randomized ACLs (prefixed DENYs, wildcard names and the
``User:*`` principal always among them) are created on both through confluent-kafka's
AdminClient, then the same produce, consume, describe-topic and create-topic requests run on
both as ``alice`` and ``bob``: every Kafka error code must agree.  The expectation is Kafka's
own authorizer, not our code.
"""

from __future__ import annotations

import contextlib
import json
import random
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from broker_support import (
    SUPER_USERS,
    USERS,
    Sidecar,
    consume_one,
    plugin_broker,
    produce,
    wait_until,
)
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from devtools.java import SHORT_RUN_JVM_OPTIONS
from devtools.kafka_process import LocalKafka

pytestmark = pytest.mark.kafka

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPICS = ("orders", "orders-eu", "payments", "pay")
GROUPS = ("g-app", "gx")
PRINCIPALS = ("User:alice", "User:bob", "User:*")
TOPIC_NAMES = ("orders", "orders-eu", "payments", "pay", "*")
TOPIC_PREFIXES = ("ord", "pay", "orders-", "new-")
GROUP_NAMES = ("g-app", "gx", "*")
GROUP_PREFIXES = ("g-", "g")
EVERYTHING = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
OPERATIONS = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE,
              AclOperation.CREATE, AclOperation.ALL)  # fmt: skip


def _random_bindings(rng: random.Random, count: int) -> list[AclBinding]:
    """``count`` distinct bindings, always with a prefixed DENY and both kinds of wildcard."""

    def one(rt: ResourceType, prefixed: bool, permission: AclPermissionType) -> AclBinding:
        if rt is ResourceType.BROKER:
            name, pattern = "kafka-cluster", ResourcePatternType.LITERAL
        elif prefixed:
            name = rng.choice(TOPIC_PREFIXES if rt is ResourceType.TOPIC else GROUP_PREFIXES)
            pattern = ResourcePatternType.PREFIXED
        else:
            name = rng.choice(TOPIC_NAMES if rt is ResourceType.TOPIC else GROUP_NAMES)
            pattern = ResourcePatternType.LITERAL
        op = AclOperation.CREATE if rt is ResourceType.BROKER else rng.choice(OPERATIONS)
        return AclBinding(rt, name, pattern, rng.choice(PRINCIPALS), "*", op, permission)

    out = {
        one(ResourceType.TOPIC, True, AclPermissionType.DENY),
        AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, rng.choice(PRINCIPALS),
                   "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, rng.choice(TOPIC_PREFIXES), ResourcePatternType.PREFIXED,
                   "User:*", "*", rng.choice(OPERATIONS), AclPermissionType.ALLOW),
    }  # fmt: skip
    while len(out) < count:
        rt = rng.choices(
            (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.BROKER), (6, 3, 1)  # BROKER: the CLUSTER
        )[0]
        permission = AclPermissionType.DENY if rng.random() < 0.25 else AclPermissionType.ALLOW
        out.add(one(rt, rng.random() < 0.4, permission))
    return sorted(out, key=str)


@dataclass(frozen=True)
class Pair:
    ours: LocalKafka
    theirs: LocalKafka
    sidecar: Sidecar

    def __iter__(self) -> Iterator[LocalKafka]:
        return iter((self.ours, self.theirs))


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    theirs = LocalKafka(
        Path(tmp_path_factory.mktemp("diff-standard")), heap="512m", sasl_users=USERS,
        jvm_options=SHORT_RUN_JVM_OPTIONS,
        overrides={"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": SUPER_USERS},
    )  # fmt: skip
    # Kafka's own authorizer waits for nothing of ours: its broker starts meanwhile.
    theirs_started = theirs.start_in_background()
    sidecar = Sidecar(tmp_path_factory.mktemp("diff-sidecar") / "data")
    ours = plugin_broker(tmp_path_factory.mktemp("diff-ours"), sidecar)
    ours.heap = "512m"
    try:
        sidecar.start()
        ours.start()
        theirs_started.join(130)
        assert not theirs_started.failures, theirs_started.failures
        assert theirs.running, "Kafka's own broker did not start within 130 s"
        for broker in (ours, theirs):
            admin = AdminClient(broker.client_config("admin"))
            for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
                future.result(timeout=30)
            for topic in TOPICS:
                assert produce(broker, "admin", topic) == 0
        yield Pair(ours, theirs, sidecar)
    finally:
        theirs_started.join(130)
        ours.stop()
        theirs.stop()
        sidecar.stop()


def _listed(pair: Pair, broker: LocalKafka, expected: list[str]) -> list[str]:
    """DescribeAcls of everything on ``broker``, sorted, once its authorizer has applied
    ``expected``.

    The plugin answers from the sidecar's admin API, which reads its log to the end first: what
    a CreateAcls or DeleteAcls acknowledged is listed at once, so it is listed once.  A KRaft
    broker's ``StandardAuthorizer`` applies ACL records from the metadata log after the
    controller acknowledged them (Kafka's own tests wait for that, ``waitAndVerifyAcls``), so
    its listing is awaited; the last one read is returned either way for the caller to compare.
    """
    admin = AdminClient(broker.client_config("admin"))
    listed: list[str] = []

    def read() -> bool:
        nonlocal listed
        listed = sorted(map(str, admin.describe_acls(EVERYTHING).result(timeout=30)))
        return listed == expected

    if broker is pair.ours:
        read()
    else:
        with contextlib.suppress(AssertionError):  # the caller's comparison shows the difference
            wait_until(read, 30, f"{broker} to apply the ACLs its controller acknowledged")
    return listed


def _sidecar_applied(pair: Pair, count: int) -> None:
    """Wait until the plugin's sidecar's replica holds ``count`` bindings: what the plugin decides
    from (its cache is leased, so what the replica applied is what the plugin answers from)."""

    def applied() -> bool:
        with urllib.request.urlopen(f"{pair.sidecar.url}/v1/status", timeout=5) as response:
            return bool(json.loads(response.read())["bindings"] == count)

    wait_until(applied, 30, "the sidecar's replica to apply the ACLs")


def _outcomes(broker: LocalKafka, round_: int) -> dict[str, int]:
    """Kafka error codes (0: success) of the same requests as alice and bob."""
    out: dict[str, int] = {}
    for user in ("alice", "bob"):
        client = AdminClient(broker.client_config(user))
        metadata = client.list_topics(timeout=30)
        for topic in TOPICS:
            out[f"{user} produce {topic}"] = produce(broker, user, topic, timeout=10)
            seen = metadata.topics.get(topic)
            out[f"{user} sees {topic} in metadata"] = int(seen is not None and seen.error is None)
        for topic, group in (("orders", "g-app"), ("payments", "gx")):
            out[f"{user} consume {topic} in {group}"] = consume_one(
                broker, user, topic, f"{group}", timeout=10
            )
        for name in (f"new-{user}-{round_}", f"other-{user}-{round_}"):
            try:
                client.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
                out[f"{user} create {name}"] = 0
            except KafkaException as exc:
                out[f"{user} create {name}"] = int(exc.args[0].code())
    return out


@pytest.mark.parametrize("seed", [13, 24, 38])  # no CLUSTER ACL; a CLUSTER DENY to User:*; mixed
def test_the_plugin_decides_as_standard_authorizer_does(brokers: Pair, seed: int) -> None:
    bindings = _random_bindings(random.Random(seed), 24)
    expected = sorted(map(str, bindings))
    results = []
    for broker in brokers:
        admin = AdminClient(broker.client_config("admin"))
        admin.delete_acls([EVERYTHING])[EVERYTHING].result(timeout=30)
        for future in admin.create_acls(bindings).values():
            future.result(timeout=30)
        assert _listed(brokers, broker, expected) == expected
    _sidecar_applied(brokers, len(bindings))
    for broker in brokers:
        results.append(_outcomes(broker, seed))
    ours, theirs = results
    differences = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
    assert differences == {}, f"plugin vs StandardAuthorizer on {bindings}"
    # The randomized ACLs must exercise both answers, or the comparison says little.
    codes = set(theirs.values())
    assert 0 in codes and KafkaError.TOPIC_AUTHORIZATION_FAILED in codes, theirs


def _per_item(futures: dict[Any, Any]) -> list[tuple[str, str, str]]:
    out = []
    for item, future in futures.items():
        try:
            result = future.result(timeout=30)
            out.append((str(item), "NONE", str(sorted(map(str, result or [])))))
        except KafkaException as exc:
            out.append((str(item), exc.args[0].name(), exc.args[0].str()))
    return sorted(out)


def test_per_item_create_and_delete_results_match_kafkas_own(brokers: Pair) -> None:
    """KIP-140: one bad binding fails alone, with Kafka's error code and message."""
    topic, group = ResourceType.TOPIC, ResourceType.GROUP
    literal, prefixed = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    read, allow = AclOperation.READ, AclPermissionType.ALLOW
    creations = [
        AclBinding(topic, "a", literal, "User:bob", "*", read, allow),
        AclBinding(topic, "b", literal, "bob", "*", read, allow),  # no principal type
        AclBinding(topic, "", literal, "User:bob", "*", read, allow),  # empty name
        AclBinding(topic, "c", literal, "User:bob", "10.0.0.1", read, allow),
        AclBinding(group, "g", prefixed, "User:bob", "*", AclOperation.WRITE, AclPermissionType.DENY),
    ]  # fmt: skip
    any_op, any_perm = AclOperation.ANY, AclPermissionType.ANY
    deletions = [
        AclBindingFilter(topic, None, ResourcePatternType.ANY, "User:bob", None, read, allow),
        AclBindingFilter(group, "g-x", ResourcePatternType.MATCH, None, None, any_op, any_perm),
        AclBindingFilter(topic, "nothing", literal, None, None, any_op, any_perm),
    ]
    answers = []
    for broker in brokers:
        admin = AdminClient(broker.client_config("admin"))
        admin.delete_acls([EVERYTHING])[EVERYTHING].result(timeout=30)
        created = _per_item(admin.create_acls(creations))
        listed = _listed(brokers, broker, sorted(b for b, code, _ in created if code == "NONE"))
        deleted = _per_item(admin.delete_acls(deletions))
        left = _listed(brokers, broker, [])
        answers.append((created, listed, deleted, left))
    ours, theirs = answers
    assert ours == theirs
    assert [r[1] for r in theirs[0]].count("INVALID_REQUEST") == 2  # the two bad ones only
    assert theirs[3] == []  # the three deletions took everything that was created
