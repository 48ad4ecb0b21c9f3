"""The access diff against the decision rules themselves: witnesses flip, and randomized
probing of both states finds no changed decision the diff leaves out, nor a row that claims
a request whose decision did not change."""

from __future__ import annotations

import random

import pytest

from store.access_diff import (
    ANY,
    AccessDelta,
    AccessDiff,
    AclState,
    Change,
    PatternIndex,
    access_diff,
    change_diff,
    checked_operations,
    compact,
    older_reader_state,
)
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, InMemoryAclIndex, authorize

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP


def acl(
    name: str,
    principal: str = "User:bob",
    op: AclOperation = AclOperation.READ,
    permission: AclPermissionType = ALLOW,
    pattern: PatternType = LITERAL,
    host: str = "*",
    rt: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding.of(rt, name, pattern, principal, host, op, permission)


def allowed(state: AclState, principal: str, host: str, op: AclOperation,
            rt: ResourceType, name: str) -> bool:  # fmt: skip
    view = InMemoryAclIndex(state.bindings)
    return authorize(view, state.config(), principal, host, [Action(op, rt, name)])[0].allowed


def covers(row: AccessDelta, principal: str, host: str, op: AclOperation,
           rt: ResourceType, name: str) -> bool:  # fmt: skip
    if (row.resource_type, row.operation) != (rt, op) or name not in row.names:
        return False
    if row.principal == ANY:
        typed = row.principal_type is None or principal.startswith(row.principal_type + ":")
        who = typed and principal not in row.principal_except
    else:
        who = principal == row.principal
    where = host not in row.host_except if row.host == ANY else host == row.host
    return who and where


# --- hand-worked ------------------------------------------------------------------------------


def test_kip_290_prefixed_deny_disappears_for_an_older_reader() -> None:
    """Everyone may read every topic; bob is denied the ``secret-`` topics by a PREFIXED DENY,
    which a format-1 reader (literal ACLs only) ignores: bob's READ on them widens, and only
    that (DENY READ never denied DESCRIBE, which the wildcard ALLOW READ implies)."""
    state = AclState.of([
        acl("*", principal="User:*"),
        acl("secret-", permission=DENY, pattern=PREFIXED),
    ])  # fmt: skip
    old, stopping = older_reader_state(state, 1)
    assert stopping == 1 and old.bindings == {acl("*", principal="User:*")}
    diff = access_diff(state, old)
    assert diff.narrowed == ()
    assert [(r.change, r.principal, r.host, r.operation, r.resource_type, str(r.names))
            for r in diff.widened] == [
        (Change.WIDENED, "User:bob", ANY, AclOperation.READ, TOPIC, "secret-*")
    ]  # fmt: skip
    witness = diff.widened[0].witness
    assert witness.resource_name.startswith("secret-") and witness.principal == "User:bob"
    assert not diff.safe
    assert access_diff(state, older_reader_state(state, 2)[0]).safe


def test_a_literal_carves_its_name_out_of_the_prefix_region() -> None:
    before = AclState.of([acl("orders-", pattern=PREFIXED), acl("orders-eu", permission=DENY)])
    after = AclState.of([acl("orders-eu", permission=DENY)])
    diff = access_diff(before, after)
    assert diff.widened == ()
    reads = [r for r in diff.narrowed if r.operation is AclOperation.READ]
    assert len(reads) == 1
    assert str(reads[0].names) == "orders-* except orders-eu"
    assert reads[0].principal == "User:bob" and reads[0].host == ANY
    # DESCRIBE, implied by READ, narrows too, on orders-eu as well: its DENY READ never
    # denied DESCRIBE, which the PREFIXED ALLOW READ implied there
    describes = {str(r.names) for r in diff.narrowed if r.operation is AclOperation.DESCRIBE}
    assert describes == {"orders-* except orders-eu", "orders-eu"}


def test_allow_everyone_with_no_acls_widens_every_request_for_every_principal() -> None:
    diff = access_diff(AclState.of([]), AclState.of([], allow_everyone_if_no_acl_found=True))
    assert diff.narrowed == ()
    topic_reads = [
        r for r in diff.widened if (r.resource_type, r.operation) == (TOPIC, AclOperation.READ)
    ]
    assert [(r.principal, r.host, str(r.names)) for r in topic_reads] == [(ANY, ANY, "any name")]
    kinds = {r.resource_type for r in diff.widened}
    assert {TOPIC, GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID} <= kinds


def test_a_new_super_user_widens_only_for_that_principal() -> None:
    state = AclState.of([acl("orders")])
    diff = access_diff(state, AclState.of(state.bindings, super_users=["User:ops"]))
    assert diff.narrowed == ()
    assert {r.principal for r in diff.widened} == {"User:ops"}
    topics = {str(r.names) for r in diff.widened if r.resource_type is TOPIC}
    assert topics == {"orders", "any name except orders"}


def test_checked_operations_come_from_the_api_key_table() -> None:
    assert set(checked_operations(TOPIC)) >= {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE,
        AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    }  # fmt: skip
    assert AclOperation.WRITE not in checked_operations(GROUP)


# --- randomized ---------------------------------------------------------------------------------

NAMES = ["a", "ab", "abc", "b", "*"]
PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:ops"]
HOSTS = ["*", "10.0.0.1"]
OPS = [AclOperation.READ, AclOperation.WRITE, AclOperation.ALL, AclOperation.DESCRIBE,
       AclOperation.ALTER_CONFIGS]  # fmt: skip


def random_state(rng: random.Random) -> AclState:
    bindings = []
    for _ in range(rng.randint(0, 6)):
        pattern = rng.choice([LITERAL, PREFIXED])
        name = rng.choice([n for n in NAMES if not (pattern is PREFIXED and n == "*")])
        bindings.append(acl(
            name, rng.choice(PRINCIPALS), rng.choice(OPS), rng.choice([ALLOW, ALLOW, DENY]),
            pattern, rng.choice(HOSTS), rng.choice([TOPIC, TOPIC, GROUP]),
        ))  # fmt: skip
    supers = rng.sample(["User:alice", "User:root"], rng.randint(0, 1))
    return AclState.of(bindings, supers, rng.random() < 0.3)


def mutate(state: AclState, rng: random.Random) -> AclState:
    other = random_state(rng)
    kept = [b for b in state.bindings if rng.random() < 0.7]
    bindings = kept + rng.sample(sorted(other.bindings), min(2, len(other.bindings)))
    supers = state.super_users if rng.random() < 0.8 else other.super_users
    allow = state.allow_everyone_if_no_acl_found
    return AclState.of(bindings, supers, allow if rng.random() < 0.8 else not allow)


def probes(rng: random.Random) -> list[tuple[str, str, AclOperation, ResourceType, str]]:
    names = ["a", "ab", "abc", "abd", "abcz", "az", "b", "bz", "c", "*", "x*", ""]
    principals = [*PRINCIPALS, "User:root", "User:carol", "Group:dev"]
    hosts = ["10.0.0.1", "10.0.0.9"]
    return [
        (rng.choice(principals), rng.choice(hosts), rng.choice(checked_operations(rt)), rt,
         rng.choice(names))
        for rt in [rng.choice([TOPIC, GROUP]) for _ in range(60)]
    ]  # fmt: skip


def check(before: AclState, after: AclState, diff: AccessDiff, rng: random.Random) -> None:
    for row in (*diff.widened, *diff.narrowed):
        w = row.witness
        request = (w.principal, w.host, w.operation, w.resource_type, w.resource_name)
        assert covers(row, *request), row
        was, now = allowed(before, *request), allowed(after, *request)
        assert (was, now) == ((False, True) if row.change is Change.WIDENED else (True, False))
    for request in probes(rng):
        was, now = allowed(before, *request), allowed(after, *request)
        claimed = [r for r in (*diff.widened, *diff.narrowed) if covers(r, *request)]
        if was == now:
            assert claimed == [], (request, claimed)
        else:
            change = Change.WIDENED if now else Change.NARROWED
            assert claimed and all(r.change is change for r in claimed), (request, claimed)


@pytest.mark.parametrize(
    "seed", [*range(3), *(pytest.param(s, marks=pytest.mark.slow) for s in range(3, 16))]
)
def test_randomized_states_against_the_rules(seed: int) -> None:
    """100 state pairs per seed: 300 in the unit tier, 3,000 with the slow tier."""
    rng = random.Random(seed)
    for _ in range(100):
        before = random_state(rng)
        after = mutate(before, rng)
        check(before, after, access_diff(before, after), rng)


def small_change(state: AclState, rng: random.Random) -> AclState:
    """The same settings and one or two bindings added or removed: a dry run's change."""
    bindings = set(state.bindings)
    for _ in range(rng.randint(1, 2)):
        if bindings and rng.random() < 0.4:
            bindings.discard(rng.choice(sorted(bindings)))
        else:
            bindings |= random_state(rng).bindings
    return AclState(frozenset(bindings), state.super_users, state.allow_everyone_if_no_acl_found)


@pytest.mark.parametrize(
    "seed", [*range(2), *(pytest.param(s, marks=pytest.mark.slow) for s in range(2, 6))]
)
def test_change_diff_visits_only_touched_regions_and_misses_nothing(seed: int) -> None:
    """The focused walk of a dry run against the rules, on the same probes as the full diff:
    100 small changes per seed, 200 in the unit tier, 1,000 with the slow tier."""
    rng = random.Random(1000 + seed)
    for _ in range(100):
        before = random_state(rng)
        after = small_change(before, rng)
        diff = change_diff(before, after)
        check(before, after, diff, rng)
        assert set(diff.widened) == set(access_diff(before, after).widened)
        indexed = PatternIndex(before).change_diff(
            added=after.bindings - before.bindings, removed=before.bindings - after.bindings
        )
        check(before, after, indexed, rng)
        assert (set(indexed.widened), set(indexed.narrowed)) == (
            set(diff.widened), set(diff.narrowed)
        )


def test_change_diff_of_a_prefixed_deny_under_a_wildcard_allow() -> None:
    """Hand-worked: adding DENY READ on ``pay-`` under ``User:*`` ALLOW READ on ``*`` narrows
    READ for bob on the ``pay-`` topics, except ``pay-eu``, which bob's own literal DENY already
    closed; DESCRIBE stays (a DENY implies nothing)."""
    state = AclState.of([acl("*", principal="User:*"), acl("pay-eu", permission=DENY)])
    after = AclState(state.bindings | {acl("pay-", permission=DENY, pattern=PREFIXED)})
    diff = change_diff(state, after)
    assert diff.widened == ()
    assert [(r.principal, r.host, r.operation, str(r.names)) for r in diff.narrowed] == [
        ("User:bob", ANY, AclOperation.READ, "pay-* except pay-eu")
    ]
    assert diff.narrowed[0].witness.resource_name == "pay-"


def versioned_state(rng: random.Random) -> AclState:
    """A random state with bindings of every format: PREFIXED (2), USER and CREATE_TOKENS (3)."""
    state = random_state(rng)
    extra = []
    for _ in range(rng.randint(0, 3)):
        name = rng.choice(["a", "ab", "*"])
        if rng.random() < 0.5:
            extra.append(acl(name, rng.choice(PRINCIPALS), AclOperation.CREATE_TOKENS,
                             rng.choice([ALLOW, DENY]), LITERAL, "*", ResourceType.USER))  # fmt: skip
        else:
            extra.append(acl(name, rng.choice(PRINCIPALS), rng.choice(OPS),
                             rng.choice([ALLOW, DENY]), PREFIXED if name != "*" else LITERAL,
                             rng.choice(HOSTS)))  # fmt: skip
    return AclState(state.bindings | frozenset(extra), state.super_users,
                    state.allow_everyone_if_no_acl_found)  # fmt: skip


@pytest.mark.parametrize(
    "seed", [*range(2), *(pytest.param(s, marks=pytest.mark.slow) for s in range(2, 6))]
)
def test_randomized_downgrades_against_the_rules(seed: int) -> None:
    """An older reader's state, decided by the rules, against the diff's claims: every
    widening it reports is real and every changed probe is claimed (60 states per seed)."""
    rng = random.Random(2000 + seed)
    for _ in range(60):
        state = versioned_state(rng)
        version = rng.choice([1, 2])
        older, stopping = older_reader_state(state, version)
        needs_3 = [b for b in state.bindings if b.resource_type is ResourceType.USER
                   or b.operation is AclOperation.CREATE_TOKENS]  # fmt: skip
        needs_2 = [b for b in state.bindings if b.pattern_type is PREFIXED and b not in needs_3]
        assert stopping == len(needs_3) + (len(needs_2) if version == 1 else 0)
        # a reader below format 3 reads no settings from the log
        assert older.super_users == frozenset() and not older.allow_everyone_if_no_acl_found
        check(state, older, access_diff(state, older), rng)


# --- compaction -------------------------------------------------------------------------------


def test_compact_folds_carved_out_regions_that_say_the_same() -> None:
    """A format-1 reader drops bob's prefixed ALLOW: his READ narrows under ``orders-`` and on
    each literal and longer prefix there alike, so the four rows fold into one; carol's
    (another principal) stays a row of its own."""
    state = AclState.of([
        acl("orders-", pattern=PREFIXED),
        acl("orders-eu", principal="User:alice"),
        acl("orders-us", principal="User:alice"),
        acl("orders-us-", principal="User:carol", pattern=PREFIXED),
    ])  # fmt: skip
    older, _ = older_reader_state(state, 1)
    diff = access_diff(state, older)
    bob_reads = [r for r in diff.narrowed
                 if (r.principal, r.operation) == ("User:bob", AclOperation.READ)]  # fmt: skip
    assert {str(r.names) for r in bob_reads} == {
        "orders-* except orders-eu, orders-us, orders-us-*", "orders-eu", "orders-us", "orders-us-*",
    }  # fmt: skip
    folded = compact(diff)
    [bob] = [r for r in folded.narrowed
             if (r.principal, r.operation) == ("User:bob", AclOperation.READ)]  # fmt: skip
    parent = next(r for r in bob_reads if r.names.pattern_type is PREFIXED and r.names.name == "orders-")
    assert str(bob.names) == "orders-*" and bob.witness == parent.witness
    carol = [r for r in folded.narrowed if r.principal == "User:carol"]
    assert {(str(r.names), r.operation) for r in carol} == {
        ("orders-us-*", AclOperation.READ), ("orders-us-*", AclOperation.DESCRIBE)
    }  # fmt: skip


def test_compact_keeps_a_literal_under_a_carve_out_that_says_something_else() -> None:
    """bob keeps READ under ``a-`` (his ALLOW there stays) but loses it on ``a-b`` (a new
    DENY) and on the rest of ``a*`` (his ALLOW there goes): ``a-b`` lies under the carve-out
    ``a-``, which has no such row, so it cannot fold into the ``a*`` row."""
    before = AclState.of([acl("a", pattern=PREFIXED), acl("a-", pattern=PREFIXED)])
    after = AclState.of([acl("a-", pattern=PREFIXED), acl("a-b", permission=DENY)])
    diff = compact(access_diff(before, after))
    reads = [r for r in diff.narrowed if r.operation is AclOperation.READ]
    assert {str(r.names) for r in reads} == {"a* except a-b, a-*", "a-b"}
    check(before, after, diff, random.Random(5))


@pytest.mark.parametrize(
    "seed", [*range(3), *(pytest.param(s, marks=pytest.mark.slow) for s in range(3, 12))]
)
def test_compact_against_the_rules_and_in_any_split(seed: int) -> None:
    """Compacted rows still claim exactly the changed probes, each witness flips; and
    compacting parts first (the Spark path's partitions), then their union, gives the same."""
    rng = random.Random(3000 + seed)
    for _ in range(60):
        if rng.random() < 0.5:
            before = versioned_state(rng)
            after = older_reader_state(before, rng.choice([1, 2]))[0]
        else:
            before = random_state(rng)
            after = mutate(before, rng)
        diff = access_diff(before, after)
        folded = compact(diff)
        check(before, after, folded, rng)
        rows = [*diff.widened, *diff.narrowed]
        rng.shuffle(rows)
        cut = rng.randint(0, len(rows))
        parts = [compact(_split(rows[:cut])), compact(_split(rows[cut:]))]
        again = compact(AccessDiff(widened=tuple(r for p in parts for r in p.widened),
                                   narrowed=tuple(r for p in parts for r in p.narrowed)))  # fmt: skip
        assert (set(again.widened), set(again.narrowed)) == (set(folded.widened), set(folded.narrowed))
        assert len(folded.widened) + len(folded.narrowed) <= len(rows)


def _split(rows: list[AccessDelta]) -> AccessDiff:
    return AccessDiff(widened=tuple(r for r in rows if r.change is Change.WIDENED),
                      narrowed=tuple(r for r in rows if r.change is Change.NARROWED))  # fmt: skip
