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
import importlib.util
import json
import os
import signal
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replicator.cli import build_parser
from replicator.cli.serve import node_settings, serve
from replicator.server.callers import LOOPBACK_NETWORKS
from replicator.server.node import parse_listen
from replicator.server.tls import check_listener_security

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
COMPOSE = ROOT / "docker" / "compose.yaml"
SIDECARS = ("sidecar-broker-1", "sidecar-broker-2")
BROKERS = ("kafka-1", "kafka-2")


def compose() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML parses compose.yaml (test dependency)")
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def sidecar_command(name: str) -> list[str]:
    """The command as compose runs it: ``$$`` is compose's escape of a literal ``$``."""
    command = [str(part) for part in compose()["services"][name]["command"]]
    for part in command:
        assert "$" not in part.replace("$$", ""), f"{part!r}: compose would interpolate it"
    return [part.replace("$$", "$") for part in command]


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined, comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


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
    for command in commands:
        assert command[0] == "serve"
        assert option(command, "--bootstrap-servers") == "kafka-1:9092,kafka-2:9092"
    assert len({option(c, "--topic") for c in commands}) == 1  # one store
    volumes = [services[name]["volumes"][0].split(":")[0] for name in SIDECARS]
    assert len(set(volumes)) == 2  # each replica keeps its own index


@pytest.mark.unit
def test_compose_sidecars_answer_decisions_on_their_brokers_loopback_only() -> None:
    services = compose()["services"]
    brokers = []
    for name in SIDECARS:
        sidecar = services[name]
        mode, _, broker = sidecar["network_mode"].partition(":")
        assert mode == "service" and services[broker]["image"].startswith("apache/kafka:")
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
        settings = node_settings(build_parser().parse_args(command))
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
    assert certs["entrypoint"] == ["sh", script_in_image]
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
    jobs = services["jobs"]
    assert jobs["entrypoint"] == ["python"] and jobs["command"][0] == "-m"
    assert importlib.util.find_spec(jobs["command"][1]) is not None
    targets = {args.split()[-1] for op, args in dockerfile_instructions() if op == "FROM"}
    assert {services[name]["build"]["target"] for name in SIDECARS} | {jobs["build"]["target"]} <= targets


@pytest.mark.unit
def test_the_dockerfile_copies_what_exists_and_runs_the_cli() -> None:
    instructions = dockerfile_instructions()
    copies = [args.split()[:-1] for op, args in instructions if op == "COPY"]
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
    assert entry[1] == ["python"] and importlib.util.find_spec(cmd[1][1]) is not None


def _start(command: list[str], tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    """Start ``aclstore <command>``: its banner on stdout, its log lines in a file."""
    aclstore = Path(sys.executable).with_name("aclstore")
    log = tmp_path / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(aclstore), *command],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    assert process.stdout is not None
    first = process.stdout.readline()
    if " serving " not in first:
        process.kill()
        process.wait(timeout=20)
        raise AssertionError(f"aclstore did not start: {first!r}\n{log.read_text()}")
    return process, first.split(" serving ")[1].strip()


def _here(command: list[str], tmp_path: Path, **swap: str) -> list[str]:
    """The command with its listen address, data directory and broker swapped for this machine."""
    out = list(command)
    for name, value in {"--listen": "127.0.0.1:0", "--data-dir": str(tmp_path / "data"), **swap}.items():
        out[out.index(name) + 1] = value
    return out


def _ready(url: str) -> int:
    with urllib.request.urlopen(f"{url}/readyz", timeout=10) as response:
        return int(response.status)


@pytest.mark.unit
def test_the_dockerfile_default_command_starts_a_node(tmp_path: Path) -> None:
    cmd = next(json.loads(args) for op, args in dockerfile_instructions() if op == "CMD")
    process, url = _start(_here(cmd, tmp_path), tmp_path)
    try:
        assert _ready(url) == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def _compose_sidecar_here(tmp_path: Path, **swap: str) -> tuple[list[str], Path]:
    """sidecar-broker-1's command, its certificates made here by the certs service's script."""
    names = compose()["services"]["certs"]["command"][1:]
    made = tmp_path / "tls"
    subprocess.run(["sh", str(ROOT / "docker" / "make-certs.sh"), str(made), *names], check=True,
                   capture_output=True)  # fmt: skip
    command = sidecar_command("sidecar-broker-1")
    flags = ("--tls-cert", "--tls-key", "--tls-client-ca")
    files = {f: str(made / Path(option(command, f)).name) for f in flags}
    return _here(command, tmp_path, **files, **swap), made


def _drop(command: list[str], name: str) -> list[str]:
    at = command.index(name)
    return command[:at] + command[at + 2 :]


@pytest.mark.unit
def test_the_compose_sidecar_serves_https_and_passes_its_healthcheck(tmp_path: Path) -> None:
    """On the embedded log (no Kafka here): the TLS setup and the healthcheck of compose.yaml."""
    here, made = _compose_sidecar_here(tmp_path)
    here = _drop(_drop(here, "--bootstrap-servers"), "--topic")
    process, url = _start(here, tmp_path)
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
    here, made = _compose_sidecar_here(
        tmp_path, **{"--bootstrap-servers": kafka_bootstrap, "--topic": unique_topic("compose")}
    )
    process, url = _start(here, tmp_path)
    try:
        context = ssl.create_default_context(cafile=str(made / "ca.pem"))
        with urllib.request.urlopen(f"{url}/readyz", timeout=10, context=context) as response:
            assert response.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
