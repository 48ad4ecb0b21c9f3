"""The decision rules, hand-worked from Kafka's StandardAuthorizerData and Authorizer sources.

Most cases run against both views: the indexed ``InMemoryAclIndex`` fast path and the
scanning ``ScanAclView`` (which finds applicable ACLs through KIP-290's MATCH filter).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

import pytest

from store.acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import (
    ALLOWED,
    DENIED,
    Action,
    AuthorizationResult,
    AuthorizerConfig,
    DecisionRule,
    InMemoryAclIndex,
    InvalidActionError,
    InvalidHostAddressError,
    ScanAclView,
    authorize,
    authorize_by_resource_type,
    host_address,
)
from store.authorizer.view import AclView
from store.errors import AuthorizerNotReadyError, InvalidConfigError
from store.principal import KafkaPrincipal

pytestmark = pytest.mark.unit

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType
NO_CONFIG = AuthorizerConfig()
HOST = "10.0.0.1"


def acl(
    name: str,
    op: AclOperation = OP.READ,
    perm: AclPermissionType = PERM.ALLOW,
    *,
    pt: PatternType = PT.LITERAL,
    principal: str = "User:bob",
    host: str = "*",
    rt: ResourceType = RT.TOPIC,
) -> AclBinding:
    return AclBinding.of(rt, name, pt, principal, host, op, perm)


def views(bindings: Iterable[AclBinding]) -> list[AclView]:
    bindings = list(bindings)
    return [InMemoryAclIndex(bindings), ScanAclView(bindings)]


def agreed(bindings: Iterable[AclBinding], ask: Callable[[AclView], AuthorizationResult]) -> str:
    """``ask``'s answer over the indexed and the scanning view, which must agree."""
    answers = {ask(view).value for view in views(bindings)}
    assert len(answers) == 1, answers
    return answers.pop()


def decide(
    bindings: Iterable[AclBinding],
    op: AclOperation,
    name: str,
    *,
    principal: str = "User:bob",
    host: str = HOST,
    rt: ResourceType = RT.TOPIC,
    config: AuthorizerConfig = NO_CONFIG,
) -> str:
    """The result over both views, which must agree."""
    return agreed(
        bindings,
        lambda view: authorize(view, config, principal, host, [Action(op, rt, name)])[0].result,
    )


# --- super users and readiness ---------------------------------------------------------------


def test_super_user_is_allowed_against_deny_and_before_load() -> None:
    config = AuthorizerConfig.of(["User:admin"])
    deny_all = [acl("t", OP.ALL, PERM.DENY, principal="User:*")]
    for view in views(deny_all):
        decision = authorize(
            view, config, "User:admin", HOST, [Action(OP.WRITE, RT.TOPIC, "t")], loading_complete=False
        )[0]
        assert decision.result is ALLOWED and decision.rule is DecisionRule.SUPER_USER


def test_everyone_else_fails_before_load() -> None:
    with pytest.raises(AuthorizerNotReadyError):
        authorize(
            InMemoryAclIndex(),
            NO_CONFIG,
            "User:bob",
            HOST,
            [Action(OP.READ, RT.TOPIC, "t")],
            loading_complete=False,
        )


def test_super_user_is_compared_as_type_and_name_text() -> None:
    config = AuthorizerConfig.of(["User:admin"])
    assert decide([], OP.READ, "t", principal="Group:admin", config=config) == "DENIED"
    kafka_principal = KafkaPrincipal(principal_type="User", name="admin")
    result = authorize(InMemoryAclIndex(), config, kafka_principal, HOST, [Action(OP.READ, RT.TOPIC, "t")])
    assert result[0].rule is DecisionRule.SUPER_USER


def test_non_literal_actions_are_refused_even_for_super_users() -> None:
    config = AuthorizerConfig.of(["User:admin"])
    with pytest.raises(InvalidActionError, match=r"Only literal resources are supported\. Got: PREFIXED"):
        authorize(
            InMemoryAclIndex(), config, "User:admin", HOST, [Action(OP.READ, RT.TOPIC, "t", PT.PREFIXED)]
        )


# --- matching --------------------------------------------------------------------------------


def test_literal_wildcard_and_prefixed_apply_literal_prefix_does_not() -> None:
    bindings = [acl("foo", pt=PT.PREFIXED), acl("ba"), acl("*", OP.WRITE)]
    assert decide(bindings, OP.READ, "foo") == "ALLOWED"  # a prefix of itself
    assert decide(bindings, OP.READ, "foobar") == "ALLOWED"
    assert decide(bindings, OP.READ, "fo") == "DENIED"
    assert decide(bindings, OP.READ, "bar") == "DENIED"  # LITERAL "ba" is no prefix
    assert decide(bindings, OP.WRITE, "anything") == "ALLOWED"  # LITERAL "*"


def test_deny_beats_allow_wherever_it_comes_from() -> None:
    bindings = [acl("foo"), acl("f", PERM.DENY if False else OP.READ, PERM.DENY, pt=PT.PREFIXED)]
    assert decide(bindings, OP.READ, "foo") == "DENIED"
    wildcard_deny = [acl("foo", OP.ALL), acl("*", OP.READ, PERM.DENY, principal="User:*")]
    assert decide(wildcard_deny, OP.READ, "foo") == "DENIED"
    assert decide(wildcard_deny, OP.WRITE, "foo") == "ALLOWED"


@pytest.mark.parametrize(
    ("acl_op", "perm", "asked", "expected"),
    [
        (OP.READ, PERM.ALLOW, OP.DESCRIBE, "ALLOWED"),
        (OP.WRITE, PERM.ALLOW, OP.DESCRIBE, "ALLOWED"),
        (OP.DELETE, PERM.ALLOW, OP.DESCRIBE, "ALLOWED"),
        (OP.ALTER, PERM.ALLOW, OP.DESCRIBE, "ALLOWED"),
        (OP.CREATE, PERM.ALLOW, OP.DESCRIBE, "DENIED"),  # CREATE does not imply DESCRIBE
        (OP.ALTER_CONFIGS, PERM.ALLOW, OP.DESCRIBE_CONFIGS, "ALLOWED"),
        (OP.ALTER_CONFIGS, PERM.ALLOW, OP.DESCRIBE, "DENIED"),
        (OP.DESCRIBE, PERM.ALLOW, OP.READ, "DENIED"),
        (OP.READ, PERM.ALLOW, OP.ALL, "DENIED"),  # only an ALL ACL covers an ALL action
        (OP.ALL, PERM.ALLOW, OP.IDEMPOTENT_WRITE, "ALLOWED"),
        (OP.ALL, PERM.ALLOW, OP.ALL, "ALLOWED"),
    ],
)
def test_operation_coverage(
    acl_op: AclOperation, perm: AclPermissionType, asked: AclOperation, expected: str
) -> None:
    assert decide([acl("t", acl_op, perm)], asked, "t") == expected


def test_a_deny_implies_nothing() -> None:
    """DENY READ plus ALLOW ALL: DESCRIBE stays allowed (the DENY covers READ only)."""
    bindings = [acl("t", OP.READ, PERM.DENY), acl("t", OP.ALL)]
    assert decide(bindings, OP.DESCRIBE, "t") == "ALLOWED"
    assert decide(bindings, OP.READ, "t") == "DENIED"


def test_user_wildcard_matches_every_principal_type_hosts_are_exact_text() -> None:
    bindings = [acl("t", principal="User:*", host="10.0.0.1")]
    assert decide(bindings, OP.READ, "t", principal="Group:ops") == "ALLOWED"
    assert decide(bindings, OP.READ, "t", host="10.0.0.2") == "DENIED"
    assert decide([acl("t", principal="Group:*")], OP.READ, "t", principal="Group:ops") == "DENIED"
    # no name resolution or normalisation: "010.0.0.1" is another text
    assert decide(bindings, OP.READ, "t", host="010.0.0.1") == "DENIED"


def test_allow_everyone_only_when_no_acl_of_any_principal_applies() -> None:
    config = AuthorizerConfig.of((), allow_everyone=True)
    others = [acl("t", principal="User:alice"), acl("p", pt=PT.PREFIXED, principal="User:alice")]
    assert decide(others, OP.READ, "t", config=config) == "DENIED"
    assert decide(others, OP.READ, "pq", config=config) == "DENIED"
    assert decide(others, OP.READ, "u", config=config) == "ALLOWED"
    assert decide(others, OP.READ, "t", rt=RT.GROUP, config=config) == "ALLOWED"


def test_resource_types_are_isolated() -> None:
    assert decide([acl("t", rt=RT.GROUP)], OP.READ, "t", rt=RT.TOPIC) == "DENIED"


def test_decisions_say_why() -> None:
    deny = acl("f", OP.WRITE, PERM.DENY, pt=PT.PREFIXED)
    allow = acl("foo", OP.ALL)
    index = InMemoryAclIndex([deny, allow])
    actions = [
        Action(OP.WRITE, RT.TOPIC, "foo"),
        Action(OP.READ, RT.TOPIC, "foo"),
        Action(OP.READ, RT.TOPIC, "fx"),
        Action(OP.READ, RT.TOPIC, "x"),
    ]
    got = authorize(index, NO_CONFIG, "User:bob", HOST, actions)
    assert (got[0].result, got[0].binding) == (DENIED, deny)
    assert (got[1].result, got[1].binding) == (ALLOWED, allow)
    assert got[2].rule is DecisionRule.RESOURCE_HAS_ACLS and got[2].binding is None
    assert got[3].rule is DecisionRule.DEFAULT_DENY


def test_a_decisions_scratch_mark_is_no_part_of_its_value() -> None:
    """An index answers with one ready-made decision object per binding, the same object
    every time; whoever holds it may keep a number in its ``_mark`` (the audit emitter), which
    is not compared, not hashed, and not carried by a pickle or a copy."""
    import copy
    import pickle

    allow = acl("foo", OP.ALL)
    index = InMemoryAclIndex([allow])
    first, again = (authorize(index, NO_CONFIG, "User:bob", HOST, [Action(OP.READ, RT.TOPIC, "foo")])[0]
                    for _ in range(2))  # fmt: skip
    assert first is again and first._mark == 0
    object.__setattr__(first, "_mark", 7)
    fresh = type(first)(ALLOWED, DecisionRule.MATCHING_ACL, allow)
    assert fresh == first and hash(fresh) == hash(first) and fresh._mark == 0
    for made in (pickle.loads(pickle.dumps(first)), copy.copy(first), copy.deepcopy(first)):
        assert made == first and made._mark == 0


# --- Kafka's prefix-scan defect ---------------------------------------------------------------


def test_names_sorting_below_wildcard_get_the_intended_answer() -> None:
    """Kafka's defect with names that sort below ``*``, which we deliberately do not copy.

    StandardAuthorizerData.checkSection scans the wildcard section from ``("*", LITERAL)``
    onwards.  With GROUP PREFIXED ``!b`` and resource ``!abc`` the scan meets ``!b``, which
    shares one char with the name, and restarts at ``"*".substring(0, 1)``, i.e. at the
    same place: an endless loop.  With PREFIXED ``!abd`` it calls ``"*".substring(0, 3)``
    and throws StringIndexOutOfBoundsException.  The intended rule: ``!b`` and ``!abd`` are
    not prefixes of ``!abc`` and do not apply; ``!a`` does.  (The differential test shows
    Kafka 4.3.1 looping and throwing on exactly these inputs.)
    """
    looping = [
        acl("!a", pt=PT.PREFIXED, rt=RT.GROUP),
        acl("!b", OP.READ, PERM.DENY, pt=PT.PREFIXED, rt=RT.GROUP),
    ]
    assert decide(looping, OP.READ, "!abc", rt=RT.GROUP) == "ALLOWED"
    throwing = [acl("!abd", OP.READ, PERM.DENY, pt=PT.PREFIXED, rt=RT.GROUP)]
    config = AuthorizerConfig.of((), allow_everyone=True)
    assert decide(throwing, OP.READ, "!abc", rt=RT.GROUP, config=config) == "ALLOWED"
    assert decide(throwing, OP.READ, "!abdx", rt=RT.GROUP, config=config) == "DENIED"


def test_wildcard_applies_to_names_that_start_with_a_star() -> None:
    """Kafka's second scan defect, which the differential test found; we keep the intended rule.

    StandardAuthorizerData.checkSection sees LITERAL ``*`` as a literal prefix of a resource
    named ``*x`` (``matchesUpTo`` equals its length but not the name's) and skips it, in the
    name section and again in the wildcard section, so Kafka 4.3.1 ignores the wildcard ACL for
    such names: it answers DENIED below, and ALLOWED under allow.everyone.if.no.acl.found.
    The wildcard is meant to match every name (KIP-290; ResourcePatternFilter MATCH agrees).
    """
    wildcard = [acl("*", OP.WRITE, rt=RT.GROUP)]
    assert decide(wildcard, OP.WRITE, "*x", rt=RT.GROUP) == "ALLOWED"
    config = AuthorizerConfig.of((), allow_everyone=True)
    denied_by_wildcard = [acl("*", OP.WRITE, PERM.DENY, principal="User:*", rt=RT.GROUP)]
    assert decide(denied_by_wildcard, OP.WRITE, "*x", rt=RT.GROUP, config=config) == "DENIED"


# --- authorize_by_resource_type ----------------------------------------------------------------


def by_type(
    bindings: Iterable[AclBinding],
    op: AclOperation = OP.READ,
    *,
    principal: str = "User:bob",
    host: str = HOST,
    rt: ResourceType = RT.TOPIC,
    config: AuthorizerConfig = NO_CONFIG,
) -> str:
    return agreed(
        bindings,
        lambda view: authorize_by_resource_type(view, config, principal, host, op, rt).result,
    )


def test_by_type_argument_checks() -> None:
    index = InMemoryAclIndex()
    for op, rt, message in [
        (OP.READ, RT.ANY, "Must specify a non-filter resource type for authorizeByResourceType"),
        (OP.READ, RT.UNKNOWN, "Unknown resource type"),
        (OP.ANY, RT.TOPIC, "Must specify a non-filter operation type for authorizeByResourceType"),
        (OP.UNKNOWN, RT.TOPIC, "Unknown operation type"),
    ]:
        with pytest.raises(InvalidActionError) as info:
            authorize_by_resource_type(index, NO_CONFIG, "User:bob", HOST, op, rt)
        assert str(info.value) == message


def test_by_type_probe_lets_super_users_and_hardcode_acls_through() -> None:
    config = AuthorizerConfig.of(["User:admin"])
    deny = [acl("*", OP.ALL, PERM.DENY, principal="User:*")]
    assert by_type(deny, principal="User:admin", config=config) == "ALLOWED"
    # a PREFIXED "hard" ALLOW matches the probe name "hardcode", even under a DENY of "h"
    assert by_type([acl("hard", pt=PT.PREFIXED)]) == "ALLOWED"
    with pytest.raises(AuthorizerNotReadyError):
        authorize_by_resource_type(
            InMemoryAclIndex(), NO_CONFIG, "User:bob", HOST, OP.READ, RT.TOPIC, loading_complete=False
        )


def test_by_type_domination() -> None:
    assert by_type([]) == "DENIED"
    assert by_type([acl("abc")]) == "ALLOWED"
    assert by_type([acl("abc"), acl("abc", perm=PERM.DENY)]) == "DENIED"
    assert by_type([acl("abc"), acl("ab", perm=PERM.DENY, pt=PT.PREFIXED)]) == "DENIED"
    assert by_type([acl("abc"), acl("abcd", perm=PERM.DENY, pt=PT.PREFIXED)]) == "ALLOWED"
    # a LITERAL DENY never dominates a PREFIXED ALLOW
    assert by_type([acl("abc", pt=PT.PREFIXED), acl("abc", perm=PERM.DENY)]) == "ALLOWED"
    assert by_type([acl("abc", pt=PT.PREFIXED), acl("abc", perm=PERM.DENY, pt=PT.PREFIXED)]) == "DENIED"
    # wildcard rules; ALL counts, implication does not
    assert by_type([acl("*"), acl("x", perm=PERM.DENY, pt=PT.PREFIXED)]) == "ALLOWED"
    assert by_type([acl("abc"), acl("*", OP.ALL, PERM.DENY, principal="User:*")]) == "DENIED"
    assert by_type([acl("abc", OP.ALL)], OP.WRITE) == "ALLOWED"
    assert by_type([acl("abc", OP.READ)], OP.DESCRIBE) == "DENIED"
    # other hosts, principals and types do not count
    assert by_type([acl("abc", host="10.9.9.9")]) == "DENIED"
    assert by_type([acl("abc", principal="User:alice")]) == "DENIED"
    assert by_type([acl("abc", rt=RT.GROUP)]) == "DENIED"
    assert by_type([acl("abc", principal="User:*")], principal="Group:x") == "ALLOWED"


def test_by_type_allow_everyone_comes_only_through_the_probe() -> None:
    config = AuthorizerConfig.of((), allow_everyone=True)
    assert by_type([], config=config) == "ALLOWED"
    assert by_type([acl("*", principal="User:alice")], config=config) == "DENIED"


# --- index behaviour ---------------------------------------------------------------------------


def test_index_add_remove_and_describe_order() -> None:
    a, b, c = acl("a"), acl("b", pt=PT.PREFIXED), acl("g", rt=RT.GROUP)
    index = InMemoryAclIndex([a, b, c])
    assert not index.add(a) and len(index) == 3 and a in index
    assert index.acls(AclBindingFilter()) == [b, a, c]
    assert index.remove(b) and not index.remove(b) and b not in index
    assert decide([a, c], OP.READ, "bx") == "DENIED"
    assert (
        authorize(index, NO_CONFIG, "User:bob", HOST, [Action(OP.READ, RT.TOPIC, "bx")])[0].result is DENIED
    )
    assert sorted(index.matching_acls(RT.TOPIC, "a")) == [a]


def random_bindings(rng: random.Random, count: int) -> list[AclBinding]:
    names = ["", "a", "ab", "abc", "b", "*", "!a", "!ab", "ba"]
    return [
        acl(
            rng.choice(names) or "x",
            rng.choice([OP.READ, OP.WRITE, OP.ALL, OP.DESCRIBE]),
            rng.choice([PERM.ALLOW, PERM.DENY]),
            pt=rng.choice([PT.LITERAL, PT.PREFIXED]),
            principal=rng.choice(["User:bob", "User:*", "User:al"]),
            host=rng.choice(["*", HOST]),
            rt=rng.choice([RT.TOPIC, RT.GROUP]),
        )
        for _ in range(count)
    ]


def test_indexed_and_scanning_views_agree_through_adds_and_removes() -> None:
    rng = random.Random(7)
    index = InMemoryAclIndex()
    live: set[AclBinding] = set()
    for _ in range(300):
        for binding in random_bindings(rng, 3):
            index.add(binding)
            live.add(binding)
        for binding in rng.sample(sorted(live), k=min(2, len(live))):
            index.remove(binding)
            live.discard(binding)
        scan = ScanAclView(live)
        assert sorted(index.bindings()) == sorted(live)
        name, op = rng.choice(["abc", "ab", "!abc", "*", "x", "bar"]), rng.choice(list(OP)[2:])
        rt, principal = rng.choice([RT.TOPIC, RT.GROUP]), rng.choice(["User:bob", "User:al"])
        ours = authorize(index, NO_CONFIG, principal, HOST, [Action(op, rt, name)])[0]
        reference = authorize(scan, NO_CONFIG, principal, HOST, [Action(op, rt, name)])[0]
        assert ours.result is reference.result and ours.rule is reference.rule
        assert (
            authorize_by_resource_type(index, NO_CONFIG, principal, HOST, op, rt).result
            is authorize_by_resource_type(scan, NO_CONFIG, principal, HOST, op, rt).result
        )


def test_the_by_principal_index_built_late_lists_what_one_built_early_does() -> None:
    """Built on the first by-type query, then kept: the same as a scan, whenever it was built."""
    rng = random.Random(11)
    unknown = acl("u", OP.READ, PERM.ALLOW, pt=PT.UNKNOWN, principal="User:bob")
    early, late = InMemoryAclIndex(), InMemoryAclIndex()
    early.prepare_by_resource_type()
    live: set[AclBinding] = set()
    for step in range(200):
        for binding in [*random_bindings(rng, 4), *([unknown] if step % 50 == 0 else [])]:
            early.add(binding)
            late.add(binding)
            live.add(binding)
        for binding in rng.sample(sorted(live), k=min(3, len(live))):
            early.remove(binding)
            late.remove(binding)
            live.discard(binding)
        if step == 120:
            late.prepare_by_resource_type()
    scan = ScanAclView(live)
    for rt in (RT.TOPIC, RT.GROUP):
        for principal in ("User:bob", "User:*", "User:al", "User:nobody"):
            expected = sorted(scan.acls_for_principal(rt, principal))
            assert sorted(early.acls_for_principal(rt, principal)) == expected
            assert sorted(late.acls_for_principal(rt, principal)) == expected
            for op in (OP.READ, OP.WRITE, OP.DESCRIBE):
                want = authorize_by_resource_type(scan, NO_CONFIG, principal, HOST, op, rt).result
                assert authorize_by_resource_type(late, NO_CONFIG, principal, HOST, op, rt).result is want


@pytest.mark.parametrize(
    ("given", "java"),
    [  # InetAddress.getByName(given).getHostAddress() on Java 17
        ("127.0.0.1", "127.0.0.1"),
        ("010.0.0.1", "10.0.0.1"),
        ("::1", "0:0:0:0:0:0:0:1"),
        ("2001:DB8::0:1", "2001:db8:0:0:0:0:0:1"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("fe80::1%1", "fe80:0:0:0:0:0:0:1%1"),
        ("2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:db8:0:0:0:ff00:42:8329"),
        ("::10.0.0.1", "0:0:0:0:0:0:a00:1"),
    ],
)
def test_host_address_is_javas_text(given: str, java: str) -> None:
    assert host_address(given) == java


@pytest.mark.parametrize("text", ["broker-1.example.com", "256.0.0.1", "1.2.3", "::g", "10.0.0.1%1"])
def test_host_address_refuses_names_and_bad_literals(text: str) -> None:
    with pytest.raises(InvalidHostAddressError, match="not an IP address"):
        host_address(text)


def test_config_from_properties() -> None:
    config = AuthorizerConfig.from_properties(
        {"super.users": " User:a ; User:b", "allow.everyone.if.no.acl.found": " TRUE "}
    )
    assert config.super_users == {"User:a", "User:b"} and config.allow_everyone_if_no_acl_found
    assert not AuthorizerConfig.from_properties(
        {"allow.everyone.if.no.acl.found": "yes"}
    ).allow_everyone_if_no_acl_found
    with pytest.raises(InvalidConfigError, match=r"node\.id"):
        AuthorizerConfig.from_properties({"node.id": "1"})
    assert AuthorizerConfig.from_properties({"node.id": "1"}, ignore_unknown=True) == AuthorizerConfig()
