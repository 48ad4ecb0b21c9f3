"""``docker/``: no Docker engine here, so check what can be checked without one.

The compose file parses and describes the deployment (two KRaft brokers, each with its sidecar
in its network namespace, one topic, the jobs image), safe by default: decisions on the
brokers' loopback only, the API over TLS with certificates from the one-shot ``certs`` service
(``docker/make-certs.sh``, run here too), published on the host's loopback.  The Dockerfile
copies paths that exist and runs commands that exist; and the commands both files run actually
start a node (with the broker address, data directory and certificate paths swapped for this
machine's) and pass the compose healthcheck.
"""

from __future__ import annotations

import base64
import json
import signal
import ssl
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from docker_support import (
    BROKERS,
    ROOT,
    SIDECARS,
    broker_properties,
    compose,
    compose_sidecar_here,
    dockerfile_instructions,
    drop,
    here,
    listeners,
    mounted_volume,
    option,
    ready,
    sidecar_command,
    stage_base,
    start_node,
)

from cli import build_parser
from cli.serve import node_settings, serve
from replicator.server.callers import LOOPBACK_NETWORKS
from replicator.server.node import parse_listen
from replicator.server.tls import check_listener_security


@pytest.mark.unit
def test_compose_describes_kraft_kafka_and_two_sidecars_on_one_topic() -> None:
    services = compose()["services"]
    assert {*BROKERS, *SIDECARS, "certs", "jobs"} <= set(services)
    envs = [services[name]["environment"] for name in BROKERS]
    assert set(envs[0]["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert envs[1]["KAFKA_PROCESS_ROLES"] == "broker"
    for env in envs:
        assert not any("ZOOKEEPER" in key for key in env)
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka-1:9093"
        # Kafka's Uuid.fromString: 16 bytes in URL-safe base64 without padding.
        assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16
    assert len({env["CLUSTER_ID"] for env in envs}) == 1
    assert len({env["KAFKA_NODE_ID"] for env in envs}) == 2
    commands = [sidecar_command(name) for name in SIDECARS]
    # Both brokers' internal listener, as they advertise it: the log's clients reach the
    # partition leader wherever it is.
    internal = ",".join(
        "{}:{}".format(*listeners(broker_properties(b)["advertised.listeners"])["INTERNAL"])
        for b in BROKERS
    )
    for command in commands:
        assert command[0] == "serve"
        assert option(command, "--bootstrap-servers") == internal
    assert len({option(c, "--topic") for c in commands}) == 1  # one store
    volumes = [services[name]["volumes"][0].split(":")[0] for name in SIDECARS]
    assert len(set(volumes)) == 2  # each replica keeps its own index


@pytest.mark.unit
def test_compose_sidecars_answer_decisions_on_their_brokers_loopback_only(tmp_path: Path) -> None:
    services = compose()["services"]
    subprocess.run(["sh", str(ROOT / "docker" / "make-sasl.sh"), str(tmp_path)], check=True,
                   capture_output=True)  # fmt: skip
    brokers = []
    for name in SIDECARS:
        sidecar = services[name]
        mode, _, broker = sidecar["network_mode"].partition(":")
        assert mode == "service" and broker in BROKERS
        assert stage_base(services[broker]["build"]["target"]).startswith("apache/kafka:")
        brokers.append(broker)
        # In the broker's namespace: no network, no port of its own.
        assert "networks" not in sidecar and "ports" not in sidecar
        command = sidecar_command(name)
        assert "--authorize-from" not in command and "--insecure-plaintext" not in command
        # The API the broker publishes for it is on the host's loopback only.
        listen_port = option(command, "--listen").rpartition(":")[2]
        published = services[broker]["ports"]
        assert len(published) == 1
        host_ip, _, target = published[0].rpartition(":")
        assert target == listen_port and host_ip.split(":")[0] == "127.0.0.1"
        # The command starts under the node's own safety checks (TLS off loopback).
        log_config = tmp_path / Path(option(command, "--log-config")).name
        command[command.index("--log-config") + 1] = str(log_config)
        settings = node_settings(build_parser().parse_args(command))
        assert settings.log_client is not None
        assert settings.tls is not None and settings.tls.client_ca is not None
        assert not settings.insecure_plaintext
        assert settings.authorize_networks == LOOPBACK_NETWORKS
        host, _ = parse_listen(settings.listen)
        check_listener_security(settings.listen, host, tls=settings.tls, insecure_plaintext=False)
    assert sorted(brokers) == sorted(BROKERS)  # one sidecar per broker


@pytest.mark.unit
def test_compose_gives_the_api_tls_made_by_the_one_shot_certs_service(tmp_path: Path) -> None:
    services = compose()["services"]
    certs = services["certs"]
    script_in_image = "/opt/aclstore/docker/make-certs.sh"
    # sh -c '<script> "$@" && ...' NAME ARGS: make-certs.sh gets the command as its arguments.
    assert certs["entrypoint"][:2] == ["sh", "-c"]
    assert certs["entrypoint"][2].startswith(f'sh {script_in_image} "$$@" && ')
    copied = [args.split() for op, args in dockerfile_instructions() if op == "COPY"]
    assert ["docker/make-certs.sh", "./docker/make-certs.sh"] in copied
    assert next(args for op, args in dockerfile_instructions() if op == "WORKDIR") == "/opt/aclstore"
    out_dir, *names = certs["command"]
    volume = next(v.split(":")[0] for v in certs["volumes"] if v.split(":")[1] == out_dir)
    # The server certificate names the brokers: that is where each sidecar is reached.
    assert set(BROKERS) <= set(names)
    made = tmp_path / "tls"
    subprocess.run(["sh", str(ROOT / "docker" / "make-certs.sh"), str(made), *names], check=True,
                   capture_output=True)  # fmt: skip
    for name in SIDECARS:
        sidecar = services[name]
        assert sidecar["depends_on"]["certs"] == {"condition": "service_completed_successfully"}
        assert f"{volume}:{out_dir}:ro" in sidecar["volumes"]
        command = sidecar_command(name)
        for flag in ("--tls-cert", "--tls-key", "--tls-client-ca"):
            path = Path(option(command, flag))
            assert str(path.parent) == out_dir
            assert (made / path.name).is_file(), f"{flag} {path}: the script makes no {path.name}"
        check = " ".join(sidecar["healthcheck"]["test"])
        assert "https://127.0.0.1:9096/readyz" in check and f"{out_dir}/ca.pem" in check


@pytest.mark.unit
def test_compose_commands_are_commands_of_the_cli() -> None:
    services = compose()["services"]
    parser = build_parser()
    for name in SIDECARS:
        args = parser.parse_args(sidecar_command(name))
        assert args.handler is serve
    # The jobs service runs the history archive over the sidecars' own log settings
    # (INTERNAL, user aclstore), into a volume of its own.
    jobs = services["jobs"]
    assert jobs["entrypoint"] == ["aclstore"] and jobs["command"][:2] == ["history", "archive"]
    args = parser.parse_args(jobs["command"])
    assert not args.once  # runs until stopped
    reference = sidecar_command(SIDECARS[0])
    for flag in ("--bootstrap-servers", "--log-config", "--topic"):
        assert option(jobs["command"], flag) == option(reference, flag), flag
    assert mounted_volume("jobs", str(args.log_config)) == "sasl"
    assert mounted_volume("jobs", args.archive + "/events") == "history"
    assert "history" in compose()["volumes"]
    targets = {args.split()[-1] for op, args in dockerfile_instructions() if op == "FROM"}
    assert {services[name]["build"]["target"] for name in SIDECARS} | {jobs["build"]["target"]} <= targets


@pytest.mark.unit
def test_the_dockerfile_copies_what_exists_and_runs_the_cli() -> None:
    instructions = dockerfile_instructions()
    # COPY --from=<stage> copies out of another stage, not from the build context.
    copies = [args.split()[:-1] for op, args in instructions
              if op == "COPY" and not args.startswith("--from=")]  # fmt: skip
    assert copies
    for sources in copies:
        for source in sources:
            assert (ROOT / source).exists(), source
    entry = [json.loads(args) for op, args in instructions if op == "ENTRYPOINT"]
    cmd = [json.loads(args) for op, args in instructions if op == "CMD"]
    assert entry[0] == ["aclstore"]
    assert build_parser().parse_args(cmd[0]).handler is serve
    healthcheck = next(args for op, args in instructions if op == "HEALTHCHECK")
    assert "/readyz" in healthcheck
    # The jobs stage runs the CLI too: compose gives it the archive's command; alone it prints
    # the usage (and exits 0).
    assert entry[1] == ["aclstore"] and cmd[1] == ["--help"]
    with pytest.raises(SystemExit) as printed:
        build_parser().parse_args(cmd[1])
    assert printed.value.code == 0


@pytest.mark.unit
def test_the_dockerfile_default_command_starts_a_node(tmp_path: Path) -> None:
    cmd = next(json.loads(args) for op, args in dockerfile_instructions() if op == "CMD")
    process, url = start_node(here(cmd, tmp_path), tmp_path)
    try:
        assert ready(url) == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


@pytest.mark.unit
def test_the_compose_sidecar_serves_https_and_passes_its_healthcheck(tmp_path: Path) -> None:
    """On the embedded log (no Kafka here): the TLS setup and the healthcheck of compose.yaml."""
    here, made = compose_sidecar_here(tmp_path)
    here = drop(drop(drop(here, "--bootstrap-servers"), "--topic"), "--log-config")
    process, url = start_node(here, tmp_path)
    try:
        assert url.startswith("https://127.0.0.1:")
        check = compose()["services"]["sidecar-broker-1"]["healthcheck"]["test"]
        assert check[:3] == ["CMD", "python", "-c"]
        code = check[3].replace("https://127.0.0.1:9096", url)
        code = code.replace("/var/lib/aclstore/tls/ca.pem", str(made / "ca.pem"))
        assert subprocess.run([sys.executable, "-c", code], timeout=30).returncode == 0
        # The admin as the compose file's comment says: admin.properties plus the CA.
        properties = tmp_path / "data" / "admin.properties"
        with properties.open("a") as out:
            out.write(f"ssl.ca.location={made / 'ca.pem'}\n")
        aclstore = Path(sys.executable).with_name("aclstore")
        listed = subprocess.run([str(aclstore), "acls", "--command-config", str(properties), "--list"],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        # And the admin client certificate maps to User:admin with the compose mapping rules.
        context = ssl.create_default_context(cafile=str(made / "ca.pem"))
        context.load_cert_chain(str(made / "admin.pem"), str(made / "admin.key"))
        request = urllib.request.Request(f"{url}/v1/acls/describe", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            assert response.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


@pytest.mark.kafka
def test_the_compose_sidecar_command_starts_on_a_real_broker(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    here, made = compose_sidecar_here(
        tmp_path, **{"--bootstrap-servers": kafka_bootstrap, "--topic": unique_topic("compose")}
    )
    here = drop(here, "--log-config")  # the session broker is PLAINTEXT
    process, url = start_node(here, tmp_path)
    try:
        context = ssl.create_default_context(cafile=str(made / "ca.pem"))
        with urllib.request.urlopen(f"{url}/readyz", timeout=10, context=context) as response:
            assert response.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
