"""ACLs as code, the pure part: desired-state files read and checked (errors with file, line
and fix), kafka-acls.sh's roles, scopes, export round trips, and reconciliation.

Expectations are hand-worked (the role table from Kafka's AclCommand documentation), or the
schema document checked by the tests' own JSON Schema checker, or set algebra over random
states, never the code's own output fed back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schema_support import violations

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.desired import (
    AclsFileError,
    DesiredState,
    ResourcePrefix,
    Scope,
    apply_reconciliation,
    export_document,
    export_text,
    load_acls_text,
    reconcile,
)

pytestmark = pytest.mark.unit

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "acls-file.v1.schema.json").read_text()
)
T, G, X, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER
Op = AclOperation
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def b(rt: ResourceType, name: str, pt: PatternType, principal: str, op: AclOperation,
      perm: AclPermissionType = ALLOW, host: str = "*") -> AclBinding:  # fmt: skip
    return AclBinding.of(rt, name, pt, principal, host, op, perm)


ORDERS = """\
version: 1
scope:
  principals: [User:orders-app]
  resources:
    - {resourceType: TOPIC, prefix: orders.}
acls:
  - principals: [User:orders-app]
    hosts: ["10.0.0.1", "10.0.0.2"]
    roles: [producer, idempotent]
    resources:
      - {resourceType: TOPIC, name: orders., patternType: PREFIXED}
      - {resourceType: TRANSACTIONAL_ID, name: tx-orders}
  - principals: [User:orders-app]
    roles: [consumer]
    resources:
      - {resourceType: Topic, name: orders.in}
      - {resourceType: Group, name: orders-app}
  - principals: [User:bob]
    permission: DENY
    operations: [Read, DescribeConfigs]
    resources:
      - {resourceType: TOPIC, name: orders.secret}
"""


def test_roles_expand_as_kafka_acls_does() -> None:
    f = load_acls_text(ORDERS, "orders.yaml")
    app = "User:orders-app"
    hosts = ("10.0.0.1", "10.0.0.2")
    # kafka-acls.sh --producer: WRITE, DESCRIBE, CREATE on topics; WRITE, DESCRIBE on
    # transactional ids; --idempotent: IDEMPOTENT_WRITE on the cluster.  --consumer: READ,
    # DESCRIBE on topics, READ on groups.  Roles grant ALLOW only.
    produce = (Op.WRITE, Op.DESCRIBE, Op.CREATE)
    expected = {b(T, "orders.", PRE, app, op, host=h) for op in produce for h in hosts}
    expected |= {b(X, "tx-orders", LIT, app, op, host=h) for op in (Op.WRITE, Op.DESCRIBE) for h in hosts}
    expected |= {b(C, "kafka-cluster", LIT, app, Op.IDEMPOTENT_WRITE, host=h) for h in hosts}
    expected |= {b(T, "orders.in", LIT, app, op) for op in (Op.READ, Op.DESCRIBE)}
    expected |= {b(G, "orders-app", LIT, app, Op.READ)}
    expected |= {b(T, "orders.secret", LIT, "User:bob", op, DENY) for op in (Op.READ, Op.DESCRIBE_CONFIGS)}
    assert f.bindings == expected
    assert f.lines[b(T, "orders.secret", LIT, "User:bob", Op.READ, DENY)] == 22


@pytest.mark.parametrize(
    ("old", "new", "line", "says"),
    [
        ("Read,", "Reed,", 20, "'Reed' is not one of ALL, READ"),
        ("principals: [User:bob]", "principals: [bob]", 18, "write it as Type:name"),
        ("name: orders.secret", "name: payments", 22, "outside this file's scope"),
        ("version: 1", "version: 2", 1, "use version: 1"),
        ("roles: [consumer]", "roles: [consumer, admin]", 14, "'admin' is not a role"),
        ("roles: [consumer]", "roles: [producer]", 14, "grant nothing on GROUP"),
        ("roles: [producer, idempotent]", "roles: [idempotent]", 9, "idempotent goes with producer"),
        ("operations: [Read, DescribeConfigs]", "roles: [consumer]", 19, "roles only grant"),
        ("    permission: DENY\n", "    permission: DENY\n    colour: red\n", 20, "unknown key 'colour'"),
        ("- {resourceType: Group, name: orders-app}", "- {resourceType: Group}", 17, "name is missing"),
        ("hosts: [", "hosts: [[", 9, "not valid YAML"),
        ("  principals: [User:orders-app]\n  resources",
         "  principals: [User:orders-app]\n  principals: [User:x]\n  resources", 4, "given twice"),
        ("- {resourceType: TOPIC, name: orders.secret}",
         "- {resourceType: CLUSTER, name: orders.secret}", 22, "The only valid name for the CLUSTER"),
    ],
)  # fmt: skip
def test_errors_name_the_file_the_line_and_the_fix(old: str, new: str, line: int, says: str) -> None:
    text = ORDERS.replace(old, new, 1)
    assert text != ORDERS
    with pytest.raises(AclsFileError) as caught:
        load_acls_text(text, "teams/orders.yaml")
    assert (caught.value.source, caught.value.line) == ("teams/orders.yaml", line), caught.value.message
    assert says in caught.value.message
    assert caught.value.message.startswith(f"teams/orders.yaml:{line}: ")


def test_a_scope_that_owns_nothing_is_refused() -> None:
    with pytest.raises(AclsFileError, match=r"x.yaml:2: scope owns nothing"):
        load_acls_text("version: 1\nscope: {}\nacls: []\n", "x.yaml")


def test_scope_membership() -> None:
    s = Scope(principals=frozenset({"User:a"}), resource_prefixes=frozenset({ResourcePrefix(T, "ord")}))
    assert s.contains(b(G, "g", LIT, "User:a", Op.READ))
    assert s.contains(b(T, "orders", LIT, "User:z", Op.READ))
    assert s.contains(b(T, "ord", PRE, "User:z", Op.READ))
    assert not s.contains(b(T, "or", PRE, "User:z", Op.READ))  # wider than the scope's prefix
    assert not s.contains(b(T, "*", LIT, "User:z", Op.READ))
    assert not s.contains(b(G, "orders", LIT, "User:z", Op.READ))
    assert Scope(everything=True).contains(b(T, "*", LIT, "User:z", Op.READ))


def test_the_schema_accepts_the_example_and_every_export_and_refuses_what_the_loader_refuses() -> None:
    import yaml

    assert violations(yaml.safe_load(ORDERS), SCHEMA) == []
    f = load_acls_text(ORDERS, "orders.yaml")
    assert violations(export_document(f.bindings, f.scope), SCHEMA) == []
    for bad in (
        ORDERS.replace("version: 1", "version: 2"),
        ORDERS.replace("    permission: DENY\n", "    colour: red\n"),
        ORDERS.replace("roles: [consumer]", "roles: [admin]"),
        ORDERS.replace("operations: [Read, DescribeConfigs]", "operations: [Read]\n    roles: [consumer]"),
        ORDERS.replace("acls:", "acl:"),
    ):
        assert violations(yaml.safe_load(bad), SCHEMA) != [], bad
        with pytest.raises(AclsFileError):
            load_acls_text(bad, "bad.yaml")


# --- random states --------------------------------------------------------------------------------

_OPS = {T: (Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALL), G: (Op.READ, Op.DELETE), X: (Op.WRITE, Op.DESCRIBE)}
_bindings = st.builds(
    lambda rt, name, pt, who, host, i, perm: b(rt, name, pt, who, _OPS[rt][i % len(_OPS[rt])], perm, host),
    st.sampled_from(sorted(_OPS)), st.sampled_from(["a", "ab", "abc", "b", "*", "ba", "x y", "é"]),
    st.sampled_from([LIT, PRE]), st.sampled_from(["User:alice", "User:bob", "User:*", "Group:ops"]),
    st.sampled_from(["*", "10.0.0.1"]), st.integers(0, 3), st.sampled_from([ALLOW, DENY]),
)  # fmt: skip
_scopes = st.builds(
    lambda every, ps, prefixes: Scope(everything=every, principals=frozenset(ps),
                                      resource_prefixes=frozenset(prefixes)),
    st.booleans().map(lambda v: v and False), st.frozensets(st.sampled_from(["User:alice", "Group:ops"])),
    st.frozensets(st.builds(ResourcePrefix, st.sampled_from([T, G]), st.sampled_from(["a", "b", ""]))),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.frozensets(_bindings, max_size=40))
def test_export_then_load_gives_back_exactly_the_bindings(bindings: frozenset[AclBinding]) -> None:
    scope = Scope(everything=True)
    f = load_acls_text(export_text(bindings, scope, header="exported"), "exported.yaml")
    assert f.bindings == bindings and f.scope == scope


@settings(max_examples=300, deadline=None)
@given(st.frozensets(_bindings, max_size=30), st.frozensets(_bindings, max_size=30), _scopes)
def test_reconciling_gives_exactly_the_declared_state_in_scope_and_leaves_the_rest(
    declared: frozenset[AclBinding], live: frozenset[AclBinding], scope: Scope
) -> None:
    wanted = {x for x in declared if scope.contains(x)}
    r = reconcile(wanted, scope, live)
    after = apply_reconciliation(live, r)
    assert {x for x in after if scope.contains(x)} == wanted
    assert {x for x in after if not scope.contains(x)} == {x for x in live if not scope.contains(x)}
    assert set(r.outside) == {x for x in live if not scope.contains(x)}
    assert not (set(r.to_add) & live) and set(r.to_remove) <= live
    assert reconcile(wanted, scope, after).changes is False  # a second apply is a no-op


def test_several_files_are_the_union_of_their_scopes_and_bindings() -> None:
    a = load_acls_text(ORDERS, "orders.yaml")
    p = load_acls_text(
        "version: 1\nscope: {principals: [User:pay]}\nacls:\n  - principals: [User:pay]\n"
        "    operations: [READ]\n    resources: [{resourceType: TOPIC, name: pay}]\n", "pay.yaml",
    )  # fmt: skip
    d = DesiredState.of([a, p])
    assert d.bindings == a.bindings | p.bindings
    assert d.scope.contains(b(T, "anything", LIT, "User:pay", Op.WRITE))
    assert d.declared_at(b(T, "pay", LIT, "User:pay", Op.READ)) == "pay.yaml:6"


def test_kafka_acls_like_resource_keys_are_the_resources_they_name() -> None:
    short = load_acls_text(
        "version: 1\nscope: {all: true}\nacls:\n"
        "  - principals: [User:a]\n    operations: [WRITE]\n"
        "    topics: [t1, t2]\n    topicPrefixes: [p.]\n    transactionalIdPrefixes: [tx-]\n"
        "  - principals: [User:a]\n    operations: [READ]\n    groups: [g]\n    groupPrefixes: [gp]\n"
        "  - principals: [User:a]\n    operations: [ALTER]\n    cluster: true\n",
        "short.yaml",
    )
    x = ResourceType.TRANSACTIONAL_ID
    assert short.bindings == {
        b(T, "t1", LIT, "User:a", Op.WRITE), b(T, "t2", LIT, "User:a", Op.WRITE),
        b(T, "p.", PRE, "User:a", Op.WRITE), b(x, "tx-", PRE, "User:a", Op.WRITE),
        b(G, "g", LIT, "User:a", Op.READ), b(G, "gp", PRE, "User:a", Op.READ),
        b(C, "kafka-cluster", LIT, "User:a", Op.ALTER),
    }  # fmt: skip
    assert short.lines[b(T, "t2", LIT, "User:a", Op.WRITE)] == 6
    with pytest.raises(AclsFileError, match=r"n.yaml:4: acls\[0\]: no resource; give at least one of"):
        load_acls_text("version: 1\nscope: {all: true}\nacls:\n  - principals: [User:a]\n"
                       "    operations: [READ]\n", "n.yaml")  # fmt: skip


@pytest.mark.parametrize(
    "scalar",
    ["x", "tea", "team1.app", "User:bob", "'1'", '"true"', "1", "-1", "0x1f", "1_000", ".5", "1e3",
     "true", "Yes", "off", "null", "~", "", "2020-01-01", "<<", "=", ".inf", "y", "n", "NO"],
)  # fmt: skip
def test_the_fast_resolver_reads_every_scalar_as_pyyaml_does(scalar: str) -> None:
    import yaml

    from store.desired.yaml_text import _Loader

    text = f"k: {scalar}\n"
    theirs = yaml.compose(text, Loader=yaml.SafeLoader).value[0][1].tag
    ours = yaml.compose(text, Loader=_Loader).value[0][1].tag
    assert ours == theirs


def test_the_scope_is_read_ahead_of_the_acls_when_it_comes_first() -> None:
    from store.desired.document import scope_ahead

    assert scope_ahead(ORDERS, "orders.yaml") == load_acls_text(ORDERS, "orders.yaml").scope
    acls_first = "version: 1\nacls: []\nscope: {all: true}\n"
    assert scope_ahead(acls_first, "x.yaml") is None and load_acls_text(acls_first, "x.yaml").scope.everything
    assert scope_ahead("version: 1\nacls: []\n", "x.yaml") is None
    assert scope_ahead("version: 1\nscope: {principals: [bob]}\nacls: []\n", "x.yaml") is None
    assert scope_ahead("version: 1\nscope: |\n  text\nacls: []\n", "x.yaml") is None
