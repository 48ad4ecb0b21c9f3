"""``docker/``: no Docker engine here, so check what can be checked without one.

The compose file parses and describes the deployment (a KRaft Kafka, two sidecars on one topic,
the jobs image); the Dockerfile copies paths that exist and runs commands that exist; and the
commands both files run actually start a node (with the broker address and the data directory
swapped for this machine's).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replicator.cli import build_parser
from replicator.cli.serve import serve

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
COMPOSE = ROOT / "docker" / "compose.yaml"
SIDECARS = ("sidecar-broker-1", "sidecar-broker-2")


def compose() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML parses compose.yaml (test dependency)")
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


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
    assert {"kafka", *SIDECARS, "jobs"} <= set(services)
    kafka_env = services["kafka"]["environment"]
    assert set(kafka_env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert not any("ZOOKEEPER" in key for key in kafka_env)
    commands = [services[name]["command"] for name in SIDECARS]
    for command in commands:
        assert command[0] == "serve"
        assert option(command, "--bootstrap-servers") == "kafka:9092"
    assert len({option(c, "--topic") for c in commands}) == 1  # one store
    volumes = [services[name]["volumes"][0].split(":")[0] for name in SIDECARS]
    assert len(set(volumes)) == 2  # each replica keeps its own index
    ports = [services[name]["ports"][0] for name in SIDECARS]
    assert len(set(ports)) == 2 and all(p.startswith("127.0.0.1:") for p in ports)
    subnet = ipaddress.ip_network(compose()["networks"]["aclstore"]["ipam"]["config"][0]["subnet"])
    for name in SIDECARS:
        assert ipaddress.ip_network(option(services[name]["command"], "--authorize-from")) == subnet
        assert ipaddress.ip_address(services[name]["networks"]["aclstore"]["ipv4_address"]) in subnet


@pytest.mark.unit
def test_compose_commands_are_commands_of_the_cli() -> None:
    services = compose()["services"]
    parser = build_parser()
    for name in SIDECARS:
        args = parser.parse_args(services[name]["command"])
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


@pytest.mark.kafka
def test_the_compose_sidecar_command_starts_on_a_real_broker(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    command = compose()["services"]["sidecar-broker-1"]["command"]
    here = _here(
        command,
        tmp_path,
        **{
            "--bootstrap-servers": kafka_bootstrap,
            "--topic": unique_topic("compose"),
            "--authorize-from": "127.0.0.0/8",
        },
    )
    process, url = _start(here, tmp_path)
    try:
        assert _ready(url) == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
