"""The OpenAPI 3.1 document of the sidecar API, generated from the contract.

Every schema is derived from a declared message (:mod:`replicator.contract.requests`,
:mod:`replicator.contract.answers`, :mod:`replicator.contract.bindings`), enum values from
Kafka's enums (:mod:`store.acl`, :mod:`store.authorizer`), the paths and the schemas of their
bodies from :data:`~replicator.contract.endpoints.ENDPOINTS`.  ``replicator/openapi.json`` is
this document, written by ``python -m replicator.contract`` and compared with it by a test; the
node serves it at ``/openapi.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from replicator.contract import access, answers, bindings, listing, requests, scope
from replicator.contract.declare import Message, Schema, shape
from replicator.contract.endpoints import ENDPOINTS, Endpoint
from replicator.contract.kinds import KAFKA_ENUMS, RESULT, kafka_enum_schema

DOCUMENT_PATH: Final = Path(__file__).resolve().parents[1] / "openapi.json"
"""``replicator/openapi.json``, the checked-in copy for clients in other languages."""

COMPONENTS: Final[tuple[type[Message], ...]] = (
    answers.ErrorAnswer, requests.ActionJson, bindings.BindingJson, bindings.FilterJson,
    answers.Reason, requests.OnBehalfOf, answers.ItemError,
    requests.AuthorizeRequest, answers.AuthorizeAnswer,
    requests.OffsetWaitRequest, answers.OffsetWaitAnswer,
    requests.ByResourceTypeRequest, answers.ByResourceTypeAnswer,
    requests.RequestCheckRequest, answers.RequestCheckAnswer,
    requests.CreateAclsRequest, answers.CreateAclsAnswer,
    requests.DescribeAclsRequest, answers.DescribeAclsAnswer,
    listing.ListAclsRequest, listing.AclResourceLine, listing.AclListingEnd,
    requests.DeleteAclsRequest, answers.DeleteAclsAnswer,
    scope.ResourcePrefixJson, scope.ScopeJson, requests.AlterAclsRequest, answers.AlterAclsAnswer,
    requests.DescribeConfigsRequest, answers.DescribeConfigsAnswer,
    requests.AlterConfigsBody, answers.AlterConfigsAnswer,
    answers.ReplicaStatusAnswer, answers.HealthAnswer,
    access.NameSetJson, access.WitnessJson, access.AccessDeltaJson,
    access.DryRunRequest, access.DryRunAnswer,
    access.DowngradeCheckRequest, access.DowngradeCheckAnswer, access.AnalysisProgressAnswer,
)  # fmt: skip
"""The named messages, in the document's order (after the enums)."""


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _enums() -> dict[str, Schema]:
    out: dict[str, Schema] = {name: kafka_enum_schema(cls) for cls, (name, _) in KAFKA_ENUMS.items()}
    out["Result"] = {"type": "string", "enum": RESULT.values()}
    return out


def components() -> dict[str, Schema]:
    out = _enums()
    for cls in COMPONENTS:
        declared = shape(cls)
        if declared.name is None:
            raise TypeError(f"{cls.__name__} is not a named message")
        out[declared.name] = declared.definition()
    return out


def _named(cls: type[Message] | None) -> str:
    name = None if cls is None else shape(cls).name
    if name is None:
        raise TypeError(f"{cls} has no schema name")
    return name


# --- paths ----------------------------------------------------------------------------------------


def _json(schema: Schema, description: str) -> Schema:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(codes: dict[str, str]) -> Schema:
    return {code: _json(ref("Error"), text) for code, text in codes.items()}


_DECISION_ERRORS: Final = {
    "400": "Malformed JSON, unknown field, bad enum value or principal",
    "403": "Caller outside the authorize networks and not authenticated",
    "503": "Replica not ready (AuthorizerNotReadyException), stopped, or minOffset not reached in time",
}
_ADMIN_ERRORS: Final = {
    "400": "Malformed request",
    "401": "No credential: mutual TLS client certificate or Bearer token needed",
    "403": "ClusterAuthorizationError: the caller lacks the CLUSTER permission",
    "503": "The log did not acknowledge or answer in time",
}
_ADMIN_SECURITY: Final[list[dict[str, list[str]]]] = [{"bearer": []}, {"mutualTLS": []}]

_TEXT_BODY: Final[Schema] = {"text/plain": {"schema": {"type": "string"}}}

# name: (summary, status -> description, errors); each body is the endpoint's answer
_NODE_OPERATIONS: Final[dict[str, tuple[str, dict[str, str], dict[str, str]]]] = {
    "healthz": ("Liveness: 200 unless the replica failed",
                {"200": "alive", "503": "the replica failed"}, {}),
    "readyz": ("Readiness: 503 until the replica has caught up with the log end it saw at start",
               {"200": "ready", "503": "not ready"}, {}),
    "metrics": ("Prometheus figures", {"200": "text exposition format"}, {}),
    "openapi": ("This document", {"200": "OpenAPI 3.1"}, {}),
    "status": ("The replica's figures: offset, lag, stopped-at, counters", {"200": "OK"},
               {"403": "Caller outside the authorize networks"}),
}  # fmt: skip


def _node_operation(endpoint: Endpoint[Any, Any]) -> Schema:
    summary, codes, errors = _NODE_OPERATIONS[endpoint.name]
    responses: Schema = {}
    for code, text in codes.items():
        if endpoint.answer is not None:
            responses[code] = _json(ref(_named(endpoint.answer)), text)
        elif endpoint.name == "metrics":
            responses[code] = {"description": text, "content": _TEXT_BODY}
        else:
            responses[code] = _json({"type": "object"}, text)
    return {"summary": summary, "tags": ["node"], "responses": {**responses, **_errors(errors)}}


# name: (tag, summary, description); the bodies are the endpoint's request and answer
_API_OPERATIONS: Final[dict[str, tuple[str, str, str | None]]] = {
    "authorize": (
        "decisions", "Authorize actions (Authorizer.authorize, KIP-50)",
        "Results come in the order of the actions, with the log offset the "
        "answer reflects. Identities may be raw (TLS subject, Kerberos name).",
    ),
    "wait_offset": (
        "decisions", "Wait until the applied offset moves past a known one (a long-poll)",
        "Answers as soon as the replica has "
        "applied an offset above after, else after timeoutMs with the offset as it is. A broker "
        "plugin keeps one open to know at once when its cached decisions are out of date; with "
        "a subscriber and leaseMs it answers with the next offset before that is visible, and "
        "the replica waits for the acknowledgement (the next poll) or the lease's end.",
    ),
    "authorize_by_resource_type": (
        "decisions", "May the principal do the operation on some resource of the type (KIP-679)",
        None,
    ),
    "authorize_request": (
        "decisions", "Every ACL check one Kafka request needs, by API key",
        "Uses the API-key table of Kafka's authorization docs: e.g. "
        "PRODUCE with a transactionalId checks WRITE on the TRANSACTIONAL_ID and WRITE on each topic.",
    ),
    "create_acls": (
        "acls", "CreateAcls (KIP-140): one result per binding", None,
    ),
    "describe_acls": (
        "acls", "DescribeAcls (KIP-140) with a filter; no body lists every binding", None,
    ),
    "list_acls": (
        "acls", "DescribeAcls streamed: the union of the filters, as JSON lines, with the offset "
        "at the end",
        "The body (chunked, application/x-ndjson) is one AclResource line per resource pattern "
        "in DescribeAcls order (a pattern with many ACLs may take several lines in a row), then "
        "one AclListingEnd line with the log offset the listing reflects, at least the log end "
        "when it was asked. A failure once the 200 is sent is an Error line instead of the end "
        "line; a body without its end line failed too. No body lists every binding.",
    ),
    "delete_acls": (
        "acls", "DeleteAcls (KIP-140): one result per filter", None,
    ),
    "alter_acls": (
        "acls", "Deletes, creates and settings in one request, written as one batch (one offset)",
        "Deletes are matched against the state "
        "before the request, creates are checked against it less what this request deletes; "
        "a refused filter or binding is reported in its result, a refused setting refuses the "
        "whole request. history restore --apply uses it.",
    ),
    "describe_configs": (
        "configs", "DescribeConfigs of the store's settings (KIP-133); no body describes all",
        None,
    ),
    "alter_configs": (
        "configs", "AlterConfigs of the store's settings, validateOnly for a dry run (KIP-133)",
        None,
    ),
    "dry_run_acls": (
        "acls", "The access creating and deleting ACLs would widen and narrow; nothing is written",
        "The node judges the change against its own index (at least at the log end as of the "
        "request): creates that are live already are left out, deletes are matched as "
        "DeleteAcls matches them. Each row is a set of requests with a witness. Needs "
        "DESCRIBE on the CLUSTER.",
    ),
    "downgrade_check": (
        "configs", "Would a replica of an older event format widen access?",
        "What a replica of event format `to` with too_new_events=ignore would decide "
        "differently from the live state (KIP-290: an ignored PREFIXED DENY is a silent "
        "hole). Answered by processes of their own over the node's index, off the decision "
        "path. Needs DESCRIBE_CONFIGS on the CLUSTER. The answer's headers Aclstore-Safe and "
        "Aclstore-Offset repeat its verdict and offset, so that a client can copy the body "
        "out as it reads it.",
    ),
    "analysis_progress": (
        "configs", "How far the node's analysis walk has got",
        "The bindings read of the index's total by the walk that runs now (a downgrade "
        "check, the format gate, a large dry run), or by the last one. Needs DESCRIBE on the "
        "CLUSTER.",
    ),
}  # fmt: skip


def _answer(endpoint: Endpoint[Any, Any]) -> Schema:
    """The 200 of an endpoint: its answer, or for a streamed one each of its lines (or an
    Error line)."""
    if not endpoint.lines:
        return _json(ref(_named(endpoint.answer)), "OK")
    line = {"oneOf": [*(ref(_named(cls)) for cls in endpoint.lines), ref("Error")]}
    schema = {"description": "One JSON value per line", **line}
    return {
        "description": "OK: JSON lines, written as they are read (chunked)",
        "content": {listing.CONTENT_TYPE: {"schema": schema}},
    }


def operation(endpoint: Endpoint[Any, Any]) -> Schema:
    """The OpenAPI operation of one endpoint; a KeyError names an undocumented one."""
    if endpoint.name in _NODE_OPERATIONS:
        return _node_operation(endpoint)
    tag, summary, description = _API_OPERATIONS[endpoint.name]
    out: Schema = {"summary": summary, "tags": [tag]}
    if endpoint.request is not None:  # a GET takes none
        request = ref(_named(endpoint.request))
        out["requestBody"] = {"required": not endpoint.body_optional,
                              "content": {"application/json": {"schema": request}}}  # fmt: skip
    out["responses"] = {"200": _answer(endpoint),
                        **_errors(_DECISION_ERRORS if tag == "decisions" else _ADMIN_ERRORS)}  # fmt: skip
    if tag != "decisions":
        out["security"] = _ADMIN_SECURITY
    if description is not None:
        out["description"] = description
    return out


def openapi_document() -> dict[str, Any]:
    """The whole document, as a fresh JSON value."""
    paths: dict[str, Schema] = {}
    for endpoint in ENDPOINTS:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation(endpoint)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "aclstore sidecar API",
            "version": "1",
            "description": "Kafka ACL decisions from a local replica of an event-sourced ACL "
            "store, and the store's admin API (KIP-140 ACLs, KIP-133 configs). Every answer "
            "carries the log offset it reflects.",
        },
        "paths": paths,
        "components": {
            "schemas": components(),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "Token from admin.properties (aclstore.bearer.token)."},
                "mutualTLS": {"type": "mutualTLS", "description": "Client certificate; its "
                              "subject is mapped by ssl.principal.mapping.rules."},
            },
        },
    }


def openapi_bytes() -> bytes:
    """The document as ``replicator/openapi.json`` holds it (2-space indent, final newline)."""
    return (json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_document(path: Path = DOCUMENT_PATH) -> Path:
    path.write_bytes(openapi_bytes())
    return path
