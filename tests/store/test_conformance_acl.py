"""The whole ``kafka_acl_vectors.jsonl`` through the conformance runner: none failed, none skipped.

The vectors are Kafka's own unit-test assertions (checked against Kafka's classes), so they
are an expectation independent of our code.
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

# The shared vectors live beside the repository (../shared/conformance); override with
# ACLSTORE_CONFORMANCE_DIR when the checkout sits elsewhere.
CONFORMANCE_DIR = Path(
    os.environ.get("ACLSTORE_CONFORMANCE_DIR")
    or Path(__file__).resolve().parents[3] / "shared" / "conformance"
)
VECTORS = CONFORMANCE_DIR / "kafka_acl_vectors.jsonl"


def _vectors() -> list[dict[str, object]]:
    return [json.loads(line) for line in VECTORS.read_text().splitlines() if line.strip()]


def test_vector_file_is_present() -> None:
    assert VECTORS.is_file(), f"conformance vectors missing at {VECTORS}"


def test_every_vector_passes_and_none_is_skipped() -> None:
    summary = run_files([VECTORS])
    failures = [line for line in summary.lines if not line.startswith("MESSAGE")]
    assert summary.failed == 0 and summary.skipped == 0, "\n".join(failures)
    assert summary.passed == len(_vectors())


@pytest.mark.parametrize("vector", _vectors(), ids=lambda v: str(v["id"]))
def test_vector(vector: dict[str, object]) -> None:
    outcome = run_vector(vector)
    assert outcome is not None, f"no handler for kind {vector['kind']!r}"
    assert outcome.passed, f"expected {outcome.expected!r} got {outcome.got!r}"


def test_a_wrong_expectation_fails() -> None:
    """The handlers can fail: flip one expected decision and the runner must report it."""
    vector = next(v for v in _vectors() if v["kind"] == "authorize" and v["expect"] == "ALLOWED")
    outcome = run_vector({**vector, "expect": "DENIED"})
    assert outcome is not None and not outcome.passed


def test_command_line_runner_exits_zero() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "store.conformance", str(VECTORS)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].endswith("0 failed, 0 skipped")
