"""The whole ``principal_mapping_vectors.jsonl`` through the conformance runner: none failed,
none skipped.

The vectors are Kafka's own SslPrincipalMapperTest / KerberosNameTest assertions and
``X500Principal.getName()`` results (checked against Kafka's classes), so they are an
expectation independent of our code.
"""

from __future__ import annotations

import pytest

from devtools.conformance import run_vector
from tests.store.vectors import (
    PRINCIPAL_VECTORS,
    assert_command_line_passes,
    assert_every_vector_passes,
    load,
)

pytestmark = pytest.mark.unit


def test_vector_file_is_present() -> None:
    assert PRINCIPAL_VECTORS.is_file(), f"conformance vectors missing at {PRINCIPAL_VECTORS}"


def test_every_vector_passes_and_none_is_skipped() -> None:
    assert_every_vector_passes(PRINCIPAL_VECTORS)


_VECTORS = load(PRINCIPAL_VECTORS)


@pytest.mark.parametrize(
    "vector", _VECTORS, ids=[f"{i + 1}-{v['kind']}" for i, v in enumerate(_VECTORS)]
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
    assert_command_line_passes(PRINCIPAL_VECTORS)
