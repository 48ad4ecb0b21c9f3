"""The index read pattern by pattern in name order (``replicator.index.patterns``) against an
in-memory model of the same bindings (``store.access_stream.StateSource``): the same runs,
point reads and streamed access diffs, both through one view and with an iterator per run."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from replicator.index import AclIndex
from replicator.index.patterns import IndexPatterns
from store.access_diff import AclState, access_diff, compact, older_reader_state
from store.access_stream import StateChange, StateSource, streamed_diff
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import binding_key

pytestmark = pytest.mark.unit

NAMES = ["", "*", "a", "ab", "abc", "abd", "b", "ba", "é", "é1", "topic-1", "topic-10", "x" * 40]


def random_bindings(rng: random.Random, size: int) -> set[AclBinding]:
    return {
        AclBinding.of(
            rng.choice([ResourceType.TOPIC, ResourceType.GROUP, ResourceType.USER]),
            rng.choice(NAMES), rng.choice([PatternType.LITERAL, PatternType.PREFIXED]),
            rng.choice(["User:alice", "User:bob", "User:*"]), rng.choice(["*", "10.0.0.1"]),
            rng.choice([AclOperation.READ, AclOperation.ALL, AclOperation.CREATE_TOKENS]),
            rng.choice([AclPermissionType.ALLOW, AclPermissionType.DENY]),
        )
        for _ in range(size)
    }  # fmt: skip


@pytest.fixture
def filled(tmp_path: Path) -> tuple[AclIndex, set[AclBinding]]:
    rng = random.Random(3)
    bindings = random_bindings(rng, 300)
    index = AclIndex(tmp_path / "index", reader_version=3)
    batch = index.batch()
    for binding in bindings:
        batch.create(binding_key(binding), binding)
    batch.commit(offset=len(bindings), timestamp_ms=0)
    return index, bindings


def sources(index: AclIndex) -> list[IndexPatterns]:
    view = index.view()
    lazy = IndexPatterns(index.tables.acl.iter, index.view()._prefix_lengths, lazy=True)
    return [view.patterns(), lazy]


def test_runs_and_point_reads_are_the_models(filled: tuple[AclIndex, set[AclBinding]]) -> None:
    index, bindings = filled
    model = StateSource(bindings)
    try:
        for source in sources(index):
            assert sorted(source.resource_types(), key=int) == sorted(model.resource_types(), key=int)
            for rt in model.resource_types():
                assert set(model.prefix_lengths(rt)) <= set(source.prefix_lengths(rt))
                for under in ["", "a", "ab", "é", "topic-", "x", "zz"]:
                    got = [(pt, n, sorted(bs)) for pt, n, bs in source.patterns(rt, under)]
                    want = [(pt, n, sorted(bs)) for pt, n, bs in model.patterns(rt, under)]
                    assert got == want, (rt, under)
                for name in NAMES:
                    for pt in (PatternType.LITERAL, PatternType.PREFIXED):
                        assert sorted(source.bindings_of(rt, pt, name)) == sorted(
                            model.bindings_of(rt, pt, name)
                        )
    finally:
        index.close()


def test_the_streamed_diff_over_the_index_is_the_pure_engines(
    filled: tuple[AclIndex, set[AclBinding]],
) -> None:
    index, bindings = filled
    state = AclState.of(bindings, ["User:root"])
    rng = random.Random(4)
    try:
        for source in sources(index):
            for version in (1, 2):
                older, _ = older_reader_state(state, version)
                expected = compact(access_diff(state, older))
                rows = list(streamed_diff(source, StateChange.downgrade(state, version), budget=17))
                assert set(rows) == {*expected.widened, *expected.narrowed}
            added = random_bindings(rng, 3)
            removed = set(rng.sample(sorted(bindings), 2))
            after = AclState((state.bindings | added) - removed, state.super_users)
            expected = compact(access_diff(state, after))
            change = StateChange.of_bindings(state, added=added, removed=removed)
            rows = list(streamed_diff(source, change, budget=17))
            assert set(rows) == {*expected.widened, *expected.narrowed}
    finally:
        index.close()


def test_counting_under_a_prefix_stops_at_the_limit(filled: tuple[AclIndex, set[AclBinding]]) -> None:
    index, bindings = filled
    try:
        source = index.view().patterns()
        topics = [b for b in bindings if b.resource_type is ResourceType.TOPIC]
        under_a = sum(1 for b in topics if b.name.startswith("a"))
        assert source.count_under(ResourceType.TOPIC, "a", 10_000) == under_a
        assert source.count_under(ResourceType.TOPIC, "", 10_000) == len(topics)
        assert source.count_under(ResourceType.TOPIC, "", 5) == 5
    finally:
        index.close()
