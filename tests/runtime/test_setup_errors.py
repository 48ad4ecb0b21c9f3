"""A broken machine gets one line naming what is missing and the fix, not a stack trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from devtools import maven
from devtools.errors import RuntimeSetupError
from devtools.kafka_process import free_port

# Unmarked tests are the unit tier (tests/conftest.py); a real Maven run (a JVM) is the slow one.


def _run_module_with_path(path: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "ACLSTORE_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "devtools"], env=env, capture_output=True, text=True, timeout=120
    )


def test_no_java_is_one_line_naming_java(tmp_path: Path) -> None:
    proc = _run_module_with_path(str(tmp_path), tmp_path / "cache")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "java not found on PATH" in proc.stderr and "JDK 17" in proc.stderr


def test_no_maven_is_one_line_naming_maven(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = maven.require_java()
    (bin_dir / "java").symlink_to(java)
    proc = _run_module_with_path(str(bin_dir), tmp_path / "cache")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "mvn not found on PATH" in proc.stderr and "Maven" in proc.stderr


@pytest.mark.slow
def test_no_route_to_maven_central_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real Maven run against a mirror on a closed loopback port, with an empty local repository.
    settings = tmp_path / "settings.xml"
    settings.write_text(
        "<settings><localRepository>{repo}</localRepository><mirrors><mirror><id>closed</id>"
        "<mirrorOf>*</mirrorOf><url>http://127.0.0.1:{port}/maven2</url></mirror></mirrors>"
        "</settings>".format(repo=tmp_path / "repo", port=free_port())
    )
    monkeypatch.setenv("ACLSTORE_MAVEN_SETTINGS", str(settings))
    monkeypatch.setenv("ACLSTORE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(RuntimeSetupError) as info:
        maven.resolve(["org.apache.kafka:kafka-clients:4.3.1"])
    message = str(info.value)
    assert "could not reach Maven Central" in message
    assert "org.apache.kafka:kafka-clients:4.3.1" in message
    assert "\n" not in message
