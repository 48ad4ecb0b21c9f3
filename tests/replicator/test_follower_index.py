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
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replicator.index import AclIndex
from replicator.index import meta as index_meta
from replicator.index.follower import FollowerIndex
from replicator.index.records import LogAnchor, StopRecord
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from tests.replicator.test_index import (
    RESOURCE_TYPES,
    _applies,
    commit_random_changes,
    log_key,
    random_changes,
)

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


def _state_of(stored: index_meta.StoredMeta) -> tuple[object, ...]:
    """What a follower keeps of a state (the prefix lengths as the set in use)."""
    return (
        stored.position, stored.counters, stored.anchor, stored.stopped, stored.config,
        stored.skips, stored.journal_seq, stored.shape, stored.layout, stored.reader,
        index_meta.freeze_lengths(stored.lengths),
    )  # fmt: skip


@settings(max_examples=8, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
@example(510511)  # 28 of its 30 catch-ups read in full; the old count left out two
def test_a_followers_quick_reads_keep_the_state_every_key_says(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    """After each catch-up the follower's state (mostly read from the head alone) equals a
    full read of every meta key through the same secondary instance, through commits that
    change settings, bring prefix lengths into and out of use, stop the replica and skip."""
    tmp = tmp_path_factory.mktemp("head")
    rng = random.Random(seed)
    index = AclIndex(tmp / "index", reader_version=3, cache_size=16)
    follower = FollowerIndex(tmp / "index", tmp / "secondary", cache_size=16)
    try:
        live: dict[bytes, AclBinding] = {}
        offset, catch_ups = -1, 0
        for _ in range(60):
            offset += 1
            roll = rng.random()
            if roll < 0.08:  # the replica stops at the next record, and the operator skips it
                index.record_stop(StopRecord(offset=offset, reason="undecodable", recorded_ms=offset))
                if rng.random() < 0.5:
                    catch_ups += 1
                    follower.catch_up()
                    assert _state_of(follower._stored) == _state_of(_full_read(follower))
                index.record_skip(offset, reason="known bad record", actor="ops")
            else:
                batch = index.batch()
                random_changes(batch, rng, live, most=3, deletes=0.4)
                if roll > 0.9:
                    name = rng.choice(["super.users", "allow.everyone.if.no.acl.found"])
                    batch.alter_config(name, rng.choice([None, "true", "User:admin"]))
                anchor = LogAnchor(offset=offset, timestamp_ms=offset * 10, key=b"k%d" % offset)
                batch.commit(offset=offset, timestamp_ms=offset * 10, anchor=anchor)
            if rng.random() < 0.6:
                catch_ups += 1
                follower.catch_up()
                assert _state_of(follower._stored) == _state_of(_full_read(follower))
        catch_ups += 1
        follower.catch_up()
        assert _state_of(follower._stored) == _state_of(_full_read(follower))
        assert follower.position == index.position
        # The head alone served some catch-ups: fewer full reads than catch-ups, the
        # follower's opening read (full_reads starts at 1) aside.
        assert follower.full_reads - 1 < catch_ups
    finally:
        follower.close()
        index.close()


def _full_read(follower: FollowerIndex) -> index_meta.StoredMeta:
    return index_meta.decode_meta(dict(follower.tables.meta.items()))


def test_an_index_last_written_without_its_head_gets_one_at_open(tmp_path: Path) -> None:
    """An index an older aclstore wrote last (no head, or a head behind the keys it wrote
    after a newer one) is given a head that says what its keys say when the node opens it,
    so a follower's first quick read does not go back to an older position."""
    index = AclIndex(tmp_path / "index", reader_version=3)
    rng = random.Random(5)
    live: dict[bytes, AclBinding] = {}
    for offset in range(3):
        commit_random_changes(index, rng, live, offset)
    index.close()
    for stale in ("missing", "behind"):
        older = AclIndex(tmp_path / "index", reader_version=3)
        if stale == "missing":
            older.tables.meta.delete(index_meta.M_HEAD)
            older.tables.meta.delete(index_meta.M_SHAPE)
        else:  # an older writer applied offset 7 and left the head at what a newer one wrote
            older.tables.meta.put(index_meta.M_OFFSET, index_meta.pack_i64(7))
        older.close()
        reopened = AclIndex(tmp_path / "index", reader_version=3)
        follower = FollowerIndex(tmp_path / "index", tmp_path / f"secondary-{stale}", cache_size=16)
        try:
            head = reopened.tables.meta.get(index_meta.M_HEAD)
            assert head is not None
            position, counters, _ = index_meta.decode_head(head)
            assert (position, counters) == (reopened.position, reopened.counters)
            assert position.offset == (2 if stale == "missing" else 7)
            assert follower.catch_up() == reopened.position  # the quick read, from the new head
        finally:
            follower.close()
            reopened.close()
