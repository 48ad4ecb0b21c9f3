"""The broker plugin's side of the contract: ``Wire.java`` checked against ``openapi.json``.

``Wire`` (``plugin/src/main/java/io/aclstore/kafka/Wire.java``) is where the plugin names every
path, request field and answer field it uses.  A Java harness (``tests/java/WireHarness.java``)
runs it on Kafka's own values: every action the plugin asks about, a binding and a filter for
each constant of Kafka's enums, the long-poll's three bodies; and it reads, with Wire, answers
the contract's own types wrote (:mod:`replicator.contract.answers`).  Each request must fit the
schema of its endpoint in the checked-in document and read, with the node's own parser, as the
Kafka values it was made of; each answer must read as the values it was written from.  A field
name changed on either side fails here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from schema_support import violations

from devtools.java import SHORT_RUN_JVM_OPTIONS, compile_harness, run_harness
from devtools.maven import kafka_classpath
from devtools.plugin import plugin_jar
from replicator.contract import endpoints
from replicator.contract.answers import (
    AuthorizeAnswer,
    ByResourceTypeAnswer,
    CreateAclsAnswer,
    CreateResult,
    DeleteAclsAnswer,
    DeleteResult,
    DescribeAclsAnswer,
    ErrorAnswer,
    ItemError,
    OffsetWaitAnswer,
    Reason,
    ReplicaStatusAnswer,
)
from replicator.contract.declare import shape
from replicator.contract.endpoints import Endpoint
from replicator.contract.requests import (
    AuthorizeRequest,
    ByResourceTypeRequest,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    OffsetWaitRequest,
)
from store.acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import ALLOWED, DENIED, DecisionRule

pytestmark = pytest.mark.slow  # a JVM, and the plugin built by Maven

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "replicator" / "openapi.json").read_text(encoding="utf-8"))
HARNESS = ROOT / "tests" / "java" / "WireHarness.java"

NOT_IN_THE_STORE_MODEL = {"TWO_PHASE_COMMIT"}
"""Kafka operations the store does not model (KIP-939; the README says so): the plugin does not
ask about them (``Wire.DECIDABLE_OPERATIONS``), but forwards a binding or filter that names one,
which the node refuses with a 400.  Any other constant outside the document fails this test."""

B1 = AclBinding.of(ResourceType.TOPIC, "orders", PatternType.PREFIXED, "User:bob", "*",
                   AclOperation.READ, AclPermissionType.DENY)  # fmt: skip
B2 = AclBinding.of(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:eve",
                   "10.0.0.2", AclOperation.ALTER_CONFIGS, AclPermissionType.ALLOW)  # fmt: skip
REFUSED = ItemError(error="InvalidAclError", message="The only valid name for the CLUSTER resource is "
                    "kafka-cluster", kafka_error_code=42)  # fmt: skip
STATUS = ReplicaStatusAnswer(
    ready=True, offset=40, timestamp_ms=1_700_000_000_000, ready_offset=39, log_end_offset=41,
    log_end_age_ms=5, lag=0, stopped=None, log_error=None, fatal_error=None, bindings=1234,
    ignored_events=0, skipped_records=0, reader_version=2, too_new_events="stop",
)  # fmt: skip
ANSWERS: dict[str, Any] = {
    "authorize": AuthorizeAnswer(results=[ALLOWED, DENIED, ALLOWED], offset=41),
    "byResourceType": [
        ByResourceTypeAnswer(result=ALLOWED, offset=1),
        ByResourceTypeAnswer(
            result=DENIED, offset=1, principal="User:x",
            reason=Reason(rule=DecisionRule.MATCHING_ACL, description="d", binding=B1),
        ),
    ],
    "offsetWait": OffsetWaitAnswer(offset=17, ready=True),
    "createAcls": CreateAclsAnswer(
        results=[CreateResult(binding=B1, error=None), CreateResult(binding=B2, error=REFUSED)],
        offset=5, records_written=1,
    ),
    "deleteAcls": DeleteAclsAnswer(
        results=[DeleteResult(filter=AclBindingFilter(), deleted=[B1, B2], error=None),
                 DeleteResult(filter=B1.to_filter(), deleted=[], error=REFUSED)],
        offset=6, records_written=2,
    ),
    "describeAcls": DescribeAclsAnswer(bindings=[B1, B2], offset=6),
    "status": STATUS,
    "error": ErrorAnswer(error="ClusterAuthorizationError", message="no", kafka_error_code=31),
}

ENDPOINTS: dict[str, Endpoint[Any, Any]] = {
    "authorize": endpoints.AUTHORIZE,
    "byResourceType": endpoints.AUTHORIZE_BY_RESOURCE_TYPE,
    "offsetWait": endpoints.WAIT_OFFSET,
    "createAcls": endpoints.CREATE_ACLS,
    "deleteAcls": endpoints.DELETE_ACLS,
    "describeAcls": endpoints.DESCRIBE_ACLS,
}
"""The request the harness made with Wire, by the endpoint it is for."""
METHODS = {"READYZ": "get", "STATUS": "get"}
"""How the plugin calls each of Wire's paths (``SidecarClient.get``); the others it POSTs."""


def _as_json(value: Any) -> Any:
    return [_as_json(v) for v in value] if isinstance(value, list) else value.to_json()


@pytest.fixture(scope="module")
def wire() -> dict[str, Any]:
    classpath = [*kafka_classpath(), plugin_jar()]
    build = compile_harness(HARNESS, classpath)
    stdin = json.dumps({name: _as_json(answer) for name, answer in ANSWERS.items()})
    out = run_harness(build, "io.aclstore.kafka.WireHarness", classpath, stdin=stdin, timeout=120,
                      jvm_options=SHORT_RUN_JVM_OPTIONS)
    return json.loads(out)  # type: ignore[no-any-return]


def _fields(b: AclBinding) -> list[str]:
    return [b.resource_type.name, b.name, b.pattern_type.name, b.principal, b.host,
            b.operation.name, b.permission_type.name]  # fmt: skip


def _filter_fields(f: AclBindingFilter) -> list[str | None]:
    pf, ef = f.pattern_filter, f.entry_filter
    return [pf.resource_type.name, pf.name, pf.pattern_type.name, ef.principal, ef.host,
            ef.operation.name, ef.permission_type.name]  # fmt: skip


def _outside_the_model(item: dict[str, Any]) -> bool:
    return item.get("operation") in NOT_IN_THE_STORE_MODEL


def test_every_path_the_plugin_calls_is_an_endpoint_of_the_document(wire: dict[str, Any]) -> None:
    assert wire["paths"], "the harness found no path in Wire"
    for name, path in wire["paths"].items():
        method = METHODS.get(name, "post")
        assert method in DOC["paths"].get(f"/{path}", {}), f"Wire.{name} = {path!r}: no {method} {path}"
    assert {f"/{wire['paths'][name]}" for name in ("AUTHORIZE", "OFFSET_WAIT")} == {
        ENDPOINTS["authorize"].path, ENDPOINTS["offsetWait"].path
    }


def test_every_request_the_plugin_writes_fits_the_schema_of_its_endpoint(wire: dict[str, Any]) -> None:
    """Field names, types and enum constants; only the known gap's constants are outside."""
    outside: set[str] = set()
    for kind, endpoint in ENDPOINTS.items():
        assert endpoint.request is not None
        schema = DOC["components"]["schemas"][shape(endpoint.request).name or ""]
        for made in wire["requests"][kind]:
            for problem in violations(made["body"], schema, DOC):
                where, _, what = problem.partition(": ")
                assert where.endswith(".operation") and what.startswith("'"), (kind, problem)
                outside.add(what.split("'")[1])
    assert outside == NOT_IN_THE_STORE_MODEL


def test_the_node_reads_each_request_as_the_kafka_values_it_was_made_of(wire: dict[str, Any]) -> None:
    requests = wire["requests"]
    [authorize] = requests["authorize"]
    read = AuthorizeRequest.from_json(authorize["body"])
    assert (read.principal, read.host) == (authorize["made of"]["principal"], authorize["made of"]["host"])
    assert [[a.operation.name, a.resource_type.name, a.name, a.log_if_allowed, a.log_if_denied]
            for a in read.actions] == authorize["made of"]["actions"]  # fmt: skip
    assert len(read.actions) == 12 * 6  # every decidable operation on every decidable type
    for made in requests["byResourceType"]:
        by_type = ByResourceTypeRequest.from_json(made["body"])
        assert [by_type.principal, by_type.host, by_type.operation.name,
                by_type.resource_type.name] == made["made of"]  # fmt: skip
    for made in requests["offsetWait"]:
        wait = OffsetWaitRequest.from_json(made["body"])
        assert [wait.after, wait.timeout_ms, wait.subscriber, wait.lease_ms] == made["made of"]
    [create] = requests["createAcls"]
    kept = [(b, m) for b, m in zip(create["body"]["bindings"], create["made of"], strict=True)
            if not _outside_the_model(b)]  # fmt: skip
    created = CreateAclsRequest.from_json({**create["body"], "bindings": [b for b, _ in kept]})
    assert [_fields(b) for b in created.items if isinstance(b, AclBinding)] == [m for _, m in kept]
    assert created.on_behalf_of is not None
    assert (created.on_behalf_of.principal, created.on_behalf_of.host) == ("User:alice", "10.0.0.1")
    [delete] = requests["deleteAcls"]
    kept = [(f, m) for f, m in zip(delete["body"]["filters"], delete["made of"], strict=True)
            if not _outside_the_model(f)]  # fmt: skip
    deleted = DeleteAclsRequest.from_json({**delete["body"], "filters": [f for f, _ in kept]})
    assert [_filter_fields(f) for f in deleted.filters] == [m for _, m in kept]
    assert deleted.on_behalf_of is not None and deleted.on_behalf_of.principal == "User:alice"
    for made in requests["describeAcls"]:
        if not _outside_the_model(made["body"]["filter"]):
            described = DescribeAclsRequest.from_json(made["body"])
            assert _filter_fields(described.acl_filter) == made["made of"]


def test_the_plugin_reads_each_answer_as_the_node_writes_it(wire: dict[str, Any]) -> None:
    """Every answer field Wire reads, against the values the answers were written from."""
    assert wire["read"] == {
        "authorize": {"allowed": [True, False, True], "offset": 41},
        "byResourceType": [True, False],
        "offsetWait": {"ready": True, "offset": 17},
        "createAcls": [
            {"failed": False},
            {"failed": True, "message": REFUSED.message, "kafkaErrorCode": 42},
        ],
        "deleteAcls": [
            {"failed": False, "deleted": [_fields(B1), _fields(B2)]},
            {"failed": True, "message": REFUSED.message, "kafkaErrorCode": 42, "deleted": []},
        ],
        "describeAcls": [_fields(B1), _fields(B2)],
        "status": 1234,
        "error": {"error": "ClusterAuthorizationError", "message": "no", "kafkaErrorCode": 31},
    }
