"""A cold start where the sidecar's change log is a topic on the very broker it authorizes.

The broker's client listener waits for the plugin's ``start()`` future, which waits for the
sidecar to be ready; the sidecar must read the ACL log from that broker.  The way out, as
Kafka's ``StandardAuthorizer`` has it for the controller listener: an ``INTERNAL``
SASL_PLAINTEXT listener in ``early.start.listeners`` (which then names ``CONTROLLER`` too), its
user ``User:aclstore`` in the plugin's own ``super.users`` so that fail-closed lets it through,
and ``aclstore serve --log-config`` giving the sidecar's Kafka clients that user.

Nothing ran before: the broker starts first (its client listener stays shut), then the sidecar
creates its topic and reads it over ``INTERNAL``; the client listener opens once it is ready.
The plugin's credential file (the sidecar's ``admin.properties``) did not exist when the
broker configured the plugin: ACL administration through the broker reads it when needed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from broker_support import SUPER_USERS, USERS, Sidecar, consume_one, produce, wait_until
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from devtools.java import SHORT_RUN_JVM_OPTIONS
from devtools.kafka_process import INTERNAL_LISTENER, LocalKafka
from devtools.plugin import AUTHORIZER_CLASS, plugin_jar

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # a broker's cold start: about a minute

SIDECAR_USER = "aclstore"
SASL_USERS = {**USERS, SIDECAR_USER: "aclstore-secret"}


def _eventually(code: Callable[[], int], expected: int, what: str) -> None:
    """The sidecar applies a change a few ms after it is written: retry for a while."""
    seen: list[int] = []

    def check() -> bool:
        seen.append(code())
        return seen[-1] == expected

    wait_until(check, 30, f"{what} to give code {expected} (saw {seen})")


def _ready_line(endpoint: str) -> str:
    return f"authorizerStart completed for endpoint {endpoint}."


def _log_config(path: Path) -> Path:
    """The sidecar's Kafka client properties, as an operator writes them for any Kafka tool."""
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{SIDECAR_USER}" password="{SASL_USERS[SIDECAR_USER]}";\n'
    )
    return path


def test_broker_and_sidecar_start_cold_with_the_log_on_that_broker(tmp_path: Path) -> None:
    sidecar = Sidecar(tmp_path / "sidecar")  # started below, after the broker
    broker = LocalKafka(
        tmp_path / "kafka",
        sasl_users=SASL_USERS,
        extra_classpath=[plugin_jar()],
        jvm_options=SHORT_RUN_JVM_OPTIONS,
        internal_listener=True,
        overrides={
            "authorizer.class.name": AUTHORIZER_CLASS,
            "super.users": f"{SUPER_USERS};User:{SIDECAR_USER}",
            "aclstore.url": sidecar.url,
            "aclstore.command.config": str(sidecar.command_config),
            "aclstore.request.timeout.ms": "2000",
        },
    )
    assert not sidecar.command_config.exists()
    sidecar.extra_args = (
        "--bootstrap-servers", broker.internal_bootstrap_servers,
        "--topic", "aclstore-acls",
        "--log-config", str(_log_config(tmp_path / "sidecar-kafka.properties")),
    )  # fmt: skip
    starter = broker.start_in_background(timeout=180)
    try:
        wait_until(lambda: broker.log_path.exists()
                   and _ready_line(INTERNAL_LISTENER) in broker.log_path.read_text(errors="replace"),
                   90, "the internal listener to open")  # fmt: skip
        log = broker.log_path.read_text(errors="replace")
        assert _ready_line("CONTROLLER") in log
        assert _ready_line("SASL") not in log  # the client listener waits for the sidecar
        sidecar.start(timeout=90)  # creates its topic and reads it over INTERNAL
        starter.join(120)
        assert not starter.failures, starter.failures
        assert _ready_line("SASL") in broker.log_path.read_text(errors="replace")

        admin = AdminClient(broker.client_config("admin"))
        for future in admin.create_topics([NewTopic("orders", 1, 1)]).values():
            future.result(timeout=30)
        assert produce(broker, "alice", "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
        sidecar.cli("acls", "--add", "--allow-principal", "User:alice", "--producer",
                    "--topic", "orders")  # fmt: skip
        _eventually(lambda: produce(broker, "alice", "orders", timeout=5), 0, "alice's produce")

        # ACL administration through the broker: the plugin reads the credential file that
        # the sidecar wrote after the broker had started.
        grant = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:bob",
                           "*", AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
        for future in admin.create_acls([grant]).values():
            future.result(timeout=30)
        group = AclBinding(ResourceType.GROUP, "g", ResourcePatternType.LITERAL, "User:bob",
                           "*", AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
        for future in admin.create_acls([group]).values():
            future.result(timeout=30)
        _eventually(lambda: consume_one(broker, "bob", "orders", "g", timeout=5), 0, "bob's consume")
    finally:
        starter.join(200)
        sidecar.stop()
        broker.stop()
