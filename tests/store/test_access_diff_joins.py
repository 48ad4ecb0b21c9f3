"""The folded engine's shortcut (a literal's rows that are its parent prefix's are not
decided, the parent's rows lose the literal from their carve-outs instead) against the rows
decided one by one and then compacted, on states built to have many literals under shared
prefixes: the same principals above and below, hosts only a literal names, ``User:*``,
super users, both settings, DENYs; in one piece and split by key as the Spark path splits."""

from __future__ import annotations

import random

import pytest

import store.access_diff as engine
from store.access_diff import AccessDiff, AclState, access_diff, compact, older_reader_state, partial_diff
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

_OPS = [AclOperation.READ, AclOperation.WRITE, AclOperation.ALL, AclOperation.DESCRIBE,
        AclOperation.ALTER_CONFIGS]  # fmt: skip
_TYPES = (ResourceType.TOPIC, ResourceType.GROUP)
_EVERY_TYPE = [t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN)]


def tree_state(rng: random.Random) -> AclState:
    """Prefixes and literals nested a few levels deep under a few stems, few principals."""
    principals = ["User:a", "User:b", "User:c", "Group:g", "User:*"]
    weights = [5, 5, 3, 1, 1]
    hosts = ["*", "*", "*", "10.0.0.1", "10.0.0.2"]
    names = ["", "t", "t.", "t.x", "t.x.", "t.x.1", "t.x.2", "t.y", "t.y.1", "u", "u.1", "u.2",
             "t.x.1.z", "*"]  # fmt: skip
    bindings: set[AclBinding] = set()
    for _ in range(rng.randint(1, 18)):
        name = rng.choice(names)
        pattern = PatternType.LITERAL if name == "*" or rng.random() < 0.6 else PatternType.PREFIXED
        if name == "" and pattern is PatternType.LITERAL:
            continue
        bindings.add(AclBinding.of(
            rng.choice(_TYPES), name, pattern, rng.choices(principals, weights)[0],
            rng.choice(hosts), rng.choice(_OPS),
            AclPermissionType.DENY if rng.random() < 0.3 else AclPermissionType.ALLOW,
        ))  # fmt: skip
    supers = ["User:c"] if rng.random() < 0.15 else []
    return AclState.of(bindings, supers, rng.random() < 0.2)


def other_state(state: AclState, rng: random.Random) -> AclState:
    """A downgrade (prefixes dropped), a few bindings changed, or the settings too."""
    roll = rng.random()
    if roll < 0.4:
        return older_reader_state(state, 1)[0]
    kept = {b for b in state.bindings if rng.random() < 0.75}
    extra = sorted(tree_state(rng).bindings)
    kept |= set(rng.sample(extra, min(1, len(extra))))
    if roll < 0.9:
        return AclState(frozenset(kept), state.super_users, state.allow_everyone_if_no_acl_found)
    return AclState.of(kept, ["User:a"], not state.allow_everyone_if_no_acl_found)


def folded_by_parts(before: AclState, after: AclState, depth: int | None) -> AccessDiff:
    """partial_diff(folded) per type, over every key at once (None) or split by the first
    ``depth`` characters of the key (short keys in their own part), then compacted."""
    rows = []
    for rt in _EVERY_TYPE:  # a changed setting changes types with no binding too
        if depth is None:
            parts = [lambda key: True]
        else:
            stems = {b.name[:depth] for b in before.bindings | after.bindings if len(b.name) >= depth}
            parts = [lambda key: len(key) < depth or key == "*"]
            parts += [lambda key, s=s: len(key) >= depth and key.startswith(s) and key != "*"
                      for s in stems]  # fmt: skip
        for owns in parts:
            diff = partial_diff(before, after, rt, owns, folded=True)
            rows += [*diff.widened, *diff.narrowed]
    whole = AccessDiff(widened=tuple(r for r in rows if r.change.value == "widened"),
                       narrowed=tuple(r for r in rows if r.change.value == "narrowed"))  # fmt: skip
    return compact(whole)


def as_sets(diff: AccessDiff) -> tuple[set[object], set[object]]:
    return set(diff.widened), set(diff.narrowed)


@pytest.mark.parametrize(
    "seed", [*range(3), *(pytest.param(s, marks=pytest.mark.slow) for s in range(3, 12))]
)
def test_the_shortcut_gives_the_rows_decided_one_by_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 state pairs per seed; the shortcut taken for many literals (counted)."""
    taken: list[bool] = []
    plan = engine._join_plan

    def counted(*args: object) -> object:
        found = plan(*args)  # type: ignore[arg-type]
        taken.append(found is not None)
        return found

    monkeypatch.setattr(engine, "_join_plan", counted)
    rng = random.Random(4000 + seed)
    for _ in range(300):
        before = tree_state(rng)
        after = other_state(before, rng)
        expected = as_sets(compact(access_diff(before, after)))
        for depth in (None, 1, 2, 3):
            assert as_sets(folded_by_parts(before, after, depth)) == expected, (before, after, depth)
    assert sum(taken) > 300
