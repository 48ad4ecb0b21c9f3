"""The RocksDB index against an independent model: a dict of live bindings and store.acl's filters.

Every lookup the decision rules make (``matching_acls``, ``acls_for_principal``, describe's
filters) is compared with a brute-force pass of Kafka's filter semantics
(``ResourcePatternFilter.matches`` with MATCH, ``AclBindingFilter.matches``) over the live
set that a plain dict replay of the same changes produces.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replicator.encoding import decode_binding, encode_binding
from replicator.errors import IndexOpenError, IndexRebuildRequiredError, SkipRefusedError
from replicator.index import AclIndex, IndexView, StopRecord
from replicator.index import view as view_module
from replicator.index.batch import IndexBatch
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)
from store.authorizer import Action, AuthorizationResult, AuthorizerConfig, ScanAclView, authorize
from store.authorizer.grants import PartialPatternAcls

pytestmark = pytest.mark.unit

RESOURCE_TYPES = [ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.USER]
OPERATIONS = [AclOperation.READ, AclOperation.WRITE, AclOperation.ALL, AclOperation.DESCRIBE]
PATTERN_TYPES = [PatternType.LITERAL, PatternType.PREFIXED]
PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:ops"]


def log_key(binding: AclBinding) -> bytes:
    """A stand-in for the write path's canonical key: any injective encoding will do."""
    return "\x1f".join(binding.fields()).encode()


def random_binding(rng: random.Random) -> AclBinding:
    name = rng.choice(["*", "", "a", "ab", "abc", "abd", "b", "ba", "é", "é1", "topic-1"])
    return AclBinding.of(
        rng.choice(RESOURCE_TYPES),
        name,
        rng.choice([PatternType.LITERAL, PatternType.PREFIXED]),
        rng.choice(PRINCIPALS),
        rng.choice(["*", "10.0.0.1"]),
        rng.choice(OPERATIONS),
        rng.choice([AclPermissionType.ALLOW, AclPermissionType.DENY]),
    )


def random_history(
    index: AclIndex, rng: random.Random, events: int, batch_size: int
) -> dict[bytes, AclBinding]:
    """Apply random creates/deletes in batches; return the model's live set."""
    live: dict[bytes, AclBinding] = {}
    offset = index.position.offset
    batch = index.batch()
    for i in range(events):
        offset += 1
        binding = random_binding(rng)
        key = log_key(binding)
        if rng.random() < 0.35:
            batch.remove(key)
            live.pop(key, None)
        else:
            batch.create(key, binding)
            live[key] = binding
        if (i + 1) % batch_size == 0:
            batch.commit(offset=offset, timestamp_ms=1000 + offset)
            batch = index.batch()
    batch.commit(offset=offset, timestamp_ms=1000 + offset)
    return live


def commit_random_changes(
    index: AclIndex, rng: random.Random, live: dict[bytes, AclBinding], offset: int, *,
    new: Callable[[random.Random], AclBinding] = random_binding, most: int = 4,
    deletes: float = 0.35,
) -> None:  # fmt: skip
    """One to ``most`` random changes committed at ``offset`` (:func:`random_changes`)."""
    batch = index.batch()
    random_changes(batch, rng, live, new=new, most=most, deletes=deletes)
    batch.commit(offset=offset, timestamp_ms=offset)


def random_changes(
    batch: IndexBatch, rng: random.Random, live: dict[bytes, AclBinding], *,
    new: Callable[[random.Random], AclBinding] = random_binding, most: int = 4,
    deletes: float = 0.35,
) -> None:  # fmt: skip
    """One to ``most`` random changes in ``batch``: each deletes one of ``live`` (a share
    ``deletes`` of them) or creates ``new(rng)``; ``live`` (the model) follows them."""
    for _ in range(rng.randint(1, most)):
        binding = new(rng)
        key = log_key(binding)
        if rng.random() < deletes and live:
            key = rng.choice(sorted(live))
            batch.remove(key)
            live.pop(key)
        else:
            batch.create(key, binding)
            live[key] = binding


@pytest.fixture
def index(tmp_path: Path) -> AclIndex:
    idx = AclIndex(tmp_path / "index", reader_version=3)
    yield idx  # type: ignore[misc]
    idx.close()


names = st.text(min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    rt=st.sampled_from(list(ResourceType)),
    name=names,
    pt=st.sampled_from(list(PatternType)),
    principal=names,
    host=names,
    op=st.sampled_from(list(AclOperation)),
    perm=st.sampled_from(list(AclPermissionType)),
)
def test_binding_encoding_round_trips(
    rt: ResourceType,
    name: str,
    pt: PatternType,
    principal: str,
    host: str,
    op: AclOperation,
    perm: AclPermissionType,
) -> None:
    if rt is ResourceType.ANY or pt in (PatternType.ANY, PatternType.MATCH):
        return
    if op is AclOperation.ANY or perm is AclPermissionType.ANY:
        return
    binding = AclBinding.of(rt, name, pt, principal, host, op, perm)
    assert decode_binding(encode_binding(binding)) == binding
    assert decode_binding(b"xy" + encode_binding(binding), 2) == binding


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
def test_lookups_equal_kafka_filter_semantics_over_the_replayed_live_set(
    index: AclIndex, batch_size: int
) -> None:
    rng = random.Random(batch_size)
    live = random_history(index, rng, 800, batch_size)
    view = index.view()
    assert sorted(view.bindings()) == sorted(live.values())
    assert index.counters.bindings == len(live)
    for _ in range(300):
        rt = rng.choice(RESOURCE_TYPES)
        name = rng.choice(["*", "", "a", "ab", "abc", "abcd", "abd", "ba", "é1", "x", "topic-1"])
        want = ResourcePatternFilter(resource_type=rt, name=name, pattern_type=PatternType.MATCH)
        expected = sorted(b for b in live.values() if want.matches(b.pattern))
        assert sorted(view.matching_acls(rt, name)) == expected, (rt, name)
        assert sorted(view.matching_acls(rt, name)) == expected  # again, from the cache
        principal = rng.choice(PRINCIPALS)
        by_principal = sorted(
            b for b in live.values() if b.resource_type is rt and b.principal == principal
        )
        assert sorted(view.acls_for_principal(rt, principal)) == by_principal


def test_describe_equals_filter_matching_in_kafka_order(index: AclIndex) -> None:
    rng = random.Random(7)
    live = random_history(index, rng, 600, 50)
    view = index.view()
    for _ in range(300):
        acl_filter = AclBindingFilter.of(
            rng.choice([ResourceType.ANY, *RESOURCE_TYPES]),
            rng.choice([None, "a", "ab", "*", "topic-1"]),
            rng.choice([PatternType.ANY, PatternType.MATCH, *PATTERN_TYPES]),
            rng.choice([None, *PRINCIPALS]),
            rng.choice([None, "*"]),
            rng.choice([AclOperation.ANY, *OPERATIONS]),
            rng.choice([AclPermissionType.ANY, AclPermissionType.ALLOW]),
        )
        expected = sorted(b for b in live.values() if acl_filter.matches(b))
        assert view.acls(acl_filter) == expected, acl_filter


def test_changes_within_one_batch_see_each_other(index: AclIndex) -> None:
    a = AclBinding.of(
        ResourceType.TOPIC, "t", PatternType.PREFIXED, "User:a", "*", AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    batch = index.batch()
    batch.create(log_key(a), a)
    batch.create(log_key(a), a)  # a duplicate create changes nothing
    batch.remove(log_key(a))
    batch.remove(log_key(a))  # removing an absent binding changes nothing
    batch.create(log_key(a), a)
    batch.commit(offset=4, timestamp_ms=99)
    assert list(index.view().bindings()) == [a]
    assert index.counters.bindings == 1
    assert index.view().matching_acls(ResourceType.TOPIC, "topic") == (a,)
    batch = index.batch()
    batch.remove(log_key(a))  # a tombstone carries only the key
    batch.commit(offset=5, timestamp_ms=100)
    assert list(index.view().bindings()) == []
    assert index.view().matching_acls(ResourceType.TOPIC, "topic") == ()
    assert index.counters.bindings == 0


def test_position_bindings_and_settings_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "index"
    index = AclIndex(path, reader_version=3)
    assert index.position.offset == -1
    live = random_history(index, random.Random(3), 300, 64)
    batch = index.batch()
    batch.alter_config("super.users", "User:admin")
    batch.alter_config("allow.everyone.if.no.acl.found", "true")
    batch.commit(offset=300, timestamp_ms=5000)
    batch = index.batch()
    batch.alter_config("allow.everyone.if.no.acl.found", None)
    batch.commit(offset=301, timestamp_ms=5001)
    before = (index.position, index.counters, sorted(index.view().bindings()))
    index.close()

    reopened = AclIndex(path, reader_version=3)
    try:
        assert reopened.position.offset == 301
        assert reopened.position.timestamp_ms == 5001
        assert (reopened.position, reopened.counters, sorted(reopened.view().bindings())) == before
        assert sorted(reopened.view().bindings()) == sorted(live.values())
        assert reopened.config == {"super.users": "User:admin"}
        # the prefix-length counters came back too: a PREFIXED lookup still finds its bindings
        prefixed = [b for b in live.values() if b.pattern_type is PatternType.PREFIXED]
        assert prefixed, "the random history should hold PREFIXED bindings"
        probe = prefixed[0]
        assert probe in reopened.view().matching_acls(probe.resource_type, probe.name + "zz")
    finally:
        reopened.close()


def test_a_view_is_a_snapshot_and_the_cache_is_never_stale(index: AclIndex) -> None:
    a = AclBinding.of(
        ResourceType.TOPIC, "*", PatternType.LITERAL, "User:a", "*", AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    batch = index.batch()
    batch.create(log_key(a), a)
    batch.commit(offset=0, timestamp_ms=10)
    old = index.view()
    assert old.matching_acls(ResourceType.TOPIC, "orders") == (a,)  # now cached
    batch = index.batch()
    batch.remove(log_key(a))
    batch.commit(offset=1, timestamp_ms=11)
    new = index.view()
    assert new.position.offset == 1
    assert new.matching_acls(ResourceType.TOPIC, "orders") == ()
    assert old.position.offset == 0
    assert old.matching_acls(ResourceType.TOPIC, "orders") == (a,)  # its own snapshot
    assert index.view().matching_acls(ResourceType.TOPIC, "orders") == ()


def test_concurrent_readers_see_whole_batches(index: AclIndex) -> None:
    """Each batch creates a pair of bindings; a reader must never see half a pair."""
    stop = threading.Event()
    errors: list[str] = []

    def read() -> None:
        while not stop.is_set():
            view = index.view()
            found = view.matching_acls(ResourceType.GROUP, "g")
            if len(found) != 2 * (view.position.offset + 1):
                errors.append(f"{len(found)} bindings at offset {view.position.offset}")

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(300):
            batch = index.batch()
            for principal in ("User:x", "User:y"):
                b = AclBinding.of(
                    ResourceType.GROUP, "g", PatternType.LITERAL,
                    f"{principal}{i}", "*", AclOperation.READ, AclPermissionType.ALLOW,
                )
                batch.create(log_key(b), b)
            batch.commit(offset=i, timestamp_ms=i)
    finally:
        stop.set()
        reader.join()
    assert errors == []


def test_stop_and_operator_skip_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "index"
    index = AclIndex(path, reader_version=3)
    batch = index.batch()
    batch.commit(offset=9, timestamp_ms=1)
    with pytest.raises(SkipRefusedError, match="not stopped"):
        index.record_skip(10, reason="corrupt", actor="ops")
    index.record_stop(StopRecord(offset=10, reason="undecodable", recorded_ms=5))
    with pytest.raises(SkipRefusedError, match="stopped at 10"):
        index.record_skip(11, reason="corrupt", actor="ops")
    with pytest.raises(SkipRefusedError, match="non-empty"):
        index.record_skip(10, reason=" ", actor="ops")
    skip = index.record_skip(10, reason="record damaged on disk", actor="User:ops")
    assert index.position.offset == 10
    assert index.stopped is None
    assert index.counters.skipped_records == 1
    index.close()
    reopened = AclIndex(path, reader_version=3)
    try:
        assert reopened.skips() == [skip]
        assert skip.stop_reason == "undecodable"
        assert reopened.stopped is None
        assert reopened.position.offset == 10
    finally:
        reopened.close()


def test_a_stop_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "index"
    index = AclIndex(path, reader_version=3)
    index.record_stop(StopRecord(offset=0, reason="needs format v4", recorded_ms=5))
    index.close()
    reopened = AclIndex(path, reader_version=3)
    try:
        assert reopened.stopped == StopRecord(offset=0, reason="needs format v4", recorded_ms=5)
    finally:
        reopened.close()


def test_reader_version_mismatches_require_a_rebuild(tmp_path: Path) -> None:
    newer = tmp_path / "newer"
    AclIndex(newer, reader_version=3).close()
    with pytest.raises(IndexRebuildRequiredError, match="reads up to v2"):
        AclIndex(newer, reader_version=2)

    ignoring = tmp_path / "ignoring"
    index = AclIndex(ignoring, reader_version=2)
    batch = index.batch()
    batch.ignore()
    batch.commit(offset=0, timestamp_ms=1)
    index.close()
    with pytest.raises(IndexRebuildRequiredError, match="ignored 1 event"):
        AclIndex(ignoring, reader_version=3)

    clean = tmp_path / "clean"
    AclIndex(clean, reader_version=2).close()
    AclIndex(clean, reader_version=3).close()  # an upgrade with nothing ignored is fine
    with pytest.raises(IndexRebuildRequiredError):
        AclIndex(clean, reader_version=2)  # and it is now a v3 index


def test_a_second_opener_gets_a_typed_error(index: AclIndex) -> None:
    with pytest.raises(IndexOpenError, match="another replica process"):
        AclIndex(index.path, reader_version=3)


def _applies(binding: AclBinding, resource_type: ResourceType, name: str) -> bool:
    """Kafka's pattern match, written out: the literal name, the literal ``*``, a prefix."""
    if binding.resource_type is not resource_type:
        return False
    if binding.pattern_type is PatternType.PREFIXED:
        return name.startswith(binding.name)
    return binding.name in (name, "*")


def test_a_change_drops_only_the_cached_answers_it_can_affect(index: AclIndex) -> None:
    def topic(name: str, pattern: PatternType = PatternType.LITERAL) -> AclBinding:
        return AclBinding.of(
            ResourceType.TOPIC, name, pattern, "User:a", "*", AclOperation.READ,
            AclPermissionType.ALLOW,
        )  # fmt: skip

    def commit(offset: int, create: AclBinding) -> None:
        batch = index.batch()
        batch.create(log_key(create), create)
        batch.commit(offset=offset, timestamp_ms=offset)

    names = ["orders", "orders-eu", "payments", "pay"]
    commit(0, topic("orders"))
    for name in names:
        index.view().matching_acls(ResourceType.TOPIC, name)  # cache every answer
        index.view().matching_acls(ResourceType.GROUP, name)

    def served_from_cache(name: str, rt: ResourceType = ResourceType.TOPIC) -> bool:
        before = index.cache_figures().hits
        index.view().matching_acls(rt, name)
        return index.cache_figures().hits == before + 1

    commit(1, topic("payments"))  # a literal: only "payments" is affected
    assert [served_from_cache(n) for n in names] == [True, True, False, True]
    commit(2, topic("orders-", PatternType.PREFIXED))  # a prefix: "orders-eu" only
    assert [served_from_cache(n) for n in names] == [True, False, True, True]
    commit(3, topic("*"))  # the wildcard: every topic, no group
    assert [served_from_cache(n) for n in names] == [False] * 4
    assert all(served_from_cache(n, ResourceType.GROUP) for n in names)
    assert set(index.view().matching_acls(ResourceType.TOPIC, "orders-eu")) == {
        topic("orders-", PatternType.PREFIXED),
        topic("*"),
    }


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_cached_answers_equal_a_replay_under_interleaved_changes(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    """Small batches of random changes over shared names, with queries between them from
    the newest view and from views left behind: every answer (cached or read) equals the
    bindings of the live set at that view's offset that apply to the resource."""
    rng = random.Random(seed)
    index = AclIndex(tmp_path_factory.mktemp("idx"), reader_version=3, cache_size=16)
    try:
        live: dict[bytes, AclBinding] = {}
        states: dict[int, dict[bytes, AclBinding]] = {}
        views: list[IndexView] = []
        view: IndexView | None = None
        offset = -1
        for _ in range(30):
            offset += 1
            commit_random_changes(index, rng, live, offset)
            states[offset] = dict(live)
            views.append(index.view())
            for _ in range(12):
                view = rng.choice(views[-3:])
                rt = rng.choice(RESOURCE_TYPES)
                name = rng.choice(["a", "ab", "abc", "abd", "b", "ba", "é1", "topic-1", "*", ""])
                expected = {
                    b
                    for b in states[view.position.offset].values()
                    if _applies(b, rt, name)
                }
                assert set(view.matching_acls(rt, name)) == expected, (view.position, rt, name)
        assert index.cache_figures().hits > 0
    finally:
        views.clear()
        view = None  # no view may outlive the index
        index.close()


def _crowded_binding(rng: random.Random) -> AclBinding:
    """A binding of one of a few patterns that many principals share (more than the
    ``WHOLE_PATTERN_KEYS`` the test sets), so that decisions read them principal by principal."""
    name, pattern_type = rng.choice([("ab", PatternType.PREFIXED), ("a", PatternType.PREFIXED),
                                     ("abc", PatternType.LITERAL), ("*", PatternType.LITERAL)])  # fmt: skip
    return AclBinding.of(
        ResourceType.TOPIC, name, pattern_type, rng.choice(CROWD), rng.choice(["*", "10.0.0.1"]),
        rng.choice(OPERATIONS), rng.choice([AclPermissionType.ALLOW, AclPermissionType.DENY]),
    )  # fmt: skip


CROWD = [f"User:u{i}" for i in range(60)] + ["User:*", "User:bob"]


@settings(max_examples=6, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_decisions_on_crowded_patterns_read_per_principal_equal_the_pure_rules(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    """Patterns of hundreds of bindings: a decision reads the asking principal's and
    ``User:*``'s bindings of each (a partial summary, filled by later requests and kept in the
    cache), and must decide as the pure rules do over the live set at its view's offset, from
    the newest view and from views left behind, while commits change those patterns; a
    listing of the same resource afterwards (the summary completed) is every binding."""
    patch = pytest.MonkeyPatch()
    patch.setattr(view_module, "WHOLE_PATTERN_KEYS", 64)  # patterns of ~150 are read partially,
    # whatever the default
    rng = random.Random(seed)
    index = AclIndex(tmp_path_factory.mktemp("idx"), reader_version=3, cache_size=64)
    try:
        live: dict[bytes, AclBinding] = {}
        batch = index.batch()
        for _ in range(600):
            binding = _crowded_binding(rng)
            batch.create(log_key(binding), binding)
            live[log_key(binding)] = binding
        batch.commit(offset=0, timestamp_ms=0)
        states: dict[int, dict[bytes, AclBinding]] = {0: dict(live)}
        views: list[IndexView] = [index.view()]
        config = AuthorizerConfig()
        partial_seen = False
        for offset in range(1, 25):
            commit_random_changes(index, rng, live, offset, new=_crowded_binding, most=3, deletes=0.4)
            states[offset] = dict(live)
            views.append(index.view())
            for _ in range(15):
                view = rng.choice(views[-3:])
                state = list(states[view.position.offset].values())
                principal = rng.choice([*CROWD, "User:nobody"])
                host = rng.choice(["10.0.0.1", "10.0.0.2"])
                actions = [Action(rng.choice([*OPERATIONS[:2], AclOperation.DESCRIBE]), ResourceType.TOPIC,
                                  rng.choice(["abc", "abd", "ab", "a", "b", "abcx"]))]  # fmt: skip
                got = authorize(view, config, principal, host, actions)
                want = authorize(ScanAclView(state), config, principal, host, actions)
                assert [(d.result, d.rule) for d in got] == [(d.result, d.rule) for d in want], (
                    view.position, principal, host, actions
                )
                # Which ACL explains a decision may differ (the order of ACLs within a
                # principal and host is the store's), never that it is one that decides so.
                for decision in got:
                    if decision.binding is not None:
                        b = decision.binding
                        assert b in state and _applies(b, ResourceType.TOPIC, actions[0].name)
                        assert b.principal in (principal, "User:*") and b.host in (host, "*")
                        allowed = decision.result is AuthorizationResult.ALLOWED
                        assert (b.permission_type is AclPermissionType.ALLOW) == allowed
                partial_seen |= any(
                    type(s) is PartialPatternAcls and not s.complete
                    for s in view.applicable_acls_of((principal,), ResourceType.TOPIC, actions[0].name)
                )
                if rng.random() < 0.2:
                    name = actions[0].name
                    expected = {b for b in state if _applies(b, ResourceType.TOPIC, name)}
                    assert set(view.matching_acls(ResourceType.TOPIC, name)) == expected
        assert partial_seen, "no decision read a pattern principal by principal: the test lost its point"
    finally:
        patch.undo()
        views.clear()
        index.close()
