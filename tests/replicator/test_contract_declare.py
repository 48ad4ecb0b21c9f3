"""Declaring a message once (:mod:`replicator.contract.declare`): the parser, the writer and the
schema one declaration gives, checked on a small message written for this test against
hand-worked bodies, errors and schemas; then every answer the server builds read back by the
client's types.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from replicator.contract import answers
from replicator.contract.declare import Message, message, shape, wire
from replicator.contract.fields import ALL_OPS, BadRequestError
from replicator.contract.kinds import (
    FLAG,
    NULLABLE_TEXT,
    TEXT,
    TEXT_ITEM,
    Array,
    Integer,
    KafkaEnum,
)
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.admin import (
    AclCreationResult,
    AclDeletionResult,
    CreateAclsResult,
    DeleteAclsResult,
    DescribeAclsResult,
    DescribeConfigsResult,
)
from store.authorizer import AuthorizationResult, Decision, DecisionRule
from store.errors import InvalidAclError
from store.settings import ConfigEntry

pytestmark = pytest.mark.unit


@message("Inner", closed=True)
class Inner(Message):
    operation: AclOperation = wire(KafkaEnum(AclOperation, ALL_OPS))
    note: str | None = wire(NULLABLE_TEXT, default=None)


@message("Outer", closed=True, read_first=("items",))
class Outer(Message):
    host_name: str = wire(TEXT, example="h")
    count: int = wire(Integer(minimum=0, maximum=9, what="must be a digit"), default=1)
    verbose: bool = wire(FLAG, default=True, null_is_absent=True)
    label: str | None = wire(TEXT, default=None, name="tag")
    items: list[Inner] = wire(Array(shape(Inner), limit=2))
    names: list[str] = wire(Array(TEXT_ITEM), default_factory=list)

    @classmethod
    def check_body(cls, value: dict[str, Any], path: str) -> None:
        if value.get("tag") == "forbidden":
            raise BadRequestError("tag: forbidden")

    def check(self, path: str) -> None:
        if self.count > len(self.items) + 5:
            raise BadRequestError("count: more than the items allow")


@message()
class Open(Message):
    """Not closed: an unknown key is skipped (an answer from a newer server)."""

    value: int = wire(Integer())


def test_a_body_reads_with_defaults_names_and_nested_messages() -> None:
    read = Outer.from_json({"hostName": "h", "items": [{"operation": "read"}], "tag": "t"})
    assert read == Outer(host_name="h", items=[Inner(operation=AclOperation.READ)], label="t")
    assert (read.count, read.verbose, read.names) == (1, True, [])
    # null is absent for a None default and where null_is_absent says so, not elsewhere
    assert Outer.from_json({"hostName": "h", "items": [], "verbose": None, "tag": None}).verbose
    with pytest.raises(BadRequestError, match=r"^count must be a digit, got null$"):
        Outer.from_json({"hostName": "h", "items": [], "count": None})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "the body must be a JSON object, got []"),
        ({"items": []}, "hostName is required (a string)"),
        ({"hostName": 5, "items": []}, "hostName must be a string, got 5"),
        ({"hostName": "h", "items": [], "count": 10}, "count must be a digit, got 10"),
        ({"hostName": "h", "items": [], "count": True}, "count must be a digit, got true"),
        ({"hostName": "h"}, "items must be a JSON array, got null"),
        ({"hostName": "h", "items": [{}, {}, {}]}, "items has 3 items; at most 2 per request"),
        ({"hostName": "h", "items": [5]}, "items[0] must be a JSON object, got 5"),
        ({"hostName": "h", "items": [{"operation": "READ", "x": 1}]},
         "unknown field items[0].x; known fields: note, operation"),
        ({"hostName": "h", "items": [{"operation": "READ"}, {"operation": "REED"}]},
         "items[1].operation: 'REED' is not an operation; use one of ANY, ALL, READ"),
        ({"hostName": "h", "items": [{"operation": "READ", "note": 1}]},
         "items[0].note must be a string or null, got 1"),
        ({"hostName": "h", "items": [], "names": ["a", None]}, "names[1] must be a string, got null"),
        ({"hostName": "h", "items": [], "zz": 1},
         "unknown field zz; known fields: count, hostName, items, names, tag, verbose"),
        ({"hostName": "h", "items": [], "tag": "forbidden"}, "tag: forbidden"),
        ({"hostName": "h", "items": [], "count": 6}, "count: more than the items allow"),
        # read_first: the items are read (and complained about) before the other fields
        ({"hostName": 5, "items": 5}, "items must be a JSON array, got 5"),
    ],
)  # fmt: skip
def test_every_error_names_the_path_the_value_and_the_fix(body: Any, message: str) -> None:
    with pytest.raises(BadRequestError) as caught:
        Outer.from_json(body)
    assert caught.value.message.startswith(message), caught.value.message


def test_an_open_message_skips_unknown_keys() -> None:
    assert Open.from_json({"value": 3, "newer": True}) == Open(value=3)


def test_the_writer_leaves_out_none_unless_the_kind_has_null() -> None:
    outer = Outer(host_name="h", items=[Inner(operation=AclOperation.ALL)])
    assert outer.to_json() == {
        "hostName": "h", "count": 1, "verbose": True, "items": [{"operation": "ALL", "note": None}],
        "names": [],
    }  # fmt: skip
    assert Outer.from_json(outer.to_json()) == outer


def test_the_schema_is_the_declaration() -> None:
    assert shape(Outer).schema() == {"$ref": "#/components/schemas/Outer"}
    assert shape(Outer).definition() == {
        "type": "object",
        "required": ["hostName", "items"],
        "additionalProperties": False,
        "properties": {
            "hostName": {"type": "string", "example": "h"},
            "count": {"type": "integer", "minimum": 0, "maximum": 9, "default": 1},
            "verbose": {"type": "boolean", "default": True},
            "tag": {"type": "string"},
            "items": {"type": "array", "maxItems": 2, "items": {"$ref": "#/components/schemas/Inner"}},
            "names": {"type": "array", "items": {"type": "string"}},
        },
    }
    assert shape(Inner).definition()["properties"] == {
        "operation": {"$ref": "#/components/schemas/AclOperation"},
        "note": {"type": ["string", "null"]},
    }


def test_instances_are_frozen_keyword_only_dataclasses_with_fresh_factory_defaults() -> None:
    one, two = Outer(host_name="a", items=[]), Outer(host_name="b", items=[])
    assert one.names == [] and one.names is not two.names
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.host_name = "c"  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'items'"):
        Outer(host_name="a")  # type: ignore[call-arg]
    assert dataclasses.replace(one, count=3).count == 3


def test_a_field_without_its_wire_form_is_refused_at_declaration() -> None:
    with pytest.raises(TypeError, match="field x is not declared with wire"):

        @message()
        class Bad(Message):
            x: int = 3


# --- the server's answers, read back with the client's types --------------------------------------

BINDING = AclBinding.of(
    ResourceType.TOPIC, "t", PatternType.PREFIXED, "User:a", "*", AclOperation.READ,
    AclPermissionType.DENY,
)  # fmt: skip
DECISION = Decision(AuthorizationResult.DENIED, DecisionRule.MATCHING_ACL, BINDING)


def test_every_answer_the_server_builds_reads_back_as_its_declared_type() -> None:
    built: list[tuple[type[Message], dict[str, Any]]] = [
        (answers.AuthorizeAnswer,
         answers.authorize_answer([DECISION], 3, explain=True, mapped_principal="User:x")),
        (answers.ByResourceTypeAnswer,
         answers.by_resource_type_answer(DECISION, 3, explain=False, mapped_principal=None)),
        (answers.CreateAclsAnswer, answers.create_acls_answer(
            [BINDING, BINDING],
            CreateAclsResult((AclCreationResult(BINDING),
                              AclCreationResult(BINDING, InvalidAclError("no"))), 4, 1))),
        (answers.DeleteAclsAnswer, answers.delete_acls_answer(
            DeleteAclsResult((AclDeletionResult(AclBindingFilter(), (BINDING,)),), 5, 1))),
        (answers.DescribeAclsAnswer, answers.describe_acls_answer(DescribeAclsResult((BINDING,), 6))),
        (answers.DescribeConfigsAnswer, answers.describe_configs_answer(
            DescribeConfigsResult((ConfigEntry(name="super.users", value="", is_default=True),), 7))),
        (answers.OffsetWaitAnswer, answers.offset_answer(8, ready=True)),
        (answers.HealthAnswer, answers.health_answer("boom")),
    ]  # fmt: skip
    for cls, body in built:
        read = cls.from_json(body)
        assert read.to_json() == body, cls.__name__
    authorized = answers.AuthorizeAnswer.from_json(built[0][1])
    assert authorized.results == [AuthorizationResult.DENIED]
    assert authorized.reasons is not None and authorized.reasons[0].binding == BINDING
    created = answers.CreateAclsAnswer.from_json(built[2][1])
    assert [r.error is None for r in created.results] == [True, False]
    assert created.results[1].error is not None and created.results[1].error.message == "no"
