"""The API contract: the OpenAPI document is what the contract generates and what its parsers
and answer builders do; the audit event is what ``schemas/audit_event_v1.json`` declares.

No server runs here: the parsers are probed with bodies, the answers built from hand-made
results, and both compared with the checked-in documents field by field.
"""

from __future__ import annotations

import enum
import gc
import json
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from schema_support import violations

from replicator.contract import answers, requests
from replicator.contract.audit_event import (
    EVENT_TYPE,
    SCHEMA_FILE,
    AuditEventEncoder,
    DecisionItems,
    audit_event,
    audit_event_schema,
    decision_names,
    encode_audit_event,
)
from replicator.contract.bindings import RESOURCE_NAME, acl_filter, binding, binding_json
from replicator.contract.endpoints import ENDPOINTS, endpoint
from replicator.contract.fields import BadRequestError
from replicator.contract.openapi import openapi_bytes, openapi_document
from store.acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType
from store.admin import (
    AclCreationResult,
    AclDeletionResult,
    AlterAclsResult,
    AlterConfigsResult,
    CreateAclsResult,
    DeleteAclsResult,
    DescribeAclsResult,
    DescribeConfigsResult,
)
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule
from store.errors import InvalidRequestError
from store.kafka_apis import Check
from store.settings import ConfigEntry

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "replicator" / "openapi.json").read_text(encoding="utf-8"))
SCHEMAS: dict[str, Any] = DOC["components"]["schemas"]
DENY_BINDING = AclBinding.of(
    ResourceType.TOPIC, "secret", PatternType.PREFIXED, "User:eve", "*", AclOperation.READ,
    AclPermissionType.DENY,
)  # fmt: skip
BY_ACL = Decision(AuthorizationResult.DENIED, DecisionRule.MATCHING_ACL, DENY_BINDING)
BY_DEFAULT = Decision(AuthorizationResult.ALLOWED, DecisionRule.DEFAULT_ALLOW)


E = TypeVar("E", bound=enum.Enum)


def test_the_checked_in_document_is_the_generated_one() -> None:
    """Run ``python -m replicator.contract`` after changing the contract."""
    assert (ROOT / "replicator" / "openapi.json").read_bytes() == openapi_bytes()


def test_every_endpoint_is_documented_and_every_documented_path_is_an_endpoint() -> None:
    documented = {(m.upper(), path) for path, item in DOC["paths"].items() for m in item}
    assert documented == {(e.method, e.path) for e in ENDPOINTS}
    assert len({e.name for e in ENDPOINTS}) == len(ENDPOINTS)


def test_endpoints_are_found_by_name_as_the_client_sends_them() -> None:
    assert (endpoint("describe_acls").method, endpoint("describe_acls").path) == ("POST", "/v1/acls/describe")
    with pytest.raises(KeyError, match="no endpoint 'describe'; endpoints: healthz, readyz"):
        endpoint("describe")


def test_every_reference_in_the_document_resolves() -> None:
    refs = re.findall(r'"\$ref": "#/components/schemas/([A-Za-z]+)"', json.dumps(openapi_document()))
    assert refs and set(refs) <= set(SCHEMAS)


def _known_fields(parse: Callable[[Any], object], body: dict[str, Any]) -> set[str]:
    """The fields a parser accepts, as its 'unknown field' error lists them."""
    with pytest.raises(BadRequestError) as caught:
        parse({**body, "zzNotAField": 1})
    found = re.search(r"unknown field (?:\S+\.)?zzNotAField; known fields: (.*)$", caught.value.message)
    assert found is not None, caught.value.message
    return set(found.group(1).split(", "))


def _first_item_fields(parse: Callable[[Any], object], key: str) -> set[str]:
    return _known_fields(lambda item: parse({key: [item]}), {})


@pytest.mark.parametrize(
    ("schema", "parse"),
    [
        ("AuthorizeRequest", requests.authorize_request),
        ("ByResourceTypeRequest", requests.by_resource_type_request),
        ("RequestCheckRequest", requests.request_check_request),
        ("CreateAclsRequest", requests.bindings),
        ("DescribeAclsRequest", requests.describe_request),
        ("DeleteAclsRequest", requests.delete_filters),
        ("DescribeConfigsRequest", requests.describe_configs_request),
        ("AlterConfigsRequest", requests.alter_configs_request),
        ("OffsetWaitRequest", requests.offset_wait_request),
        ("AlterAclsRequest", requests.alter_acls_request),
    ],
)
def test_a_request_schema_lists_exactly_the_fields_its_parser_accepts(
    schema: str, parse: Callable[[Any], object]
) -> None:
    assert set(SCHEMAS[schema]["properties"]) == _known_fields(parse, {})
    assert SCHEMAS[schema]["additionalProperties"] is False


def test_nested_request_shapes_list_exactly_the_accepted_fields() -> None:
    assert set(SCHEMAS["Action"]["properties"]) == _first_item_fields(
        lambda body: requests.authorize_request({"principal": "User:a", "host": "h", **body}), "actions"
    )
    assert set(SCHEMAS["AclBinding"]["properties"]) == _known_fields(lambda v: binding(v, "b"), {})
    assert set(SCHEMAS["AclBindingFilter"]["properties"]) == _known_fields(lambda v: acl_filter(v, "f"), {})
    # The name field is the contract's one mapping of ResourcePattern.name.
    assert RESOURCE_NAME == "resourceName" and RESOURCE_NAME in SCHEMAS["AclBinding"]["required"]


def test_bodies_the_document_calls_valid_parse_and_required_fields_are_required() -> None:
    action = {"operation": "READ", "resourceType": "TOPIC", "resourceName": "orders"}
    body = {"principal": "User:bob", "host": "10.0.0.1", "actions": [action]}
    assert violations(body, SCHEMAS["AuthorizeRequest"], DOC) == []
    parsed = requests.authorize_request(body)
    assert parsed.actions == [Action(AclOperation.READ, ResourceType.TOPIC, "orders")]
    for field in SCHEMAS["AuthorizeRequest"]["required"]:
        partial = {k: v for k, v in body.items() if k != field}
        assert violations(partial, SCHEMAS["AuthorizeRequest"], DOC) == [f"$: missing {field}"]
        with pytest.raises(InvalidRequestError):
            requests.authorize_request(partial)


def _answer_fits(answer: dict[str, Any], schema: str) -> None:
    """The answer conforms, and names no field its schema does not document."""
    assert violations(answer, SCHEMAS[schema], DOC) == []
    assert set(answer) <= set(SCHEMAS[schema]["properties"])


def test_decision_answers_have_their_documented_shapes() -> None:
    answer = answers.authorize_answer([BY_ACL, BY_DEFAULT], 7, explain=True, mapped_principal="User:eve")
    assert answer == {
        "results": ["DENIED", "ALLOWED"], "offset": 7, "principal": "User:eve",
        "reasons": [
            {"rule": "MATCHING_ACL", "description": DecisionRule.MATCHING_ACL.value,
             "binding": {"resourceType": "TOPIC", "resourceName": "secret", "patternType": "PREFIXED",
                         "principal": "User:eve", "host": "*", "operation": "READ",
                         "permissionType": "DENY"}},
            {"rule": "DEFAULT_ALLOW", "description": DecisionRule.DEFAULT_ALLOW.value},
        ],
    }  # fmt: skip
    _answer_fits(answer, "AuthorizeResponse")
    assert answers.authorize_answer([BY_DEFAULT], 3, explain=False, mapped_principal=None) == {
        "results": ["ALLOWED"], "offset": 3,
    }  # fmt: skip
    _answer_fits(answers.by_resource_type_answer(BY_ACL, 2, explain=True, mapped_principal="User:x"),
                 "ByResourceTypeResponse")  # fmt: skip
    write = Check(operation=AclOperation.WRITE, resource_type=ResourceType.TOPIC, name="t")
    create = Check(operation=AclOperation.CREATE, resource_type=ResourceType.CLUSTER, name="kafka-cluster")
    answer = answers.request_check_answer(
        api_key=0, api_name="PRODUCE", offset=9, explain=True, mapped_principal=None,
        steps=[[(write, BY_DEFAULT)], [(create, BY_ACL), (write, BY_DEFAULT)], [(create, BY_ACL)]],
    )  # fmt: skip
    # Hand-worked: step 1 allowed, step 2 allowed by its second alternative, step 3 denied.
    assert [s["result"] for s in answer["steps"]] == ["ALLOWED", "ALLOWED", "DENIED"]
    assert answer["result"] == "DENIED" and answer["apiName"] == "PRODUCE"
    _answer_fits(answer, "RequestCheckResponse")


def test_admin_answers_have_their_documented_shapes() -> None:
    invalid = binding({"resourceType": "ANY", "resourceName": "t", "principal": "User:a",
                       "operation": "READ"}, "b")  # fmt: skip
    created = answers.create_acls_answer(
        [DENY_BINDING, invalid],
        CreateAclsResult((AclCreationResult(DENY_BINDING),), offset=4, records_written=1),
    )
    assert created["results"][0]["error"] is None
    assert created["results"][1]["error"]["kafkaErrorCode"] == 42  # INVALID_REQUEST
    _answer_fits(created, "CreateAclsResponse")
    _answer_fits(answers.describe_acls_answer(DescribeAclsResult((DENY_BINDING,), 4)), "DescribeAclsResponse")
    deleted = answers.delete_acls_answer(
        DeleteAclsResult((AclDeletionResult(AclBindingFilter(), (DENY_BINDING,)),), 5, 1)
    )
    assert deleted["results"][0]["filter"]["resourceType"] == "ANY"
    _answer_fits(deleted, "DeleteAclsResponse")
    entry = ConfigEntry(name="super.users", value="", is_default=True)
    _answer_fits(answers.describe_configs_answer(DescribeConfigsResult((entry,), 5)),
                 "DescribeConfigsResponse")  # fmt: skip
    _answer_fits(answers.alter_configs_answer(AlterConfigsResult(("super.users",), 6, False)),
                 "AlterConfigsResponse")  # fmt: skip
    _answer_fits(answers.error_json("BadRequestError", "m", kafkaErrorCode=42), "Error")
    altered = answers.alter_acls_answer(
        [DENY_BINDING, invalid],
        AlterAclsResult(
            deleted=(AclDeletionResult(AclBindingFilter(), (DENY_BINDING,)),),
            created=(AclCreationResult(DENY_BINDING),), configs_changed=("super.users",),
            offset=9, records_written=3,
        ),
    )  # fmt: skip
    assert [r["error"] is None for r in altered["createResults"]] == [True, False]
    assert altered["offset"] == 9 and altered["configsChanged"] == ["super.users"]
    _answer_fits(altered, "AlterAclsResponse")


def test_an_alter_acls_body_parses_and_an_empty_one_is_refused() -> None:
    body = {"deletes": [{"resourceType": "TOPIC"}], "creates": [binding_json(DENY_BINDING)],
            "configs": {"super.users": None}}  # fmt: skip
    assert violations(body, SCHEMAS["AlterAclsRequest"], DOC) == []
    parsed = requests.alter_acls_request(body)
    assert parsed.creates == [DENY_BINDING] and parsed.configs == {"super.users": None}
    assert parsed.deletes[0].pattern_filter.resource_type is ResourceType.TOPIC
    with pytest.raises(InvalidRequestError, match="at least one"):
        requests.alter_acls_request({"deletes": [], "creates": []})


def test_audit_events_conform_to_the_declared_schema_field_by_field() -> None:
    schema = audit_event_schema()
    assert json.loads((ROOT / "schemas" / SCHEMA_FILE).read_text(encoding="utf-8")) == schema
    assert schema["properties"]["type"]["const"] == EVENT_TYPE
    by_type = Action(AclOperation.WRITE, ResourceType.GROUP, "*", PatternType.ANY)
    for action, decision in ((Action(AclOperation.READ, ResourceType.TOPIC, "secret-x"), BY_ACL),
                             (by_type, BY_DEFAULT)):  # fmt: skip
        event = audit_event(
            event_id="e1", source="aclstore://h/127.0.0.1:9096", time_ns=1_700_000_000_123_456_000,
            principal="User:eve", host="192.0.2.7", action=action, decision=decision, offset=12,
        )  # fmt: skip
        assert violations(event, schema) == []
        assert event["time"] == "2023-11-14T22:13:20.123456+00:00"
        assert datetime.fromisoformat(event["time"]).tzinfo is not None
        assert event["data"]["resourceName"] == action.name
        for field in schema["required"]:
            assert violations({k: v for k, v in event.items() if k != field}, schema) == [
                f"$: missing {field}"
            ]
    # A wrong type or an unknown field is caught, field by field.
    assert violations({**event, "data": {**event["data"], "offset": "12"}}, schema) == [
        "$.data.offset: '12' is not of type ['integer']"
    ]
    assert violations({**event, "extra": 1}, schema) == ["$: unexpected extra"]


def test_the_fast_audit_encoder_writes_the_bytes_of_the_event_dict() -> None:
    """The sender's encoder against ``json.dumps`` of :func:`audit_event`, byte for byte."""
    quoted = AclBinding.of(
        ResourceType.TOPIC, 'caf\u00e9 "x"\\', PatternType.PREFIXED, "User:\u00e9ve",
        "*", AclOperation.ALL, AclPermissionType.ALLOW,
    )  # fmt: skip
    cases = [
        (Action(AclOperation.READ, ResourceType.TOPIC, "secret-x"), BY_ACL),
        (Action(AclOperation.WRITE, ResourceType.GROUP, "*", PatternType.ANY), BY_DEFAULT),
        (
            Action(AclOperation.DESCRIBE, ResourceType.TOPIC, 'caf\u00e9 "x"\\ \n end'),
            Decision(AuthorizationResult.ALLOWED, DecisionRule.MATCHING_ACL, quoted),
        ),
        (
            Action(AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster"),
            Decision(AuthorizationResult.DENIED, DecisionRule.RESOURCE_HAS_ACLS),
        ),
    ]
    encoder = AuditEventEncoder("aclstore://h\u00f6st/127.0.0.1:9096")
    for principal, host in (("User:eve", "192.0.2.7"), ('User:"\u00e9ve"\t', "::1")):
        ids = [f"id-{i}" for i in range(len(cases))]
        # The decisions as the spool keeps them: through JSON and back.
        names = json.loads(json.dumps([decision_names(a, d) for a, d in cases]))
        fast = encoder.encode(
            event_ids=ids, time_ns=1_700_000_000_123_456_789, principal=principal, host=host,
            offset=12, decisions=names,
        )  # fmt: skip
        slow = [
            encode_audit_event(audit_event(
                event_id=i, source="aclstore://h\u00f6st/127.0.0.1:9096",
                time_ns=1_700_000_000_123_456_789, principal=principal, host=host, action=a,
                decision=d, offset=12,
            ))
            for i, (a, d) in zip(ids, cases, strict=True)
        ]
        assert fast == slow
    assert json.loads(fast[2])["data"]["reason"]["binding"]["resourceName"] == 'caf\u00e9 "x"\\'
    # The request path writes each decision's item, which the sender makes the event's data
    # fields from "operation" to "reason" of: as json.dumps gives them (the reasons made once,
    # so twice).  An item made of the decision's names (an old spool's) is the same item.
    as_item = DecisionItems()
    for _ in range(2):
        for action, decision in cases:
            data = audit_event(
                event_id="x", source="s", time_ns=0, principal="p", host="h", action=action,
                decision=decision, offset=0,
            )["data"]  # fmt: skip
            shared = ("principal", "host", "offset")
            expected = json.dumps({k: v for k, v in data.items() if k not in shared},
                                  separators=(",", ":"))  # fmt: skip
            item = as_item(action, decision)
            assert encoder.fragment_of_item(item.encode()) == expected[1:-1].encode()
            assert encoder.item(json.loads(json.dumps(decision_names(action, decision)))) == item
            assert item.isascii() and all(c >= " " or c == "\x1f" for c in item)
            assert "\t" not in expected and "\n" not in expected
    # An item the sender cannot make an event of is refused, not shipped half-made.
    for bad in (b"READ\x1fTOPIC", b"READ\x1fTOPIX\x1fLITERAL\x1fDENIED\x1fDEFAULT_DENY\x1f\"t\"",
                b"READ\x1fTOPIC\x1fLITERAL\x1fDENIED\x1fNO_SUCH_RULE\x1f\"t\""):  # fmt: skip
        with pytest.raises(ValueError):
            encoder.fragment_of_item(bad)


def test_a_lone_escaped_surrogate_is_a_bad_request_and_a_pair_is_its_character() -> None:
    from replicator.contract.fields import parse_json

    with pytest.raises(BadRequestError, match="lone UTF-16 surrogate"):
        parse_json(b'{"principal": "User:\\ud800"}')
    with pytest.raises(BadRequestError, match="lone UTF-16 surrogate"):
        parse_json(b'{"actions": [{"resourceName": "\\udfff-tail"}]}')
    # A pair is the character it encodes (U+1F600), and a \\ud7ff escape is an ordinary one.
    assert parse_json(b'{"name": "\\ud83d\\ude00"}') == {"name": "\U0001f600"}
    assert parse_json(b'{"name": "\\ud7ff"}') == {"name": "\ud7ff"}


def test_the_audit_items_memo_lets_go_of_the_bindings_it_no_longer_keeps() -> None:
    """The memo of reasons holds each binding object it made one for; past its bound it drops
    them all, so the bindings a replica's cache has evicted are freed.  20,000 bindings through
    a memo of 4,096: 20,000 - 4 x 4,096 = 3,616 are still held after the last reset."""
    assert DecisionItems.MAX_BINDINGS == 4096
    items = DecisionItems()
    made = [
        AclBinding.of(ResourceType.TOPIC, f"memo-{i}", PatternType.LITERAL, "User:a", "*",
                      AclOperation.READ, AclPermissionType.DENY)
        for i in range(20_000)
    ]  # fmt: skip
    for b in made:
        decision = Decision(AuthorizationResult.DENIED, DecisionRule.MATCHING_ACL, b)
        item = items(Action(AclOperation.READ, ResourceType.TOPIC, b.name), decision)
        assert f'"resourceName":"{b.name}"' in item
    del made, b, decision
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if type(o) is AclBinding and o.name.startswith("memo-"))
    assert alive == 3616


def test_an_audit_items_reason_is_the_answers_reason_as_json_dumps_writes_it() -> None:
    """The reason a spool item carries is joined from its parts: for every rule, with and
    without a binding whose names hold quotes, backslashes, control characters, non-ASCII
    letters and a character beyond the BMP, of every resource type, pattern type, operation
    and permission type a binding can have, it is ``json.dumps`` of the reason the authorize
    answer gives (``reason_json``), byte for byte."""
    import random

    rng = random.Random(7)
    alphabet = ['"', "\\", "/", "\x00", "\x1f", "\t", "\n", "\u00e9", "\u2028", "\U0001f600", "a", "-", "*"]

    def name() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12)))

    def specific(kind: type[E]) -> E:
        return rng.choice([m for m in kind if m.name not in ("UNKNOWN", "ANY", "MATCH")])

    items = DecisionItems()
    for rule in DecisionRule:
        for _ in range(40):
            b = AclBinding.of(specific(ResourceType), name(), specific(PatternType), f"User:{name()}",
                              name(), specific(AclOperation), specific(AclPermissionType))  # fmt: skip
            for decision in (Decision(AuthorizationResult.DENIED, rule, b),
                             Decision(AuthorizationResult.DENIED, rule)):  # fmt: skip
                item = items(Action(AclOperation.WRITE, ResourceType.TOPIC, "t"), decision)
                reason = item.split("\x1f")[4]
                expected = json.dumps(answers.reason_json(decision), separators=(",", ":"))
                assert (reason if reason.startswith("{") else reason_of_rule(rule)) == expected


def reason_of_rule(rule: DecisionRule) -> str:
    """The reason of a decision that names no binding, as the sender makes it of the item's
    rule name."""
    item = f'READ\x1fTOPIC\x1fLITERAL\x1fDENIED\x1f{rule.name}\x1f"t"'
    fragment = AuditEventEncoder("s").fragment_of_item(item.encode())
    return fragment.split(b'"reason":', 1)[1].decode()
