"""The whole ``kafka_acl_vectors.jsonl`` through the conformance runner: none failed, none skipped.

The vectors are Kafka's own unit-test assertions (checked against Kafka's classes), so they
are an expectation independent of our code.
"""

from __future__ import annotations

import pytest

from devtools.conformance import run_vector
from tests.store.vectors import (
    ACL_VECTORS,
    assert_command_line_passes,
    assert_every_vector_passes,
    load,
)

pytestmark = pytest.mark.unit


def test_vector_file_is_present() -> None:
    assert ACL_VECTORS.is_file(), f"conformance vectors missing at {ACL_VECTORS}"


def test_every_vector_passes_and_none_is_skipped() -> None:
    assert_every_vector_passes(ACL_VECTORS)


@pytest.mark.parametrize("vector", load(ACL_VECTORS), ids=lambda v: str(v["id"]))
def test_vector(vector: dict[str, object]) -> None:
    outcome = run_vector(vector)
    assert outcome is not None, f"no handler for kind {vector['kind']!r}"
    assert outcome.passed, f"expected {outcome.expected!r} got {outcome.got!r}"


def test_a_wrong_expectation_fails() -> None:
    """The handlers can fail: flip one expected decision and the runner must report it."""
    vector = next(
        v for v in load(ACL_VECTORS, "authorize") if v["expect"] == "ALLOWED"
    )
    outcome = run_vector({**vector, "expect": "DENIED"})
    assert outcome is not None and not outcome.passed


def test_command_line_runner_exits_zero() -> None:
    assert_command_line_passes(ACL_VECTORS)
