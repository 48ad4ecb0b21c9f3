"""``docker/``: the brokers run aclstore's authorizer plugin and the cluster starts cold.

No Docker engine here: the brokers' settings are read as the apache/kafka image turns them into
server properties and checked by Kafka's own ``KafkaConfig``; the plugin is built from
``plugin/`` in a Maven stage of the Dockerfile onto an apache/kafka image.  An early-start SASL
``INTERNAL`` listener carries inter-broker traffic and the sidecars' log clients, whose user
(from ``docker/make-sasl.sh``, run here too) is one of the plugin's super users; and kafka-1
with its sidecar, configured as compose configures them, start cold on this machine.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from docker_support import (
    BROKERS,
    ROOT,
    SIDECARS,
    broker_properties,
    compose,
    compose_sidecar_here,
    here,
    listeners,
    mounted_volume,
    option,
    sidecar_command,
    stage,
    stage_base,
    start_node,
)


@pytest.mark.unit
def test_compose_brokers_are_kafka_with_the_plugin_built_from_source() -> None:
    from devtools.maven import KAFKA_VERSION
    from devtools.plugin import ARTIFACT

    services = compose()["services"]
    for name in BROKERS:
        assert services[name]["build"]["target"] == "broker"
    assert stage_base("broker") == f"apache/kafka:{KAFKA_VERSION}"  # what the tests run
    copies = [value.split() for op, value in stage("broker") if op == "COPY"]
    assert len(copies) == 1 and copies[0][0] == "--from=plugin-build"
    assert copies[0][-1] == "/opt/kafka/libs/"  # beside Kafka's jars: on the broker's classpath
    built = " ".join(value for op, value in stage("plugin-build") if op == "RUN")
    assert "mvn" in built and " package " in built and "-Dkafka.version=${KAFKA_VERSION}" in built
    assert f"target/{ARTIFACT}-" in built and copies[0][1].endswith(f"/{ARTIFACT}.jar")
    sources = [value.split()[0] for op, value in stage("plugin-build") if op == "COPY"]
    assert set(sources) == {"plugin/pom.xml", "plugin/src"}  # from source, nothing prebuilt
    assert not list((ROOT / "plugin").rglob("*.jar")) or all(
        "target" in p.parts for p in (ROOT / "plugin").rglob("*.jar")
    )


@pytest.mark.unit
def test_compose_cold_start_wiring_plugin_internal_listener_and_sasl(tmp_path: Path) -> None:
    """What a cold start of the whole cluster needs (no Docker engine here to run it)."""
    from devtools.plugin import AUTHORIZER_CLASS
    from replicator.properties import read_properties
    from store.log.client_properties import KafkaClientProperties

    services = compose()["services"]
    made = tmp_path / "sasl"
    subprocess.run(["sh", str(ROOT / "docker" / "make-sasl.sh"), str(made)], check=True,
                   capture_output=True)  # fmt: skip
    jaas = (made / "kafka_server_jaas.conf").read_text()
    sasl_dir = "/var/lib/aclstore/sasl"
    assert sasl_dir in services["certs"]["entrypoint"][2]
    assert mounted_volume("certs", f"{sasl_dir}/x") == "sasl"
    for broker, sidecar in zip(BROKERS, SIDECARS, strict=True):
        props = broker_properties(broker)
        env = services[broker]["environment"]
        assert props["authorizer.class.name"] == AUTHORIZER_CLASS
        bound = listeners(props["listeners"])
        protocols = dict(item.split(":") for item in props["listener.security.protocol.map"].split(","))
        # No PLAINTEXT listener: no caller is User:ANONYMOUS, so super.users need not hold it.
        assert set(protocols.values()) == {"SASL_PLAINTEXT"} and set(bound) <= set(protocols)
        # Naming early.start.listeners replaces its default (the controller listeners), and
        # KafkaConfig.earlyStartListeners refuses a name that is not one of this node's
        # listeners: CONTROLLER on the controller node only.
        early = set(props["early.start.listeners"].split(","))
        controller = set(props["controller.listener.names"].split(",")) & set(bound)
        assert early == {"INTERNAL"} | controller and early <= set(bound)
        if "controller" in props["process.roles"].split(","):
            assert controller == {"CONTROLLER"}
        assert props["inter.broker.listener.name"] == "INTERNAL"
        # Only loopback is published: the API of the sidecar, never a Kafka listener.
        for published in services[broker]["ports"]:
            host_ip, _, target = published.split(":")
            assert host_ip == "127.0.0.1" and int(target) not in {p for _, p in bound.values()}
        # The broker logs in with the JAAS file make-sasl.sh writes, from the sasl volume.
        jaas_path = env["KAFKA_OPTS"].split("java.security.auth.login.config=")[1].split()[0]
        assert mounted_volume(broker, jaas_path) == "sasl"
        assert (made / Path(jaas_path).name).is_file()
        broker_user = re.search(r'username="([^"]+)"', jaas)
        assert broker_user is not None
        supers = set(props["super.users"].split(";"))
        assert "User:ANONYMOUS" not in supers
        # The sidecar reads the log over INTERNAL as its own SASL user, a super user of the
        # plugin (fail-closed never locks it out), whose password the brokers know.
        command = sidecar_command(sidecar)
        log_config = option(command, "--log-config")
        assert mounted_volume(sidecar, log_config) == "sasl"
        client = KafkaClientProperties.from_java(read_properties(made / Path(log_config).name))
        settings = client.librdkafka()
        assert settings["security.protocol"] == protocols["INTERNAL"]
        assert f'user_{settings["sasl.username"]}="{settings["sasl.password"]}"' in jaas
        assert {f"User:{settings['sasl.username']}", f"User:{broker_user.group(1)}"} <= supers
        assert option(command, "--bootstrap-servers").split(",") == [
            "{}:{}".format(*listeners(broker_properties(b)["advertised.listeners"])["INTERNAL"])
            for b in BROKERS
        ]
        assert listeners(props["advertised.listeners"])["INTERNAL"][1] == bound["INTERNAL"][1]
        # The plugin asks this sidecar on loopback over HTTPS, trusting the compose CA, and reads
        # the credential the sidecar writes into its own data volume.
        url = urllib.parse.urlsplit(props["aclstore.url"])
        assert (url.scheme, url.hostname) == ("https", "127.0.0.1")
        assert str(url.port) == option(command, "--listen").rpartition(":")[2]
        assert props["aclstore.ssl.ca.location"] == option(command, "--tls-client-ca")
        assert mounted_volume(broker, props["aclstore.ssl.ca.location"]) == "tls"
        credential = props["aclstore.command.config"]
        assert Path(credential).parent == Path(option(command, "--data-dir"))
        assert mounted_volume(broker, credential) == mounted_volume(sidecar, credential)
        assert f"{mounted_volume(broker, credential)}:{Path(credential).parent}:ro" in \
            services[broker]["volumes"]  # fmt: skip
        # No start-up deadlock: the broker is healthy only once its sidecar is ready.
        assert services[sidecar]["depends_on"][broker] == {"condition": "service_started"}
        assert services[sidecar]["restart"] == "unless-stopped"  # until INTERNAL answers
        check = " ".join(services[broker]["healthcheck"]["test"])
        health_config = check.split("--command-config ")[1].split()[0]
        assert mounted_volume(broker, health_config) == "sasl"
        admin = KafkaClientProperties.from_java(read_properties(made / Path(health_config).name))
        assert f"User:{admin.librdkafka()['sasl.username']}" in supers


@pytest.mark.slow  # a JVM per broker: Kafka's own configuration checks
@pytest.mark.parametrize("broker", BROKERS)
def test_compose_broker_settings_pass_kafkas_own_config_checks(broker: str, tmp_path: Path) -> None:
    """``kafka-storage format`` builds a ``KafkaConfig`` from the settings the image would
    write (listeners, the protocol map, ``early.start.listeners`` against this node's own
    listeners, the controller's SASL mechanism...) and refuses what Kafka would refuse at start."""
    from devtools.maven import kafka_classpath, require_java

    props = {**broker_properties(broker), "log.dirs": str(tmp_path / "data")}
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    cluster_id = compose()["services"][broker]["environment"]["CLUSTER_ID"]
    classpath = os.pathsep.join(str(jar) for jar in kafka_classpath())
    formatted = subprocess.run(
        [require_java(), "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id,
         "-c", str(config)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert formatted.returncode == 0, formatted.stderr[-2000:]
    assert (tmp_path / "data" / "meta.properties").is_file()


@pytest.mark.slow  # a broker's cold start with the plugin: about a minute
@pytest.mark.kafka
def test_compose_kafka_1_and_its_sidecar_start_cold_on_this_machine(tmp_path: Path) -> None:
    """kafka-1 and sidecar-broker-1 as compose.yaml configures them, run here without Docker:
    the broker's settings with its addresses on loopback, the JAAS file and client properties
    make-sasl.sh makes, the certificates make-certs.sh makes, the sidecar's compose command.
    Broker first: its client listener waits for the sidecar, which creates and reads its log
    over INTERNAL; then the admin manages ACLs through the broker (the plugin reaching the
    sidecar over HTTPS with the credential the sidecar wrote after the broker started)."""

    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    from devtools.java import SHORT_RUN_JVM_OPTIONS
    from devtools.kafka_process import LocalKafka, free_port
    from devtools.plugin import plugin_jar
    from replicator.properties import read_properties
    from store.log.client_properties import librdkafka_config

    sasl = tmp_path / "sasl"
    subprocess.run(["sh", str(ROOT / "docker" / "make-sasl.sh"), str(sasl)], check=True,
                   capture_output=True)  # fmt: skip
    admin = librdkafka_config(read_properties(sasl / "admin-kafka.properties"))
    internal_port, api_port = free_port(), free_port()
    command, made = compose_sidecar_here(tmp_path)
    data_dir = Path(option(command, "--data-dir"))
    command = here(command, tmp_path, **{
        "--listen": f"127.0.0.1:{api_port}",
        "--bootstrap-servers": f"127.0.0.1:{internal_port}",
        "--log-config": str(sasl / Path(option(command, "--log-config")).name),
    })  # fmt: skip
    props = broker_properties("kafka-1")
    jvm = compose()["services"]["kafka-1"]["environment"]["KAFKA_OPTS"].split()
    jaas = next(o for o in jvm if o.startswith("-Djava.security.auth.login.config="))
    broker = LocalKafka(
        tmp_path / "kafka", sasl_users={"admin": admin["sasl.password"]},
        extra_classpath=[plugin_jar()],
        jvm_options=[f"-Djava.security.auth.login.config={sasl / Path(jaas.split('=', 1)[1]).name}",
                     *SHORT_RUN_JVM_OPTIONS],
    )  # fmt: skip
    ports = {9092: broker.broker_port, 9093: broker.controller_port, 9094: internal_port}

    def on_loopback(value: str) -> str:
        return re.sub(r"(//|@)(?:kafka-1)?:(\d+)",
                      lambda m: f"{m.group(1)}127.0.0.1:{ports[int(m.group(2))]}", value)  # fmt: skip

    for key in ("listeners", "advertised.listeners", "controller.quorum.voters"):
        props[key] = on_loopback(props[key])
    del props["log.dirs"]
    assert urllib.parse.urlsplit(props["aclstore.url"]).port == 9096
    props["aclstore.url"] = f"https://127.0.0.1:{api_port}"
    props["aclstore.ssl.ca.location"] = str(made / Path(props["aclstore.ssl.ca.location"]).name)
    props["aclstore.command.config"] = str(data_dir / Path(props["aclstore.command.config"]).name)
    broker.overrides.update(props)
    starter = broker.start_in_background(timeout=180)
    process: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 90
        opened = "authorizerStart completed for endpoint INTERNAL."
        while time.monotonic() < deadline and not (
            broker.log_path.exists() and opened in broker.log_path.read_text(errors="replace")
        ):
            time.sleep(0.2)
        log = broker.log_path.read_text(errors="replace")
        assert opened in log and "authorizerStart completed for endpoint CLIENT." not in log
        assert not (data_dir / "admin.properties").exists()
        process, _ = start_node(command, tmp_path)  # creates its topic over INTERNAL
        starter.join(150)
        assert not starter.failures, starter.failures
        client = AdminClient({"bootstrap.servers": broker.bootstrap_servers, **admin})
        grant = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL,
                           "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)  # fmt: skip
        for future in client.create_acls([grant]).values():
            future.result(timeout=30)
        wanted = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
        assert client.describe_acls(wanted).result(timeout=30) == [grant]
    finally:
        starter.join(200)
        if process is not None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        broker.stop()
