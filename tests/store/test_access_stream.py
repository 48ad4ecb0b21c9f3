"""The streamed access diff against the pure engine: on random states, for every budget
(down to one binding, so that every prefix becomes an upper node), the walk gives exactly
the rows of ``compact(access_diff(before, after))``, each once."""

from __future__ import annotations

import itertools
import random

import pytest

from store.access_diff import AccessDelta, AclState, access_diff, compact, older_reader_state
from store.access_stream import (
    StateChange,
    StateSource,
    WalkFigures,
    merge_by_name,
    parted_diff,
    streamed_diff,
    type_parts,
)
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.unit

LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
# names up to four characters over a, b and *: deep prefix chains, "" and "*" among them
NAMES = [""] + [
    "".join(chars) for size in (1, 2, 3, 4) for chars in itertools.product("ab*", repeat=size)
    if chars.count("*") <= 1
]  # fmt: skip
OPS = [AclOperation.READ, AclOperation.WRITE, AclOperation.ALL, AclOperation.DESCRIBE,
       AclOperation.CREATE_TOKENS]  # fmt: skip


def random_state(rng: random.Random, size: int) -> AclState:
    bindings = {
        AclBinding.of(
            rng.choice([ResourceType.TOPIC, ResourceType.TOPIC, ResourceType.GROUP]),
            rng.choice(NAMES), rng.choice([LITERAL, PREFIXED, PREFIXED]),
            rng.choice(["User:bob", "User:*", "User:eve", "Group:ops"]),
            rng.choice(["*", "*", "10.0.0.1"]), rng.choice(OPS),
            rng.choice([AclPermissionType.ALLOW, AclPermissionType.ALLOW, AclPermissionType.DENY]),
        )
        for _ in range(size)
    }  # fmt: skip
    return AclState.of(bindings, rng.sample(["User:alice", "User:root"], rng.randint(0, 1)),
                       rng.random() < 0.2)  # fmt: skip


def change_of(rng: random.Random, before: AclState, kind: int) -> tuple[AclState, StateChange]:
    """A pair (the state after, the change that makes it): a mutation with settings, a dry
    run's small change, or an older reader's view."""
    if kind == 0:
        kept = [b for b in before.bindings if rng.random() < 0.8]
        supers = before.super_users if rng.random() < 0.8 else frozenset({"User:x"})
        after = AclState.of([*kept, *random_state(rng, 5).bindings], supers,
                            before.allow_everyone_if_no_acl_found)  # fmt: skip
        return after, StateChange.between(before, after)
    if kind == 1:
        flipped = set(before.bindings) ^ set(random_state(rng, 2).bindings)
        after = AclState(frozenset(flipped), before.super_users, before.allow_everyone_if_no_acl_found)
        return after, StateChange.of_bindings(
            before, added=after.bindings - before.bindings, removed=before.bindings - after.bindings
        )
    version = rng.choice([1, 2])
    return older_reader_state(before, version)[0], StateChange.downgrade(before, version)


def rows_of(diff_rows: list[AccessDelta]) -> set[AccessDelta]:
    assert len(diff_rows) == len(set(diff_rows)), "a row given twice"
    return set(diff_rows)


@pytest.mark.parametrize(
    "seed", [*range(4), *(pytest.param(s, marks=pytest.mark.slow) for s in range(4, 20))]
)
def test_the_walk_gives_the_folded_rows_of_the_pure_engine_for_every_budget(seed: int) -> None:
    """60 state pairs per seed (240 in the unit tier), each walked with five budgets."""
    rng = random.Random(5000 + seed)
    for round_ in range(60):
        before = random_state(rng, rng.randint(0, 40))
        after, change = change_of(rng, before, round_ % 3)
        expected = compact(access_diff(before, after))
        for budget in (1, 2, 4, 8, 10_000):
            got = rows_of(list(streamed_diff(StateSource(before), change, budget=budget)))
            assert got == {*expected.widened, *expected.narrowed}, (seed, round_, budget)


def test_a_downgrade_reports_each_ignored_binding_once() -> None:
    rng = random.Random(9)
    state = random_state(rng, 60)
    figures = WalkFigures()
    heard: list[AclBinding] = []
    list(streamed_diff(StateSource(state), StateChange.downgrade(state, 1), budget=3,
                       figures=figures, on_dropped=heard.append))  # fmt: skip
    older, stopping = older_reader_state(state, 1)
    assert sorted(heard) == sorted(state.bindings - older.bindings)
    assert figures.dropped == stopping and figures.read == len(state.bindings)


def test_a_dry_run_reads_only_the_subtree_of_the_prefix_it_changes() -> None:
    def acl(name: str, pattern: PatternType = LITERAL) -> AclBinding:
        return AclBinding.of(ResourceType.TOPIC, name, pattern, "User:bob", "*",
                             AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip

    state = AclState.of([acl("*"), acl("pay-", PREFIXED), acl("pay-eu"), acl("orders"), acl("ops-a")])
    deny = AclBinding.of(ResourceType.TOPIC, "pay-", PREFIXED, "User:bob", "*", AclOperation.READ,
                         AclPermissionType.DENY)  # fmt: skip
    figures = WalkFigures()
    rows = list(streamed_diff(StateSource(state), StateChange.of_bindings(state, added=[deny]),
                              figures=figures))  # fmt: skip
    after = AclState(state.bindings | {deny})
    assert set(rows) == set(compact(access_diff(state, after)).narrowed)
    # "pay-" and "pay-eu" with the patterns above them ("*"), never "orders" or "ops-a"
    assert figures.read == 3


def test_runs_of_one_table_merge_in_walk_order() -> None:
    def run(*patterns: tuple[PatternType, str]) -> list[tuple[PatternType, str, list[AclBinding]]]:
        return [(pt, name, []) for pt, name in patterns]

    merged = merge_by_name(iter(r) for r in (
        run((LITERAL, "a"), (LITERAL, "b")), run((PREFIXED, "a"), (PREFIXED, "ab")), run((LITERAL, "ab"))
    ))  # fmt: skip
    assert [(pt, name) for pt, name, _ in merged] == [
        (PREFIXED, "a"), (LITERAL, "a"), (PREFIXED, "ab"), (LITERAL, "ab"), (LITERAL, "b")
    ]


@pytest.mark.parametrize(
    "seed", [*range(3), *(pytest.param(s, marks=pytest.mark.slow) for s in range(3, 12))]
)
def test_a_walk_in_parts_gives_the_rows_of_one_walk(seed: int) -> None:
    """An older reader's change (with settings in the log: the root's rows change too),
    walked in parts of 1, 3 and 1,000 bindings: the pure engine's rows, each once (as one
    walk's, their order follows how the walk was cut); the ignored bindings heard once."""
    rng = random.Random(7000 + seed)
    for _ in range(40):
        before = random_state(rng, rng.randint(0, 40))
        after, change = change_of(rng, before, 2)
        expected = compact(access_diff(before, after))
        for budget in (1, 8, 10_000):
            whole = list(streamed_diff(StateSource(before), change, budget=budget))
            for part_size in (1, 3, 1_000):
                heard: list[AclBinding] = []
                parted = list(parted_diff(StateSource(before), change, part_size=part_size,
                                          budget=budget, on_dropped=heard.append))  # fmt: skip
                assert rows_of(parted) == rows_of(whole) == {*expected.widened, *expected.narrowed}, seed
                assert sorted(heard) == sorted(before.bindings - after.bindings)


def test_parts_are_cut_between_the_roots_subtrees_only() -> None:
    listed = [(PREFIXED, "", 1), (LITERAL, "*", 1), (PREFIXED, "a", 2), (LITERAL, "a", 1),
              (LITERAL, "ab", 1), (PREFIXED, "ab", 1), (LITERAL, "b", 1), (PREFIXED, "c", 5),
              (LITERAL, "cd", 1), (LITERAL, "d", 1)]  # fmt: skip
    parts = [[name for _, name, _ in part] for part in type_parts(listed, lambda n: n, 2)]
    # "" and "*" are subtrees of their own; "a" holds "a" to "ab"; "c" holds "cd"
    assert parts == [["", "*"], ["a", "a", "ab", "ab"], ["b", "c", "cd"], ["d"]]
