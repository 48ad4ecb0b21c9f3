"""The answer cache's memory bound: its byte count worked out by hand, its eviction order,
its estimate against the memory Python allocates for what it holds, and decisions from an
index whose cache evicts all the time against the pure rules over a replay."""

from __future__ import annotations

import gc
import random
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli import build_parser
from cli.serve import node_settings
from replicator.index import AclIndex, IndexView
from replicator.index import view as view_module
from replicator.index.cache import DEFAULT_CACHE_MAX_BYTES, MatchCache
from replicator.index.sizes import (
    ANSWER_SLOT_BYTES,
    BINDING_BYTES,
    LOADED_BYTES,
    PARTIAL_BYTES,
    PATTERN_SLOT_BYTES,
    PRINCIPAL_BYTES,
    SUMMARY_BYTES,
)
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizerConfig, ScanAclView, authorize
from store.authorizer.grants import PartialPatternAcls, PatternAcls, pattern_acls
from store.errors import InvalidConfigError
from tests.replicator.test_index import log_key

pytestmark = pytest.mark.unit

TOPIC = int(ResourceType.TOPIC)
LITERAL = int(PatternType.LITERAL)
PREFIXED = int(PatternType.PREFIXED)
S, P, B = SUMMARY_BYTES, PRINCIPAL_BYTES, BINDING_BYTES


def acl(
    name: str,
    principal: str,
    operation: AclOperation = AclOperation.READ,
    pattern_type: PatternType = PatternType.LITERAL,
) -> AclBinding:
    return AclBinding.of(
        ResourceType.TOPIC, name, pattern_type, principal, "*", operation, AclPermissionType.ALLOW
    )


def test_the_bytes_held_count_each_slot_and_each_summary_once() -> None:
    prefix = pattern_acls([
        acl("orders-", "User:a", pattern_type=PatternType.PREFIXED),
        acl("orders-", "User:b", pattern_type=PatternType.PREFIXED),
        acl("orders-", "User:b", AclOperation.WRITE, PatternType.PREFIXED),
    ])  # fmt: skip
    eu = pattern_acls([acl("orders-eu", "User:a")])
    us = pattern_acls([acl("orders-us", "User:c"), acl("orders-us", "User:c", AclOperation.WRITE)])
    cache = MatchCache(100, 10**9)
    cache.put(0, (TOPIC, "orders-eu"), (eu, prefix))
    cache.put_pattern(0, (TOPIC, PREFIXED, "orders-"), prefix)
    cache.put(0, (TOPIC, "orders-us"), (us, prefix))
    eu_answer = ANSWER_SLOT_BYTES + 9 + (S + P + B)  # "orders-eu": 9 characters
    us_answer = ANSWER_SLOT_BYTES + 9 + (S + P + 2 * B)
    prefix_slot = PATTERN_SLOT_BYTES + 7  # "orders-"
    prefix_summary = S + 2 * P + 3 * B  # counted once, though three slots hold it
    assert cache.figures().bytes == eu_answer + us_answer + prefix_slot + prefix_summary
    assert (cache.figures().size, cache.figures().patterns) == (2, 1)

    cache.advance([(TOPIC, LITERAL, "orders-us")])  # drops the answer for orders-us only
    assert cache.figures().bytes == eu_answer + prefix_slot + prefix_summary
    cache.advance([(TOPIC, PREFIXED, "orders-")])  # the prefix's slot and the answer under it
    assert cache.figures().bytes == 0
    assert (cache.figures().size, cache.figures().patterns) == (0, 0)


def one_acl_answer(name: str) -> tuple[PatternAcls, ...]:
    return (pattern_acls([acl(name, "User:a")]),)


def test_past_the_budget_the_least_recently_used_answer_or_pattern_goes_first() -> None:
    answer = ANSWER_SLOT_BYTES + 2 + S + P + B  # every name here has 2 characters
    pattern = PATTERN_SLOT_BYTES + 2 + S  # the summary of a pattern without bindings
    cache = MatchCache(100, 2 * answer)
    cache.put(0, (TOPIC, "n1"), one_acl_answer("n1"))
    cache.put(0, (TOPIC, "n2"), one_acl_answer("n2"))
    assert cache.figures().evicted_by_bounds == 0
    assert cache.get(0, (TOPIC, "n1")) is not None  # n2 is now the least recently used
    cache.put(0, (TOPIC, "n3"), one_acl_answer("n3"))
    assert cache.get(0, (TOPIC, "n2")) is None
    assert cache.figures().bytes == 2 * answer
    # n1 was served before n3 was put: the pattern pushes n1 out, and fits beside n3.
    cache.put_pattern(0, (TOPIC, PREFIXED, "p-"), PatternAcls())
    assert cache.get(0, (TOPIC, "n1")) is None
    assert cache.figures().bytes == answer + pattern
    # Now the pattern is the least recently used: n4 pushes it out, not n3.
    assert cache.get(0, (TOPIC, "n3")) is not None
    cache.put(0, (TOPIC, "n4"), one_acl_answer("n4"))
    assert cache.get_pattern(0, (TOPIC, PREFIXED, "p-")) is None
    assert cache.get(0, (TOPIC, "n3")) is not None and cache.get(0, (TOPIC, "n4")) is not None
    figures = cache.figures()
    assert (figures.bytes, figures.size, figures.patterns, figures.evicted_by_bounds) == (2 * answer, 2, 0, 3)


def test_the_number_of_answers_is_still_bounded() -> None:
    cache = MatchCache(2, 10**9)
    for name in ("n1", "n2", "n3"):
        cache.put(0, (TOPIC, name), one_acl_answer(name))
    assert cache.get(0, (TOPIC, "n1")) is None
    assert cache.figures().size == 2 and cache.figures().evicted_by_bounds == 1


def test_an_answer_larger_than_the_budget_is_not_kept() -> None:
    cache = MatchCache(100, ANSWER_SLOT_BYTES + 2 + S + P + B - 1)
    cache.put(0, (TOPIC, "n1"), one_acl_answer("n1"))
    assert cache.get(0, (TOPIC, "n1")) is None
    assert cache.figures().bytes == 0


def test_a_partial_summary_is_counted_again_as_requests_fill_it() -> None:
    partial = PartialPatternAcls(b"pfx")
    partial.load("User:a", [acl("p-", "User:a", pattern_type=PatternType.PREFIXED)])
    own = ANSWER_SLOT_BYTES + 4  # "p-x1"
    before = own + S + P + B + PARTIAL_BYTES + 3 + LOADED_BYTES
    grown = before + P + 2 * B + LOADED_BYTES
    other = ANSWER_SLOT_BYTES + 2 + S + P + B
    cache = MatchCache(100, grown + other - 1)  # room for both before the fill, not after
    cache.put(0, (TOPIC, "n1"), one_acl_answer("n1"))
    cache.put(0, (TOPIC, "p-x1"), (partial,))
    assert cache.figures().bytes == before + other
    partial.load("User:b", [acl("p-", "User:b", op, PatternType.PREFIXED)
                            for op in (AclOperation.READ, AclOperation.WRITE)])  # fmt: skip
    assert cache.figures().bytes == before + other  # not served since
    hit = cache.get(0, (TOPIC, "p-x1"))
    assert hit is not None and hit[0] is partial
    assert cache.figures().bytes == grown  # counted again, and n1 evicted to make room
    assert cache.get(0, (TOPIC, "n1")) is None


def test_a_memory_budget_of_zero_turns_the_cache_off() -> None:
    cache = MatchCache(100, 0)
    cache.put(0, (TOPIC, "n1"), one_acl_answer("n1"))
    cache.put_pattern(0, (TOPIC, PREFIXED, "p-"), PatternAcls())
    assert cache.get(0, (TOPIC, "n1")) is None and cache.get_pattern(0, (TOPIC, PREFIXED, "p-")) is None
    with pytest.raises(ValueError, match="-1"):
        MatchCache(100, -1)


def _shaped(rng: random.Random, teams: int) -> AclBinding:
    """A binding of the soak's shape (``bench.downgrade.synthetic_bindings``): literal topic
    names of a team's apps, prefixes of teams and apps, a principal among many."""
    team = f"team{rng.randrange(teams)}."
    prefixed = rng.random() < 0.2
    name = team + ("" if prefixed else f"app{rng.randrange(40)}.events")
    if prefixed and rng.random() < 0.5:
        name += f"app{rng.randrange(40)}."
    return AclBinding.of(
        ResourceType.TOPIC, name, PatternType.PREFIXED if prefixed else PatternType.LITERAL,
        f"User:svc{rng.randrange(2000)}", "*" if rng.random() < 0.9 else f"10.0.0.{rng.randrange(8)}",
        rng.choice([AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL]),
        AclPermissionType.DENY if rng.random() < 0.2 else AclPermissionType.ALLOW,
    )  # fmt: skip


def test_the_estimate_is_within_a_quarter_of_the_memory_the_cache_holds(tmp_path: Path) -> None:
    """Python's own count of the bytes allocated (and still held) while the cache fills with
    answers read from RocksDB, against the cache's estimate: whole summaries of the soak's
    shape, and partial ones of a crowded prefix read principal by principal."""
    patch = pytest.MonkeyPatch()
    patch.setattr(view_module, "WHOLE_PATTERN_KEYS", 64)
    rng = random.Random(7)
    index = AclIndex(tmp_path / "idx", reader_version=3, cache_size=10**6, cache_max_bytes=10**12)
    try:
        batch = index.batch()
        for _ in range(20_000):
            binding = _shaped(rng, 100)
            batch.create(log_key(binding), binding)
        for i in range(400):  # a crowded prefix: read principal by principal
            binding = acl("crowd.", f"User:c{i}", pattern_type=PatternType.PREFIXED)
            batch.create(log_key(binding), binding)
        batch.commit(offset=0, timestamp_ms=0)
        asked = [
            (f"User:svc{rng.randrange(2000)}", f"team{rng.randrange(100)}.app{rng.randrange(40)}.events")
            for _ in range(3000)
        ]
        asked += [(f"User:c{i}", f"crowd.x{i % 50}") for i in range(0, 400, 3)]
        gc.collect()
        tracemalloc.start()
        try:
            held_before = tracemalloc.get_traced_memory()[0]
            for principal, name in asked:
                view = index.view()
                view.applicable_acls_of((principal, "User:*"), ResourceType.TOPIC, name)
                del view
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - held_before
        finally:
            tracemalloc.stop()
        figures = index.cache_figures()
        assert figures.size > 2000 and figures.patterns > 2000
        assert 0.75 * held <= figures.bytes <= 1.25 * held, (figures.bytes, held)
    finally:
        patch.undo()
        index.close()


CROWD = [f"User:u{i}" for i in range(40)] + ["User:*"]


def _binding(rng: random.Random) -> AclBinding:
    """Patterns that many principals share (some read partially) and literal names."""
    name, pattern_type = rng.choice([("ab", PatternType.PREFIXED), ("a", PatternType.PREFIXED),
                                     ("*", PatternType.LITERAL)]
                                    + [(f"a{k}", PatternType.LITERAL) for k in range(12)])  # fmt: skip
    return AclBinding.of(
        ResourceType.TOPIC, name, pattern_type, rng.choice(CROWD), rng.choice(["*", "10.0.0.1"]),
        rng.choice([AclOperation.READ, AclOperation.WRITE, AclOperation.ALL]),
        rng.choice([AclPermissionType.ALLOW, AclPermissionType.DENY]),
    )  # fmt: skip


@settings(max_examples=6, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_decisions_from_a_cache_that_evicts_all_the_time_equal_the_pure_rules(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    """A budget of a few answers: most lookups evict something (partial summaries included,
    filled and counted again), while commits change the patterns.  Every decision, from the
    newest view and from views left behind, equals the pure rules over the live set at its
    view's offset, and the cache never holds more than its budget."""
    patch = pytest.MonkeyPatch()
    patch.setattr(view_module, "WHOLE_PATTERN_KEYS", 32)  # the prefixes' ~100 are read partially
    rng = random.Random(seed)
    # Room for the shared patterns' summaries and a few answers: at 40,000 the summaries
    # alone filled it for 5 seeds in 200 (no answer ever stayed); at 60,000 none of 500.
    budget = 60_000
    index = AclIndex(
        tmp_path_factory.mktemp("idx"), reader_version=3, cache_size=1000, cache_max_bytes=budget
    )
    try:
        live: dict[bytes, AclBinding] = {}
        batch = index.batch()
        for _ in range(500):
            binding = _binding(rng)
            batch.create(log_key(binding), binding)
            live[log_key(binding)] = binding
        batch.commit(offset=0, timestamp_ms=0)
        states = {0: dict(live)}
        views: list[IndexView] = [index.view()]
        config = AuthorizerConfig()
        for offset in range(1, 20):
            batch = index.batch()
            for _ in range(rng.randint(1, 3)):
                if rng.random() < 0.4 and live:
                    key = rng.choice(sorted(live))
                    batch.remove(key)
                    live.pop(key)
                else:
                    binding = _binding(rng)
                    batch.create(log_key(binding), binding)
                    live[log_key(binding)] = binding
            batch.commit(offset=offset, timestamp_ms=offset)
            states[offset] = dict(live)
            views.append(index.view())
            for _ in range(25):
                view = rng.choice(views[-3:])
                state = list(states[view.position.offset].values())
                principal = rng.choice([*CROWD, "User:nobody"])
                host = rng.choice(["10.0.0.1", "10.0.0.2"])
                names = ["ab", "abc", "a", "b", *(f"a{k}" for k in range(12))]
                operations = [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE]
                actions = [
                    Action(rng.choice(operations), ResourceType.TOPIC, rng.choice(names))
                    for _ in range(rng.randint(1, 4))
                ]
                got = authorize(view, config, principal, host, actions)
                want = authorize(ScanAclView(state), config, principal, host, actions)
                assert [(d.result, d.rule) for d in got] == [(d.result, d.rule) for d in want], (
                    view.position, principal, host, actions
                )
                assert index.cache_figures().bytes <= budget
        figures = index.cache_figures()
        assert figures.evicted_by_bounds > 100 and figures.hits > 0, figures
    finally:
        views.clear()
        patch.undo()
        index.close()


def test_serve_takes_the_budget_in_mib(tmp_path: Path) -> None:
    def replica(*options: str) -> int:
        args = build_parser().parse_args(["serve", "--data-dir", str(tmp_path), *options])
        return node_settings(args).replica.cache_max_bytes

    assert replica() == DEFAULT_CACHE_MAX_BYTES == 128 * 1024 * 1024
    assert replica("--replica-cache-mb", "1.5") == 1_572_864
    assert replica("--replica-cache-mb", "0") == 0
    with pytest.raises(InvalidConfigError, match=r"--replica-cache-mb .* got -1"):
        replica("--replica-cache-mb", "-1")
