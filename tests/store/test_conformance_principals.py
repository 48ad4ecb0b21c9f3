"""The whole ``principal_mapping_vectors.jsonl`` through the conformance runner: none failed,
none skipped.

The vectors are Kafka's own SslPrincipalMapperTest / KerberosNameTest assertions and
``X500Principal.getName()`` results (checked against Kafka's classes), so they are an
expectation independent of our code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from store.conformance import run_files, run_vector

pytestmark = pytest.mark.unit

CONFORMANCE_DIR = Path(
    os.environ.get("ACLSTORE_CONFORMANCE_DIR")
    or Path(__file__).resolve().parents[3] / "shared" / "conformance"
)
VECTORS = CONFORMANCE_DIR / "principal_mapping_vectors.jsonl"


def _vectors() -> list[dict[str, object]]:
    if not VECTORS.is_file():
        return []
    return [json.loads(line) for line in VECTORS.read_text().splitlines() if line.strip()]


def test_vector_file_is_present() -> None:
    assert VECTORS.is_file(), f"conformance vectors missing at {VECTORS}"


def test_every_vector_passes_and_none_is_skipped() -> None:
    summary = run_files([VECTORS])
    failures = [line for line in summary.lines if not line.startswith("MESSAGE")]
    assert summary.failed == 0 and summary.skipped == 0, "\n".join(failures)
    assert summary.passed == len(_vectors()) > 0


@pytest.mark.parametrize(
    "vector", _vectors(), ids=[f"{i + 1}-{v['kind']}" for i, v in enumerate(_vectors())]
)
def test_vector(vector: dict[str, object]) -> None:
    outcome = run_vector(vector)
    assert outcome is not None, f"no handler for kind {vector['kind']!r}"
    assert outcome.passed, f"expected {outcome.expected!r} got {outcome.got!r}"
    assert outcome.message_note is None, outcome.message_note


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "ssl_map", "rules": "RULE:(a)/$1/U", "input": "a", "output": "a"},
        {"kind": "ssl_parse", "rules": "DEFAULT", "toString": "SslPrincipalMapper(rules = [])"},
        {"kind": "ssl_parse", "rules": "DEFAULT", "error": "IllegalArgumentException"},
        {"kind": "krb_map", "default_realm": "R", "rules": None, "input": "a@X", "output": "a"},
        {"kind": "krb_map", "default_realm": "R", "rules": None, "input": "a@X",
         "error": "BadFormatString"},
        {"kind": "x500_getName", "input": "CN=a, O=b", "output": "CN=a, O=b"},
    ],
)  # fmt: skip
def test_a_wrong_expectation_fails(change: dict[str, object]) -> None:
    """The handlers can fail: wrong outputs and wrong error kinds are reported."""
    outcome = run_vector(change)
    assert outcome is not None and not outcome.passed


def test_a_wrong_message_is_a_note_not_a_failure() -> None:
    vector = {"kind": "ssl_parse", "rules": "DEFAUL", "error": "IllegalArgumentException",
              "message": "something else"}  # fmt: skip
    outcome = run_vector(vector)
    assert outcome is not None and outcome.passed and outcome.message_note


def test_command_line_runner_exits_zero() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "store.conformance", str(VECTORS)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == f"{len(_vectors())} passed, 0 failed, 0 skipped"
