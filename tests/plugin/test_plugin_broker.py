"""The plugin on a real broker: Kafka clients are authorized by ``aclstore serve``.

A KRaft broker with SASL/PLAIN users admin, alice and bob runs the plugin as its authorizer;
the sidecar is the product's ``aclstore serve`` on the embedded log.  Expected outcomes are
Kafka's error codes for what each principal is granted, worked out by hand.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from broker_support import USERS, Sidecar, consume_one, plugin_broker, produce, wait_until
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

from devtools.kafka_process import BackgroundStart, LocalKafka, free_port
from replicator.properties import TOKEN_KEY, read_properties
from store.codec import decode_event
from store.events import AclCreated, AclDeleted
from store.log import EmbeddedChangeLog

pytestmark = pytest.mark.kafka

DENIED_TOPIC = KafkaError.TOPIC_AUTHORIZATION_FAILED


CACHE_SETTINGS: dict[str, dict[str, str]] = {
    "no-cache": {"aclstore.cache.lease.ms": "0"},
    "default": {},  # the cache under its lease: nothing the sidecar applied is answered stale
    "cache-300ms": {"aclstore.cache.max.staleness.ms": "300"},
}


@pytest.fixture(scope="module", params=list(CACHE_SETTINGS))
def cache_mode(request: pytest.FixtureRequest) -> str:
    """Every decision test holds without the cache, with it by default, and with a staleness
    bound; ACL administration (:func:`administration_by_default`) runs in the default mode."""
    return str(request.param)


def administration_by_default(cache_mode: str) -> None:
    """Skip an ACL administration test outside the default cache mode.

    The plugin's ``createAcls``, ``deleteAcls`` and ``acls`` forward to the sidecar and never
    read or fill the decision cache, so the three modes run the same administration code; what
    the modes change, the decisions that follow a grant or a removal, is what the other tests
    of this file check in every mode.  The default (the leased cache) is the mode a broker
    runs unless told otherwise, and the one whose guarantee an immediate check after a removal
    relies on.
    """
    if cache_mode != "default":
        pytest.skip("ACL administration does not use the cache: run in the default mode only")


@pytest.fixture(scope="module")
def staleness_ms(cache_mode: str) -> int:
    """``aclstore.cache.max.staleness.ms``: 0 unless a bound is set."""
    return int(CACHE_SETTINGS[cache_mode].get("aclstore.cache.max.staleness.ms", "0"))


@dataclass
class Deployment:
    """One cache mode's sidecar and plugin broker, the broker's start under way."""

    sidecar: Sidecar
    broker: LocalKafka
    starting: BackgroundStart


@pytest.fixture(scope="module")
def deployments(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Deployment]]:
    """A sidecar and a broker for each cache mode this run has tests for, the brokers started
    at once: the later modes' brokers come up while the first mode's tests run.  Each mode
    keeps its own sidecar and broker (a broker's cache settings are fixed at its start)."""
    modes = [
        mode for mode in CACHE_SETTINGS
        if any(getattr(item, "callspec", None) is not None
               and item.callspec.params.get("cache_mode") == mode
               and item.module is request.module for item in request.session.items)
    ]  # fmt: skip
    sidecars: dict[str, Sidecar] = {}
    for mode in modes:
        sidecar = Sidecar(tmp_path_factory.mktemp(f"sidecar-{mode}") / "data")
        while sidecar.port in {s.port for s in sidecars.values()}:  # none bound yet: pick again
            sidecar.port = free_port()
        sidecars[mode] = sidecar
    started: dict[str, Deployment] = {}
    try:
        # The sidecars first (the plugin reads the credential each writes, at configure), all
        # at once; then each mode's broker.
        with ThreadPoolExecutor(max_workers=len(CACHE_SETTINGS)) as pool:
            for ready in [pool.submit(sidecar.start) for sidecar in sidecars.values()]:
                ready.result()
        for mode, sidecar in sidecars.items():
            broker = plugin_broker(tmp_path_factory.mktemp(f"kafka-{mode}"), sidecar,
                                   **CACHE_SETTINGS[mode])  # fmt: skip
            started[mode] = Deployment(sidecar, broker, broker.start_in_background())
        yield started
    finally:
        for deployment in started.values():
            deployment.starting.join(130)
            deployment.broker.stop()
        for sidecar in sidecars.values():
            sidecar.stop()


@pytest.fixture(scope="module")
def sidecar(deployments: dict[str, Deployment], cache_mode: str) -> Sidecar:
    return deployments[cache_mode].sidecar


@pytest.fixture(scope="module")
def broker(deployments: dict[str, Deployment], cache_mode: str) -> LocalKafka:
    deployment = deployments[cache_mode]
    deployment.starting.join(130)
    assert not deployment.starting.failures, deployment.starting.failures
    b = deployment.broker
    assert b.running, f"the {cache_mode} broker did not start; see {b.log_path}"
    admin = AdminClient(b.client_config("admin"))
    futures = admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "payments")])
    for future in futures.values():
        future.result(timeout=30)
    return b


def _eventually_produce(broker: LocalKafka, user: str, topic: str, expected: int) -> None:
    """The sidecar applies a change a few ms after ``acls`` returns: retry for a few seconds."""
    seen: list[int] = []

    def check() -> bool:
        seen.append(produce(broker, user, topic, timeout=5))
        return seen[-1] == expected

    wait_until(check, 20, f"{user}'s produce to {topic} to give code {expected} (saw {seen})")


def test_grants_and_revocations_in_the_store_decide_produce(
    broker: LocalKafka, sidecar: Sidecar
) -> None:
    assert produce(broker, "alice", "orders") == DENIED_TOPIC
    assert produce(broker, "admin", "orders") == 0  # a super user, decided in the plugin
    sidecar.cli("acls", "--add", "--allow-principal", "User:alice", "--producer", "--topic", "orders")
    _eventually_produce(broker, "alice", "orders", 0)
    assert produce(broker, "alice", "payments") == DENIED_TOPIC
    assert produce(broker, "bob", "orders") == DENIED_TOPIC
    sidecar.cli("acls", "--remove", "--force", "--allow-principal", "User:alice", "--producer",
                "--topic", "orders")  # fmt: skip
    _eventually_produce(broker, "alice", "orders", DENIED_TOPIC)


def test_without_the_sidecar_the_broker_fails_closed_and_recovers_without_a_restart(
    broker: LocalKafka, sidecar: Sidecar
) -> None:
    sidecar.cli("acls", "--add", "--allow-principal", "User:alice", "--producer", "--topic", "payments")
    _eventually_produce(broker, "alice", "payments", 0)
    sidecar.stop()
    try:
        # The cache drops everything the moment its long-poll breaks; in any case within the
        # bound (300 ms), shorter than a client's round trip of metadata and produce.
        assert produce(broker, "alice", "payments") == DENIED_TOPIC
        assert produce(broker, "admin", "payments") == 0
        log = broker.log_path.read_text(errors="replace")
        assert re.search(r"failing closed: denied \d+ action\(s\) of User:alice", log), log[-3000:]
    finally:
        sidecar.start()
    _eventually_produce(broker, "alice", "payments", 0)
    assert "answers again" in broker.log_path.read_text(errors="replace")
    assert consume_one(broker, "bob", "payments", "bob-group") != 0  # bob holds nothing


# --- ACL administration through the broker (KIP-140) ------------------------------------------

Row = tuple[str, str, str, str, str, str, str]


def _row(b: Any) -> Row:
    """A confluent-kafka AclBinding as the store's JSON names it."""
    return (b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host,
            b.operation.name, b.permission_type.name)  # fmt: skip


def _store_rows(sidecar: Sidecar, principal: str) -> set[Row]:
    """What the store itself reports, asked over its own API with the node's credential."""
    token = read_properties(sidecar.command_config)[TOKEN_KEY]
    request = urllib.request.Request(
        f"{sidecar.url}/v1/acls/describe",
        data=json.dumps({"filter": {"principal": principal}}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        bindings = json.loads(response.read())["bindings"]
    keys = ("resourceType", "resourceName", "patternType", "principal", "host", "operation",
            "permissionType")  # fmt: skip
    return {tuple(b[k] for k in keys) for b in bindings}  # type: ignore[misc]


def _actors(sidecar: Sidecar) -> list[tuple[str, str, str]]:
    """(event, actor, binding principal) of every ACL change in the store's log."""
    log = EmbeddedChangeLog(sidecar.data_dir / "log")
    try:
        events = [decode_event(r.value) for r in log.read(0, timeout=2.0) if r.value]
    finally:
        log.close()
    return [
        (type(e).__name__, str(e.actor), e.binding.principal)
        for e in events if isinstance(e, AclCreated | AclDeleted)
    ]  # fmt: skip


def test_admin_client_acls_land_in_the_store_and_are_enforced(
    broker: LocalKafka, sidecar: Sidecar, cache_mode: str
) -> None:
    administration_by_default(cache_mode)
    admin = AdminClient(broker.client_config("admin"))
    admin.create_topics([NewTopic("ledger", 1, 1)])["ledger"].result(timeout=30)
    assert produce(broker, "admin", "ledger") == 0
    assert consume_one(broker, "bob", "ledger", "bob-g") != 0

    # alice may administer ACLs (ALTER on the CLUSTER) but holds nothing else.
    sidecar.cli("acls", "--add", "--allow-principal", "User:alice", "--operation", "Alter",
                "--cluster")  # fmt: skip
    read_ledger = AclBinding(ResourceType.TOPIC, "ledger", ResourcePatternType.LITERAL,
                             "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW)
    read_groups = AclBinding(ResourceType.GROUP, "bob-", ResourcePatternType.PREFIXED,
                             "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW)
    deny_write = AclBinding(ResourceType.TOPIC, "led", ResourcePatternType.PREFIXED,
                            "User:bob", "*", AclOperation.WRITE, AclPermissionType.DENY)
    as_alice = AdminClient(broker.client_config("alice"))
    wait_until(lambda: _created(as_alice, [read_ledger, read_groups, deny_write]), 20,
               "alice's create_acls to succeed")  # fmt: skip
    as_bob = AdminClient(broker.client_config("bob"))
    with pytest.raises(KafkaException) as refused:
        as_bob.create_acls([deny_write])[deny_write].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    expected = {_row(b) for b in (read_ledger, read_groups, deny_write)}
    match = AclBindingFilter(ResourceType.TOPIC, "ledger", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob", None,
                             AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    matched = {_row(b) for b in admin.describe_acls(match).result(timeout=30)}
    assert matched == {_row(read_ledger), _row(deny_write)}  # the prefix "led" applies too
    listed = {_row(b) for b in admin.describe_acls(every).result(timeout=30)}
    assert listed == expected == _store_rows(sidecar, "User:bob")

    assert consume_one(broker, "bob", "ledger", "bob-g") == 0
    assert produce(broker, "bob", "ledger") == DENIED_TOPIC

    drop = AclBindingFilter(ResourceType.TOPIC, "ledger", ResourcePatternType.LITERAL, None,
                            None, AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    deleted = admin.delete_acls([drop])[drop].result(timeout=30)
    assert [_row(b) for b in deleted] == [_row(read_ledger)]
    assert _store_rows(sidecar, "User:bob") == {_row(read_groups), _row(deny_write)}
    assert consume_one(broker, "bob", "ledger", "bob-g2") == DENIED_TOPIC

    actors = _actors(sidecar)
    assert ("AclCreated", "User:alice", "User:bob") in actors
    assert [a for a in actors if a[0] == "AclDeleted" and a[2] == "User:bob"] == [
        ("AclDeleted", "User:admin", "User:bob")
    ]
    assert not any(a[1] == "User:bob" for a in actors)


def _created(admin: AdminClient, bindings: list[AclBinding]) -> bool:
    try:
        for future in admin.create_acls(bindings).values():
            future.result(timeout=30)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            return False  # the sidecar has not applied alice's grant yet
        raise
    return True


def _sidecar_decisions(sidecar: Sidecar) -> float:
    with urllib.request.urlopen(f"{sidecar.url}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(
        float(m.group(1))
        for m in re.finditer(r'^aclstore_decisions_total\{[^}]*endpoint="authorize"[^}]*\} (\S+)$',
                             text, re.MULTILINE)
    )  # fmt: skip


def test_the_cache_answers_repeats_and_a_revocation_still_lands_within_the_bound(
    broker: LocalKafka, sidecar: Sidecar, cache_mode: str, staleness_ms: int
) -> None:
    sidecar.cli("acls", "--add", "--allow-principal", "User:alice", "--producer", "--topic", "orders")
    _eventually_produce(broker, "alice", "orders", 0)
    before = _sidecar_decisions(sidecar)
    for _ in range(5):
        assert produce(broker, "alice", "orders") == 0
    asked = _sidecar_decisions(sidecar) - before
    if cache_mode == "no-cache":
        assert asked >= 10  # each produce asks at least DESCRIBE (metadata) and WRITE
    else:
        assert asked <= 2, asked  # repeats come from the cache while nothing changes
    sidecar.cli("acls", "--remove", "--force", "--allow-principal", "User:alice", "--producer",
                "--topic", "orders")  # fmt: skip
    time.sleep(staleness_ms / 1000 + 0.2)  # the bound, plus the sidecar applying the removal
    assert produce(broker, "alice", "orders") == DENIED_TOPIC


def test_by_default_a_removal_the_node_has_applied_is_never_answered_from_the_cache(
    broker: LocalKafka, sidecar: Sidecar, cache_mode: str
) -> None:
    if cache_mode != "default":
        pytest.skip("the default lease's guarantee; a staleness bound allows that much")
    grant = ("--allow-principal", "User:alice", "--producer", "--topic", "orders")
    for _ in range(3):
        sidecar.cli("acls", "--add", *grant)
        _eventually_produce(broker, "alice", "orders", 0)
        before = _sidecar_decisions(sidecar)
        assert produce(broker, "alice", "orders") == 0
        assert _sidecar_decisions(sidecar) - before <= 2  # answered from the cache
        out = sidecar.cli("acls", "--remove", "--force", *grant, "--format", "json")
        removed = json.loads(out)["offset"]
        out = sidecar.cli("authorize", "--principal", "User:alice", "--operation", "Write",
                          "--topic", "orders", "--min-offset", str(removed))  # fmt: skip
        assert out.startswith("DENIED"), out
        assert produce(broker, "alice", "orders") == DENIED_TOPIC  # at once: no stale allow


def test_aclstore_acls_through_the_broker_as_kafka_acls_sh(
    broker: LocalKafka, sidecar: Sidecar, tmp_path: Path, cache_mode: str
) -> None:
    """``aclstore acls --bootstrap-server`` with a Java client properties file, as a copied
    kafka-acls.sh line: the ACLs land in the store (actor: the SASL user), listing through the
    broker prints what listing through the node prints, and they are enforced."""
    administration_by_default(cache_mode)
    # alice may administer and list ACLs (ALTER and DESCRIBE on the CLUSTER), nothing else.
    for operation in ("Alter", "Describe"):
        sidecar.cli("acls", "--add", "--allow-principal", "User:alice", "--operation", operation,
                    "--cluster")  # fmt: skip
    client = tmp_path / "alice-client.properties"
    client.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="alice" password="{USERS["alice"]}";\n'
    )
    through = ["--bootstrap-server", broker.bootstrap_servers, "--command-config", str(client)]

    def aclstore(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli", "acls", *args], capture_output=True,
            text=True, check=False, timeout=60,
        )  # fmt: skip

    def audit_log_actors() -> set[tuple[str, str]]:
        log = EmbeddedChangeLog(sidecar.data_dir / "log")
        try:
            events = [decode_event(r.value) for r in log.read(0, timeout=2.0) if r.value]
        finally:
            log.close()
        return {
            (type(e).__name__, str(e.actor)) for e in events
            if isinstance(e, AclCreated | AclDeleted) and e.binding.name == "audit-log"
        }  # fmt: skip

    added = aclstore(*through, "--add", "--allow-principal", "User:bob", "--consumer",
                     "--topic", "audit-log", "--group", "auditors")  # fmt: skip
    assert added.returncode == 0, added.stdout + added.stderr
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=audit-log" in added.stdout
    assert added.stderr == ""  # a broker's answer carries no log offset
    listing = ["--list", "--topic", "audit-log", "--group", "auditors"]
    by_broker = aclstore(*through, *listing)
    assert by_broker.returncode == 0, by_broker.stdout
    assert by_broker.stdout == sidecar.cli("acls", "--store", sidecar.url, *listing)
    assert "\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in by_broker.stdout
    assert audit_log_actors() == {("AclCreated", "User:alice")}

    removed = aclstore(*through, "--remove", "--force", "--allow-principal", "User:bob",
                       "--consumer", "--topic", "audit-log", "--group", "auditors")  # fmt: skip
    assert (removed.returncode, removed.stdout) == (0, ""), removed.stderr
    assert not any(row[1] in ("audit-log", "auditors") for row in _store_rows(sidecar, "User:bob"))
    assert audit_log_actors() == {("AclCreated", "User:alice"), ("AclDeleted", "User:alice")}

    refused = aclstore("--bootstrap-controller", broker.bootstrap_servers, "--list")
    assert refused.returncode == 1 and "--bootstrap-server" in refused.stderr
