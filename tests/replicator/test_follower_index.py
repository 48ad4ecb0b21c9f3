"""A decision worker's follower of the index against a replay of the same changes.

The writer is a real :class:`AclIndex`; the follower a RocksDB secondary instance of it in the
same directory.  Every answer the follower gives (from its cache or read) must equal the
bindings of the replayed live set at the offset the follower reports, however many commits
it skipped between catch-ups, including more than the change journal keeps.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replicator.index import AclIndex
from replicator.index import meta as index_meta
from replicator.index.follower import FollowerIndex
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from tests.replicator.test_index import RESOURCE_TYPES, _applies, commit_random_changes, log_key

pytestmark = pytest.mark.unit

NAMES = ["a", "ab", "abc", "abd", "b", "ba", "é1", "topic-1", "*", ""]


def _run(tmp: Path, seed: int) -> None:
    rng = random.Random(seed)
    index = AclIndex(tmp / "index", reader_version=3, cache_size=16)
    follower = FollowerIndex(tmp / "index", tmp / "secondary", cache_size=16)
    try:
        live: dict[bytes, AclBinding] = {}
        states: dict[int, dict[bytes, AclBinding]] = {-1: {}}
        offset = -1
        for _ in range(40):
            offset += 1
            commit_random_changes(index, rng, live, offset)
            states[offset] = dict(live)
            if rng.random() < 0.4:  # sometimes several commits pass between catch-ups
                reached = follower.catch_up()
                assert reached.offset == offset
            for _ in range(8):
                view = follower.view()
                rt = rng.choice(RESOURCE_TYPES)
                name = rng.choice(NAMES)
                expected = {b for b in states[view.position.offset].values() if _applies(b, rt, name)}
                assert set(view.matching_acls(rt, name)) == expected, (view.position, rt, name)
        follower.catch_up()
        assert follower.position == index.position
        assert follower.counters == index.counters
        assert follower.cache_figures().hits > 0
    finally:
        follower.close()
        index.close()


@settings(max_examples=12, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_follower_answers_equal_a_replay_at_its_offset(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    _run(tmp_path_factory.mktemp("follow"), seed)


@settings(max_examples=6, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_a_follower_behind_the_journal_empties_its_cache_and_stays_exact(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index_meta, "JOURNAL_KEPT", 2)
        _run(tmp_path_factory.mktemp("follow"), seed)


def test_a_catch_up_drops_only_the_cached_answers_the_commits_can_affect(tmp_path: Path) -> None:
    index = AclIndex(tmp_path / "index", reader_version=3)
    follower = FollowerIndex(tmp_path / "index", tmp_path / "secondary", cache_size=64)

    def topic(name: str, pattern: PatternType = PatternType.LITERAL) -> AclBinding:
        return AclBinding.of(
            ResourceType.TOPIC, name, pattern, "User:a", "*", AclOperation.READ,
            AclPermissionType.ALLOW,
        )  # fmt: skip

    def commit(offset: int, create: AclBinding) -> None:
        batch = index.batch()
        batch.create(log_key(create), create)
        batch.commit(offset=offset, timestamp_ms=offset)

    def served_from_cache(name: str) -> bool:
        before = follower.cache_figures().hits
        follower.view().matching_acls(ResourceType.TOPIC, name)
        return follower.cache_figures().hits == before + 1

    try:
        names = ["orders", "orders-eu", "payments", "pay"]
        commit(0, topic("orders"))
        follower.catch_up()
        for name in names:
            follower.view().matching_acls(ResourceType.TOPIC, name)
        commit(1, topic("payments"))
        assert all(served_from_cache(n) for n in names)  # not caught up: its state is older
        follower.catch_up()
        assert [served_from_cache(n) for n in names] == [True, True, False, True]
        commit(2, topic("orders-", PatternType.PREFIXED))
        commit(3, topic("pay", PatternType.PREFIXED))
        follower.catch_up()  # two commits in one catch-up
        assert [served_from_cache(n) for n in names] == [True, False, False, False]
        assert set(follower.view().matching_acls(ResourceType.TOPIC, "payments")) == {
            topic("payments"), topic("pay", PatternType.PREFIXED),
        }  # fmt: skip
    finally:
        follower.close()
        index.close()
