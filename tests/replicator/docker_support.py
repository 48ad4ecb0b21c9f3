"""``docker/`` as the tests read it: compose.yaml's services, the Dockerfile's instructions and
stages, and the commands they run, started here with this machine's paths."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

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


def broker_properties(name: str) -> dict[str, str]:
    """A broker service's environment as the apache/kafka image turns it into server
    properties (``KafkaDockerWrapper``: ``KAFKA_`` dropped, lower case, ``_`` -> ``.``,
    ``___`` -> ``-``, ``__`` -> ``_``); the variables that image reads itself are left out."""
    own = {"KAFKA_OPTS", "KAFKA_HEAP_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_VERSION"}
    env = compose()["services"][name]["environment"]
    return {
        key.replace("KAFKA_", "").lower().replace("_", ".").replace("...", "-").replace("..", "_"):
            str(value)
        for key, value in env.items() if key.startswith("KAFKA_") and key not in own
    }  # fmt: skip


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """``NAME://host:port,...`` as {name: (host, port)}."""
    out = {}
    for item in value.split(","):
        name, _, address = item.partition("://")
        host, _, port = address.rpartition(":")
        out[name] = (host, int(port))
    return out


def mounts(name: str) -> dict[str, str]:
    """A service's volumes as {path in the container: volume}."""
    out = {}
    for volume in compose()["services"][name]["volumes"]:
        source, target, *_ = volume.split(":")
        out[target] = source
    return out


def mounted_volume(name: str, path: str) -> str:
    """The volume a file of a service lives on (the longest mount point above it)."""
    found = [t for t in mounts(name) if path.startswith(t.rstrip("/") + "/")]
    assert found, f"{name}: {path} is on no volume"
    return mounts(name)[max(found, key=len)]


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


def stage_base(target: str) -> str:
    """The image a Dockerfile stage starts FROM, with the file's ARG defaults filled in."""
    args = dict(
        a.split("=", 1) for op, a in dockerfile_instructions() if op == "ARG" and "=" in a
    )
    for op, value in dockerfile_instructions():
        if op == "FROM" and value.split()[-1] == target:
            image = value.split()[0]
            for name, default in args.items():
                image = image.replace("${" + name + "}", default)
            return image
    raise AssertionError(f"the Dockerfile has no stage {target!r}")


def stage(target: str) -> list[tuple[str, str]]:
    """The instructions of one stage, FROM excluded."""
    out: list[tuple[str, str]] = []
    inside = False
    for op, value in dockerfile_instructions():
        if op == "FROM":
            inside = value.split()[-1] == target
        elif inside:
            out.append((op, value))
    return out


def start_node(command: list[str], tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
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


def here(command: list[str], tmp_path: Path, **swap: str) -> list[str]:
    """The command with its listen address, data directory and broker swapped for this machine."""
    out = list(command)
    for name, value in {"--listen": "127.0.0.1:0", "--data-dir": str(tmp_path / "data"), **swap}.items():
        out[out.index(name) + 1] = value
    return out


def ready(url: str) -> int:
    with urllib.request.urlopen(f"{url}/readyz", timeout=10) as response:
        return int(response.status)


def compose_sidecar_here(tmp_path: Path, **swap: str) -> tuple[list[str], Path]:
    """sidecar-broker-1's command, its certificates made here by the certs service's script."""
    names = compose()["services"]["certs"]["command"][1:]
    made = tmp_path / "tls"
    subprocess.run(["sh", str(ROOT / "docker" / "make-certs.sh"), str(made), *names], check=True,
                   capture_output=True)  # fmt: skip
    command = sidecar_command("sidecar-broker-1")
    flags = ("--tls-cert", "--tls-key", "--tls-client-ca")
    files = {f: str(made / Path(option(command, f)).name) for f in flags}
    return here(command, tmp_path, **files, **swap), made


def drop(command: list[str], name: str) -> list[str]:
    at = command.index(name)
    return command[:at] + command[at + 2 :]
