"""bench gitops' desired-state file: it owns about the asked share of the store, reads back as
exactly the bindings it was made from, and differs from the live scope by 1 % each way."""

from __future__ import annotations

import random

import pytest

from bench.downgrade import synthetic_bindings
from bench.gitops import desired_file
from store.desired import load_acls_text

pytestmark = pytest.mark.unit


def test_the_file_is_the_declared_bindings_and_its_scope() -> None:
    live = synthetic_bindings(10_000)
    text, scope, declared = desired_file(live, 1_000, random.Random(34))
    loaded = load_acls_text(text, "bench.yaml")
    assert loaded.bindings == declared and loaded.scope == scope
    in_scope = {b for b in live if scope.contains(b)}
    assert 1_000 <= len(in_scope) < 1_400
    assert len(declared - in_scope) == len(in_scope - declared) == len(in_scope) // 100
