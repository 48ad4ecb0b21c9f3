"""The watch's judgement of one binding at a time (``drift_of``) agrees with the whole-state
drift (``drifts``) over random states, and both with set algebra over declared and live."""

from __future__ import annotations

import random

import pytest

from cli.drift import drift_of, drifts
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.desired import AclsFile, DesiredState, ResourcePrefix, Scope
from store.desired.attribution import Attribution, Origin

pytestmark = pytest.mark.unit


def _binding(rng: random.Random) -> AclBinding:
    return AclBinding.of(
        rng.choice([ResourceType.TOPIC, ResourceType.GROUP]), rng.choice(["a", "ab", "b", "x"]),
        rng.choice([PatternType.LITERAL, PatternType.PREFIXED]), rng.choice(["User:p", "User:q"]), "*",
        AclOperation.READ, rng.choice([AclPermissionType.ALLOW, AclPermissionType.DENY]),
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(30))
def test_one_binding_at_a_time_is_the_whole_state(seed: int) -> None:
    rng = random.Random(seed)
    scope = Scope(
        principals=frozenset(rng.sample(["User:p", "User:q"], rng.randint(0, 1))),
        resource_prefixes=frozenset({ResourcePrefix(ResourceType.TOPIC, rng.choice(["a", "b"]))}),
    )
    declared = {b for b in (_binding(rng) for _ in range(12)) if scope.contains(b)}
    desired = DesiredState.of([AclsFile("f.yaml", scope, frozenset(declared), dict.fromkeys(declared, 1))])
    state = Attribution()
    state.live = {b: Origin(i, 0, "User:x", 0) for i, b in enumerate({_binding(rng) for _ in range(12)})}
    whole = {(d.kind, d.binding) for d in drifts(desired, state)}
    one = {(d.kind, d.binding) for b in set(state.live) | declared if (d := drift_of(desired, state, b))}
    assert whole == one
    live = set(state.live)
    expected = {("undeclared", b) for b in live if scope.contains(b) and b not in declared}
    expected |= {("missing", b) for b in declared - live}
    expected |= {("outside", b) for b in live if not scope.contains(b)}
    assert whole == expected


def test_a_change_carries_the_reference_its_batch_wrote() -> None:
    from store.codec import event_key
    from store.events import AclCreated, ConfigAltered
    from store.fold import change_of_event
    from store.log.base import LogRecord

    b = _binding(random.Random(1))
    batch = [
        AclCreated(binding=b, actor="User:ci", request_id="r1", time_ms=5),
        ConfigAltered(
            name="acl.change.reference", value="abc123", actor="User:ci", request_id="r1", time_ms=5
        ),
    ]
    state = Attribution()
    state.apply(change_of_event(LogRecord(i, event_key(e), None, 5), e) for i, e in enumerate(batch))
    assert state.reference_of(state.live[b]) == "abc123"
    other = AclCreated(binding=_binding(random.Random(2)), actor="User:x", request_id="r2", time_ms=6)
    state.apply([change_of_event(LogRecord(2, event_key(other), None, 6), other)])
    assert state.reference_of(state.live[other.binding]) is None
