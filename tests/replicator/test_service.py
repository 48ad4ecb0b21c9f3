"""The sidecar API end to end on the embedded default, over HTTP as a broker or an admin calls it.

Expected decisions come from the pure rules over the same bindings (``reference_results``) or
are worked out by hand in the test; expected offsets are the ones the write calls returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sidecar_support import (
    Raw,
    action_json,
    admin_client,
    binding,
    create_acls,
    reference_results,
    start_node,
    wire,
)

from replicator.client import StoreClient
from replicator.server.node import Node
from store.acl import AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.unit

T, G, C, X = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)
READ, WRITE, DESCRIBE, CREATE = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.DESCRIBE,
    AclOperation.CREATE,
)
DENY = AclPermissionType.DENY
PREFIXED = PatternType.PREFIXED

BINDINGS = [
    binding(T, "orders", "User:bob", READ),
    binding(T, "ord", "User:bob", WRITE, pattern=PREFIXED, permission=DENY),
    binding(T, "*", "User:*", DESCRIBE),
    binding(T, "orders", "User:bob", WRITE, host="10.0.0.1"),
    binding(G, "billing", "User:bob", READ),
]


@pytest.fixture
def admin(node: Node) -> Iterator[StoreClient]:
    with admin_client(node) as client:
        yield client


@pytest.fixture
def raw(node: Node) -> Iterator[Raw]:
    r = Raw(node)
    yield r
    r.close()


def test_authorize_answers_in_action_order_at_the_offset_of_the_write(
    admin: StoreClient, raw: Raw
) -> None:
    offset = create_acls(admin, BINDINGS)
    assert offset == len(BINDINGS) - 1  # a fresh log: offsets 0..4
    actions = [
        (READ, T, "orders"), (WRITE, T, "orders"), (WRITE, T, "orders-eu"), (DESCRIBE, T, "any"),
        (DESCRIBE, T, "orders"), (READ, G, "billing"), (READ, G, "other"), (CREATE, T, "orders"),
    ]  # fmt: skip
    for host in ("10.0.0.1", "10.0.0.2"):
        status, body = raw.post(
            "/v1/authorize",
            {"principal": "User:bob", "host": host, "minOffset": offset,
             "actions": [action_json(*a) for a in actions]},
        )  # fmt: skip
        assert status == 200, body
        assert body["offset"] == offset
        assert body["results"] == reference_results(BINDINGS, "User:bob", host, actions)
    # Hand-worked: the PREFIXED DENY of WRITE on "ord" beats the ALLOW from 10.0.0.1.
    assert body["results"][1] == "DENIED"
    assert body["results"][:2] == ["ALLOWED", "DENIED"]


def test_without_min_offset_the_answer_names_the_offset_it_reflects(
    admin: StoreClient, raw: Raw
) -> None:
    offset = create_acls(admin, BINDINGS[:1])
    request = {
        "principal": "User:bob",
        "host": "1.2.3.4",
        "actions": [action_json(READ, T, "orders")],
    }
    for _ in range(200):
        status, body = raw.post("/v1/authorize", request)
        assert status == 200
        # Before the replica applied the create, the answer says so by its offset.
        assert body["results"] == (["ALLOWED"] if body["offset"] >= offset else ["DENIED"])
        if body["offset"] >= offset:
            break
    assert body["offset"] == offset


def test_a_min_offset_never_reached_times_out_naming_the_offset_reached(
    admin: StoreClient, raw: Raw
) -> None:
    offset = create_acls(admin, BINDINGS[:2])
    status, body = raw.post(
        "/v1/authorize",
        {"principal": "User:bob", "host": "h", "actions": [action_json(READ, T, "orders")],
         "minOffset": offset + 1000, "timeoutMs": 100},
    )  # fmt: skip
    assert status == 503
    assert body["error"] == "ConsistencyTimeoutError"
    assert body["offset"] == offset
    assert str(offset + 1000) in body["message"]


def test_explain_names_the_deciding_binding_or_rule(admin: StoreClient, raw: Raw) -> None:
    offset = create_acls(admin, BINDINGS)
    status, body = raw.post(
        "/v1/authorize",
        {"principal": "User:bob", "host": "10.0.0.1", "minOffset": offset, "explain": True,
         "actions": [action_json(WRITE, T, "orders"), action_json(READ, T, "nothing-here"),
                     action_json(READ, G, "billing")]},
    )  # fmt: skip
    assert status == 200
    deny, none, allow = body["reasons"]
    assert deny == {
        "rule": "MATCHING_ACL",
        "description": deny["description"],
        "binding": {"resourceType": "TOPIC", "resourceName": "ord", "patternType": "PREFIXED",
                    "principal": "User:bob", "host": "*", "operation": "WRITE", "permissionType": "DENY"},
    }  # fmt: skip
    # "nothing-here" still has the TOPIC "*" DESCRIBE ACL applying to it: not the no-ACL default.
    assert none["rule"] == "RESOURCE_HAS_ACLS"
    assert allow["binding"]["resourceType"] == "GROUP"
    assert body["results"] == ["DENIED", "DENIED", "ALLOWED"]


def test_super_users_are_allowed_everything(admin: StoreClient, raw: Raw) -> None:
    offset = create_acls(admin, BINDINGS)
    status, body = raw.post(
        "/v1/authorize",
        {"principal": "User:admin", "host": "h", "minOffset": offset, "explain": True,
         "actions": [action_json(WRITE, T, "orders")]},
    )  # fmt: skip
    assert (status, body["results"], body["reasons"][0]["rule"]) == (200, ["ALLOWED"], "SUPER_USER")


def test_raw_identities_are_mapped_by_kafkas_rules(tmp_path: Path) -> None:
    rules = (
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
        "DEFAULT"
    )
    node = start_node(
        tmp_path / "n", ssl_principal_mapping_rules=rules,
        kerberos_rules=("RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//", "DEFAULT"),
        kerberos_default_realm="EXAMPLE.COM",
    )  # fmt: skip
    raw = Raw(node)
    try:
        with admin_client(node) as admin:
            offset = create_acls(admin, [
                binding(T, "t", "User:serviceuser", READ), binding(T, "t", "User:adminuser@admin", READ),
                binding(T, "t", "User:user", READ), binding(T, "t", "User:bob", READ),
            ])  # fmt: skip
        # The examples of Kafka's docs: the two rules, then a Kerberos rule, then DEFAULT.
        cases = [
            ("sslDistinguishedName",
             "CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "User:serviceuser"),
            ("sslDistinguishedName", "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown",
             "User:adminuser@admin"),
            ("kerberosPrincipal", "user@MYDOMAIN.COM", "User:user"),
            ("kerberosPrincipal", "bob/host.example.com@EXAMPLE.COM", "User:bob"),
        ]  # fmt: skip
        for key, identity, principal in cases:
            status, body = raw.post(
                "/v1/authorize",
                {
                    key: identity,
                    "host": "h",
                    "minOffset": offset,
                    "actions": [action_json(READ, T, "t")],
                },
            )
            assert (status, body["principal"], body["results"]) == (200, principal, ["ALLOWED"]), (
                identity
            )
        status, body = raw.post(
            "/v1/authorize", {"sslDistinguishedName": "not a DN", "host": "h", "actions": []}
        )
        assert status == 400 and "sslDistinguishedName" in body["message"]
    finally:
        raw.close()
        node.stop()


def test_a_request_level_check_runs_every_check_of_the_api_key(
    admin: StoreClient, raw: Raw
) -> None:
    producer = "User:producer"
    offset = create_acls(admin, [binding(T, "orders", producer, WRITE)])
    request = {"principal": producer, "host": "h", "apiKey": "PRODUCE", "topics": ["orders"],
               "transactionalId": "tx-1", "minOffset": offset}  # fmt: skip
    status, body = raw.post("/v1/authorize-request", request)
    assert status == 200
    # Hand-worked from the docs' table: WRITE on the TRANSACTIONAL_ID, then WRITE on the TOPIC.
    assert [[(c["operation"], c["resourceType"], c["resourceName"], c["result"]) for c in s["anyOf"]]
            for s in body["steps"]] == [[("WRITE", "TRANSACTIONAL_ID", "tx-1", "DENIED")],
                                        [("WRITE", "TOPIC", "orders", "ALLOWED")]]  # fmt: skip
    assert (body["result"], body["apiName"], body["apiKey"]) == ("DENIED", "PRODUCE", 0)
    offset = create_acls(admin, [binding(X, "tx-", producer, WRITE, pattern=PREFIXED)])
    status, body = raw.post("/v1/authorize-request", {**request, "apiKey": 0, "minOffset": offset})
    assert (status, body["result"], body["offset"]) == (200, "ALLOWED", offset)


def test_fallback_steps_are_satisfied_by_any_alternative(admin: StoreClient, raw: Raw) -> None:
    offset = create_acls(admin, [binding(T, "new-", "User:c", CREATE, pattern=PREFIXED)])
    status, body = raw.post(
        "/v1/authorize-request",
        {"principal": "User:c", "host": "h", "apiKey": "CREATE_TOPICS", "topics": ["new-a", "old-b"],
         "minOffset": offset},
    )  # fmt: skip
    assert status == 200
    # Hand-worked: per topic, CREATE on the CLUSTER (denied) or CREATE on the topic.
    assert [s["result"] for s in body["steps"]] == ["ALLOWED", "DENIED"]
    assert [c["resourceType"] for c in body["steps"][0]["anyOf"]] == ["CLUSTER", "TOPIC"]
    assert body["result"] == "DENIED"


def test_authorize_by_resource_type(admin: StoreClient, raw: Raw) -> None:
    offset = create_acls(admin, [binding(T, "t1", "User:d", READ)])
    request = {"principal": "User:d", "host": "h", "operation": "READ", "resourceType": "TOPIC",
               "minOffset": offset, "explain": True}  # fmt: skip
    status, body = raw.post("/v1/authorize-by-resource-type", request)
    assert (status, body["result"], body["reason"]["binding"]["resourceName"]) == (
        200,
        "ALLOWED",
        "t1",
    )
    offset = create_acls(admin, [binding(T, "t1", "User:d", READ, permission=DENY)])
    status, body = raw.post("/v1/authorize-by-resource-type", {**request, "minOffset": offset})
    assert (status, body["result"]) == (200, "DENIED")  # the LITERAL DENY dominates the ALLOW


def _names(answer: dict) -> set[tuple[str, str, str]]:  # type: ignore[type-arg]
    return {(b["resourceType"], b["patternType"], b["resourceName"]) for b in answer["bindings"]}


def test_describe_and_delete_with_match_any_and_prefixed_filters(admin: StoreClient) -> None:
    p = "User:eve"
    create_acls(admin, [
        binding(T, "orders", p, READ), binding(T, "*", p, READ), binding(T, "ord", p, READ, pattern=PREFIXED),
        binding(T, "orders", p, READ, pattern=PREFIXED), binding(T, "other", p, READ),
        binding(G, "orders", p, READ),
    ])  # fmt: skip

    def describe(**f: str) -> set[tuple[str, str, str]]:
        return _names(admin.call("POST", "/v1/acls/describe", {"filter": f}))

    topic = {"resourceType": "TOPIC", "resourceName": "orders"}
    assert describe(**topic, patternType="MATCH") == {
        ("TOPIC", "LITERAL", "orders"), ("TOPIC", "LITERAL", "*"), ("TOPIC", "PREFIXED", "ord"),
        ("TOPIC", "PREFIXED", "orders"),
    }  # fmt: skip
    assert describe(**topic, patternType="ANY") == {
        ("TOPIC", "LITERAL", "orders"),
        ("TOPIC", "PREFIXED", "orders"),
    }
    assert describe(**topic, patternType="PREFIXED") == {("TOPIC", "PREFIXED", "orders")}
    assert describe(**topic) == {("TOPIC", "LITERAL", "orders"), ("TOPIC", "PREFIXED", "orders")}
    assert describe(resourceName="orders", patternType="LITERAL") == {
        ("TOPIC", "LITERAL", "orders"), ("GROUP", "LITERAL", "orders")}  # fmt: skip
    assert len(describe()) == 6
    assert len(admin.call("POST", "/v1/acls/describe")["bindings"]) == 6  # no body: everything

    answer = admin.call("POST", "/v1/acls/delete", {"filters": [
        {**topic, "patternType": "MATCH", "principal": p},
        {"resourceType": "TOPIC", "resourceName": "ord", "patternType": "PREFIXED"},
        {"resourceType": "TOPICS"} | {"resourceType": "GROUP", "patternType": "ANY", "resourceName": "zzz"},
    ]})  # fmt: skip
    matched = [
        {(b["patternType"], b["resourceName"]) for b in r["deleted"]} for r in answer["results"]
    ]
    # Each filter is matched against the state before the request: "ord" is reported twice.
    assert matched == [
        {("LITERAL", "orders"), ("LITERAL", "*"), ("PREFIXED", "ord"), ("PREFIXED", "orders")},
        {("PREFIXED", "ord")},
        set(),
    ]
    assert answer["recordsWritten"] == 4
    assert describe() == {("TOPIC", "LITERAL", "other"), ("GROUP", "LITERAL", "orders")}


def test_create_gives_one_result_per_binding(admin: StoreClient) -> None:
    good = wire(binding(T, "t", "User:f", READ))
    answer = admin.call("POST", "/v1/acls", {"bindings": [
        {**good, "operation": "ANY"},
        {**good, "resourceType": "CLUSTER", "resourceName": "not-kafka-cluster"},
        good,
        good,
        {**good, "principal": "no-colon"},
    ]})  # fmt: skip
    errors = [r["error"]["message"] if r["error"] else None for r in answer["results"]]
    assert errors[0] == "Invalid ACL creation: Operation is ANY"
    assert errors[1] == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert errors[2:4] == [None, None]  # a repeat within the request succeeds, written once
    assert errors[4] is not None and "no-colon" in errors[4]
    assert answer["recordsWritten"] == 1
    again = admin.call("POST", "/v1/acls", {"bindings": [good]})
    assert (again["recordsWritten"], again["offset"]) == (
        0,
        answer["offset"],
    )  # nothing new written


MALFORMED = [
    (b"{", "malformed JSON at line 1 column 2"),
    (b"[]", "the body must be a JSON object"),
    (b"", "the request body is empty"),
    (b"\xff\xfe", "not UTF-8"),
    (b'{"host": "h", "actions": []}', "give exactly one identity"),
    (b'{"principal": "bob", "host": "h", "actions": []}', "principalType:principalName but got bob"),
    (b'{"principal": "User:b", "actions": []}', "host is required"),
    (b'{"principal": "User:b", "host": "h", "actions": {}}', "actions must be a JSON array"),
    (b'{"principal": "User:b", "host": "h", "actions": [], "minOffset": "5"}', "minOffset must be a log"),
    (b'{"principal": "User:b", "host": "h", "actions": [], "minOffset": -2}', "minOffset must be a log"),
    (b'{"principal": "User:b", "host": "h", "actions": [], "extra": 1}', "unknown field extra"),
    (b'{"principal": "User:b", "host": "h", "actions": [{"operation": "REED", "resourceType": "TOPIC", '
     b'"resourceName": "x"}]}', "actions[0].operation: 'REED' is not an operation"),
    (b'{"principal": "User:b", "host": "h", "actions": [{"operation": "READ", "resourceType": "TOPICS", '
     b'"resourceName": "x"}]}', "actions[0].resourceType: 'TOPICS' is not a resource type"),
    (b'{"principal": "User:b", "host": "h", "actions": [{"operation": "ANY", "resourceType": "TOPIC", '
     b'"resourceName": "x"}]}', "(ANY is not)"),
    (b'{"principal": "User:b", "host": "h", "actions": [{"operation": "READ", "resourceType": "TOPIC", '
     b'"resourceName": "x", "patternType": "PREFIXED"}]}', "actions[0].patternType: 'PREFIXED'"),
    (b'{"principal": "User:b", "host": "h", "actions": [{"operation": 3, "resourceType": "TOPIC", '
     b'"resourceName": "x"}]}', "actions[0].operation must be an operation name"),
    (b'{"principal": "User:b", "host": "h", "actions": [], "minOffset": NaN}', "NaN is not a JSON value"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "message"), MALFORMED)
def test_malformed_authorize_requests_are_400_naming_the_value(
    raw: Raw, body: bytes, message: str
) -> None:
    status, answer, _ = raw.call(
        "POST", "/v1/authorize", body, {"Content-Type": "application/json"}
    )
    assert status == 400, answer
    assert message in answer["message"]


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/v1/authorize-by-resource-type", {"principal": "User:b", "host": "h", "operation": "READ",
                                            "resourceType": "ANY"}, "resourceType: 'ANY'"),
        ("/v1/authorize-request", {"principal": "User:b", "host": "h", "apiKey": "PRODUCER"},
         "apiKey: 'PRODUCER' is not a Kafka API key"),
        ("/v1/authorize-request", {"principal": "User:b", "host": "h", "apiKey": 999}, "API key 999"),
        ("/v1/authorize-request", {"principal": "User:b", "host": "h", "apiKey": "JOIN_GROUP"},
         "needs `group`"),
        ("/v1/acls/describe", {"filter": {"patternType": "MATCHY"}}, "filter.patternType: 'MATCHY'"),
        ("/v1/acls/delete", {"filters": [{"permissionType": "PERMIT"}]},
         "filters[0].permissionType: 'PERMIT'"),
        ("/v1/acls", {"bindings": [{"resourceType": "TOPIC"}]}, "bindings[0].operation"),
        ("/v1/configs/alter", {"configs": []}, "configs must be a non-empty object"),
        ("/v1/configs/alter", {"configs": {"no.such.key": "1"}}, "no.such.key"),
    ],
)  # fmt: skip
def test_bad_values_on_every_endpoint_are_4xx(
    admin: StoreClient, path: str, body: dict, message: str
) -> None:  # type: ignore[type-arg]
    from replicator.client import StoreClientError

    with pytest.raises(StoreClientError) as failure:
        admin.call("POST", path, body)
    assert failure.value.status == 400
    assert message in failure.value.message


def test_http_protocol_errors_are_4xx_json(raw: Raw) -> None:
    status, body, _ = raw.call("GET", "/v2/nothing")
    assert (status, body["error"]) == (404, "NOT_FOUND")
    status, body, response = raw.call("GET", "/v1/authorize")
    assert (status, response.getheader("Allow")) == (405, "POST")
    status, body, _ = raw.call("POST", "/v1/authorize", b"{}", {"Transfer-Encoding": "chunked"})
    assert status == 411
    status, body, _ = raw.call("POST", "/v1/authorize", b"{}", {"Content-Length": "nope"})
    assert status == 400 and "Content-Length" in body["message"]
    # The answer comes before the body is read (it never is); the connection is then closed.
    status, body, _ = raw.call(
        "POST", "/v1/authorize", b"{}", {"Content-Length": str(8 * 1024 * 1024 + 1)}
    )
    assert status == 413 and "at most 8388608" in body["message"]


def test_healthz_readyz_and_status(raw: Raw, admin: StoreClient) -> None:
    offset = create_acls(admin, BINDINGS[:3])
    assert raw.call("GET", "/healthz")[:2] == (200, {"status": "ok"})
    status, body, _ = raw.call("GET", "/readyz")
    assert (status, body["ready"]) == (200, True)
    status, body, _ = raw.call("GET", "/v1/status")
    assert status == 200
    assert body["stopped"] is None
    assert body["offset"] <= offset


def test_metrics_count_decisions_and_report_the_replica(raw: Raw, admin: StoreClient) -> None:
    offset = create_acls(admin, BINDINGS)
    raw.post("/v1/authorize", {"principal": "User:bob", "host": "1.1.1.1", "minOffset": offset,
                               "actions": [action_json(READ, T, "orders"), action_json(WRITE, T, "orders"),
                                           action_json(READ, T, "x")]})  # fmt: skip
    status, text, response = raw.call("GET", "/metrics")
    assert status == 200 and response.getheader("Content-Type").startswith("text/plain")
    page = text.decode()

    def value(name: str) -> float:
        found = re.search(rf"^{re.escape(name)} (\S+)$", page, re.MULTILINE)
        assert found is not None, name
        return float(found.group(1))

    # Hand-worked: READ orders allowed; WRITE orders denied (prefixed DENY); READ x denied.
    assert value('aclstore_decisions_total{endpoint="authorize",result="ALLOWED"}') == 1
    assert value('aclstore_decisions_total{endpoint="authorize",result="DENIED"}') == 2
    assert value('aclstore_decision_latency_seconds_count{endpoint="authorize"}') == 1
    assert value("aclstore_replica_applied_offset") == offset
    assert value("aclstore_replica_lag") == 0
    assert value("aclstore_replica_stopped_at_offset") == -1
    assert value("aclstore_replica_bindings") == len(BINDINGS)
    # the answers for "orders" and "x" are cached: a few kB, nothing evicted at this size
    assert 0 < value("aclstore_replica_cache_bytes") < 100_000
    assert value("aclstore_replica_cache_evicted_total") == 0
    assert value("aclstore_audit_dropped_events_total") == 0


def test_openapi_is_served_as_checked_in_and_covers_every_route(node: Node, raw: Raw) -> None:
    checked_in = (Path(__file__).parents[2] / "replicator" / "openapi.json").read_bytes()
    status, served, _ = raw.call("GET", "/openapi.json")
    assert status == 200 and served == json.loads(checked_in)
    assert node.server is not None
    # the web console's pages and calls (/ui/...) are a browser's, not the API's
    routes = {
        (method.lower(), path) for method, path in node.server.routes if not path.startswith("/ui")
    }
    assert any(path.startswith("/ui/") for _, path in node.server.routes)
    documented = {(method, path) for path, item in served["paths"].items() for method in item}
    assert routes == documented


def test_configs_alter_validate_only_then_for_real(admin: StoreClient, raw: Raw) -> None:
    key = "allow.everyone.if.no.acl.found"
    dry = admin.alter_configs({key: "true"}, validate_only=True)
    assert (dry.changed, dry.validate_only) == ([], True)
    described = admin.describe_configs([key])
    assert [(c.name, c.value, c.is_default) for c in described.configs] == [(key, "false", True)]
    request = {"principal": "User:g", "host": "h", "actions": [action_json(READ, T, "no-acls")]}
    assert raw.post("/v1/authorize", request)[1]["results"] == ["DENIED"]
    done = admin.alter_configs({key: "true"})
    assert done.changed == [key]
    _, body = raw.post("/v1/authorize", {**request, "minOffset": done.offset, "explain": True})
    assert (body["results"], body["reasons"][0]["rule"]) == (["ALLOWED"], "DEFAULT_ALLOW")


def test_a_restart_keeps_the_data_and_the_credential(tmp_path: Path) -> None:
    node = start_node(tmp_path / "n")
    try:
        with admin_client(node) as admin:
            offset = create_acls(admin, BINDINGS)
        assert node.info is not None and node.info.credential.created
    finally:
        node.stop()
    node = start_node(tmp_path / "n")
    raw = Raw(node)
    try:
        assert node.info is not None and not node.info.credential.created
        with admin_client(node) as admin:
            described = admin.describe_acls()
        assert len(described.bindings) == len(BINDINGS) and described.offset == offset
        actions = [(READ, T, "orders"), (WRITE, T, "orders")]
        status, body = raw.post("/v1/authorize", {"principal": "User:bob", "host": "10.0.0.1",
                                                  "actions": [action_json(*a) for a in actions]})  # fmt: skip
        assert (status, body["offset"]) == (200, offset)  # ready at once: resumed, not replayed
        assert body["results"] == reference_results(BINDINGS, "User:bob", "10.0.0.1", actions)
    finally:
        raw.close()
        node.stop()
