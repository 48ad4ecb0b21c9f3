"""The OpenAPI 3.1 document of the sidecar API, generated from the contract.

Enum values come from Kafka's enums (:mod:`store.acl`, :mod:`store.authorizer`), the identity
fields from :class:`~replicator.contract.requests.IdentityKind`, the limits from
:mod:`replicator.contract.fields`, the paths from
:data:`~replicator.contract.endpoints.ENDPOINTS`; tests check that every request schema lists
exactly the fields its parser accepts.  ``replicator/openapi.json`` is this document, written by
``python -m replicator.contract`` and compared with it by a test; the node serves it at
``/openapi.json``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from replicator.contract.bindings import RESOURCE_NAME
from replicator.contract.endpoints import ENDPOINTS, Endpoint
from replicator.contract.fields import MAX_ACTIONS, MAX_ITEMS
from replicator.contract.requests import MAX_LEASE_MS, MAX_OFFSET_WAIT_MS, IdentityKind
from store.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import AuthorizationResult, DecisionRule

DOCUMENT_PATH: Final = Path(__file__).resolve().parents[1] / "openapi.json"
"""``replicator/openapi.json``, the checked-in copy for clients in other languages."""

Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _names(members: Iterable[enum.Enum]) -> list[str]:
    return [m.name for m in members if m.name != "UNKNOWN"]


def _defaulted(name: str, default: str) -> Schema:
    return {"allOf": [ref(name)], "default": default}


def _string(**extra: Any) -> Schema:
    return {"type": "string", **extra}


_NULLABLE_STRING: Final[Schema] = {"type": ["string", "null"]}
_INTEGER: Final[Schema] = {"type": "integer"}
_NULLABLE_INTEGER: Final[Schema] = {"type": ["integer", "null"]}
_BOOLEAN: Final[Schema] = {"type": "boolean"}


def _array(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", **({"maxItems": extra.pop("maxItems")} if "maxItems" in extra else {}),
            "items": items, **extra}  # fmt: skip


def _object(properties: Schema, *, required: Iterable[str] = (), closed: bool = False,
            **extra: Any) -> Schema:  # fmt: skip
    out: Schema = {"type": "object"}
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    out.update(extra)
    out["properties"] = properties
    return out


_ENUM_TEXT: Final = "Kafka names; any letter case and PascalCase (DescribeConfigs) are accepted."


def _enums() -> dict[str, Schema]:
    def kafka(name: str, cls: type[enum.Enum], what: str) -> tuple[str, Schema]:
        return name, {"type": "string", "enum": _names(cls), "description": f"{what}. {_ENUM_TEXT}"}

    return dict(
        [
            kafka("ResourceType", ResourceType, "Resource type"),
            kafka("AclOperation", AclOperation, "ACL operation"),
            kafka("AclPermissionType", AclPermissionType, "Permission type"),
            kafka("PatternType", PatternType, "Resource pattern type (KIP-290)"),
            ("Result", {"type": "string", "enum": [r.value for r in AuthorizationResult]}),
        ]
    )


_IDENTITY_DOCS: Final = {
    IdentityKind.PRINCIPAL: (
        "User:bob",
        "Kafka principal Type:name. Give exactly one of "
        + ", ".join(kind.value for kind in IdentityKind) + ".",
    ),
    IdentityKind.SSL_DISTINGUISHED_NAME: (
        "CN=bob,OU=ServiceUsers,O=Example",
        "TLS client subject; mapped by ssl.principal.mapping.rules to User:<name>.",
    ),
    IdentityKind.KERBEROS_PRINCIPAL: (
        "bob/host.example.com@EXAMPLE.COM",
        "Kerberos name; mapped by sasl.kerberos.principal.to.local.rules to User:<name>.",
    ),
}


def _decision_fields() -> Schema:
    """The fields every decision request shares: the identity, host, consistency, explain."""
    fields: Schema = {
        kind.value: _string(example=example, description=text)
        for kind, (example, text) in _IDENTITY_DOCS.items()
    }
    fields["host"] = _string(
        example="10.0.0.1", description="Client address text, compared exactly (no name resolution)."
    )
    fields["minOffset"] = {
        "type": "integer", "minimum": -1,
        "description": "Consistency token: answer only from a state that has applied at least "
        "this log offset (waits, bounded).",
    }  # fmt: skip
    fields["timeoutMs"] = {
        "type": "number", "minimum": 0, "maximum": 3_600_000,
        "description": "Bound of the minOffset wait (capped by the node's).",
    }  # fmt: skip
    fields["explain"] = {
        "type": "boolean", "default": False,
        "description": "Add the reason of each result (decisive binding or rule).",
    }  # fmt: skip
    return fields


def _shapes() -> dict[str, Schema]:
    """Errors, actions, bindings, filters and reasons: the shapes the endpoints share."""
    return {
        "Error": _object(
            {
                "error": _string(description="Error class, e.g. BadRequestError, ClusterAuthorizationError."),
                "message": _string(description="What was wrong, naming the value and the fix."),
                "kafkaErrorCode": {
                    "type": "integer", "description": "org.apache.kafka.common.protocol.Errors code."
                },
                "offset": {
                    "type": "integer", "description": "Offset reached, when a minOffset was not reached."
                },
            },
            required=("error", "message"),
        ),
        "Action": _object(
            {
                "operation": ref("AclOperation"),
                "resourceType": ref("ResourceType"),
                RESOURCE_NAME: _string(example="orders"),
                "patternType": _string(
                    enum=[PatternType.LITERAL.name],
                    description="Only LITERAL resources are authorized (Kafka's rule).",
                ),
                "logIfAllowed": {
                    "type": "boolean", "default": True,
                    "description": "Kafka's Action.logIfAllowed: false leaves an ALLOWED "
                    "result out of the audit trail.",
                },
                "logIfDenied": {
                    "type": "boolean", "default": True,
                    "description": "Kafka's Action.logIfDenied: false (a check that only "
                    "filters) leaves a DENIED result out of the audit trail.",
                },
            },
            required=("operation", "resourceType", RESOURCE_NAME), closed=True,
        ),
        "AclBinding": _object(
            {
                "resourceType": ref("ResourceType"),
                RESOURCE_NAME: _string(),
                "patternType": _defaulted("PatternType", PatternType.LITERAL.name),
                "principal": _string(example="User:bob"),
                "host": _string(default="*"),
                "operation": ref("AclOperation"),
                "permissionType": _defaulted("AclPermissionType", AclPermissionType.ALLOW.name),
            },
            required=("resourceType", RESOURCE_NAME, "principal", "operation"), closed=True,
        ),
        "AclBindingFilter": _object(
            {
                "resourceType": _defaulted("ResourceType", "ANY"),
                RESOURCE_NAME: dict(_NULLABLE_STRING),
                "patternType": _defaulted("PatternType", "ANY"),
                "principal": dict(_NULLABLE_STRING),
                "host": dict(_NULLABLE_STRING),
                "operation": _defaulted("AclOperation", "ANY"),
                "permissionType": _defaulted("AclPermissionType", "ANY"),
            },
            closed=True,
            description="KIP-140 filter: a missing or null field matches anything; '*' is a "
            "literal name. patternType MATCH finds every pattern that applies to the name.",
        ),
        "Reason": _object(
            {
                "rule": _string(enum=[rule.name for rule in DecisionRule]),
                "description": _string(),
                "binding": ref("AclBinding"),
            },
            required=("rule", "description"),
        ),
        "OnBehalfOf": _object(
            {"principal": _string(example="User:alice"), "host": _string(example="10.0.0.1")},
            required=("principal", "host"), closed=True,
            description="The Kafka client a broker's authorizer plugin acts for: the store "
            "checks and records it as the actor. The authenticated caller needs CLUSTER_ACTION "
            "on the CLUSTER (as a forwarding broker does, KIP-590).",
        ),
        "ItemError": {
            "type": ["object", "null"],
            "properties": {"error": _string(), "message": _string(), "kafkaErrorCode": dict(_INTEGER)},
        },
    }


def _decision_bodies() -> dict[str, Schema]:
    check = _object({
        "operation": ref("AclOperation"), "resourceType": ref("ResourceType"),
        RESOURCE_NAME: _string(), "result": ref("Result"), "reason": ref("Reason"),
    })  # fmt: skip
    return {
        "AuthorizeRequest": _object(
            {**_decision_fields(), "actions": _array(ref("Action"), maxItems=MAX_ACTIONS)},
            required=("host", "actions"), closed=True,
        ),
        "AuthorizeResponse": _object(
            {
                "results": _array(ref("Result"), description="One per action, in order."),
                "offset": {"type": "integer", "description": "Log offset the answer reflects."},
                "reasons": _array(ref("Reason")),
                "principal": _string(description="The mapped principal, when a raw identity was given."),
            },
            required=("results", "offset"),
        ),
        "OffsetWaitRequest": _object(
            {
                "after": {"type": "integer", "minimum": -1,
                          "description": "The applied offset the caller knows."},
                "timeoutMs": {"type": "number", "minimum": 0, "maximum": MAX_OFFSET_WAIT_MS,
                              "description": "How long to wait for the offset to move."},
                "subscriber": {"type": "string", "minLength": 1, "maxLength": 200,
                               "description": "Names a decision cache that holds a lease."},
                "leaseMs": {"type": "integer", "minimum": 0, "maximum": MAX_LEASE_MS,
                            "description": "The cache's lease from this poll on (0 ends it). "
                            "The replica makes no new offset visible until every live lease "
                            "acknowledged it (a poll naming it as after) or ran out."},
            },
            required=("after", "timeoutMs"), closed=True,
        ),
        "OffsetWaitResponse": _object(
            {"offset": {"type": "integer",
                        "description": "The applied offset: above after, unless the wait timed out."},
             "ready": dict(_BOOLEAN)},
            required=("offset", "ready"),
        ),
        "ByResourceTypeRequest": _object(
            {**_decision_fields(), "operation": ref("AclOperation"), "resourceType": ref("ResourceType")},
            required=("host", "operation", "resourceType"), closed=True,
        ),
        "ByResourceTypeResponse": _object(
            {"result": ref("Result"), "offset": dict(_INTEGER), "reason": ref("Reason"),
             "principal": _string()},
            required=("result", "offset"),
        ),
        "RequestCheckRequest": _object(
            {
                **_decision_fields(),
                "apiKey": {
                    "oneOf": [{"type": "integer"}, {"type": "string"}], "example": "PRODUCE",
                    "description": "Kafka API key number or name (PRODUCE, FETCH, JOIN_GROUP, ...).",
                },
                "topics": _array(_string()),
                "group": dict(_NULLABLE_STRING),
                "groups": _array(_string()),
                "transactionalId": dict(_NULLABLE_STRING),
                "idempotent": dict(_BOOLEAN),
                "follower": dict(_BOOLEAN),
                "autoCreate": dict(_BOOLEAN),
                "brokerConfigs": dict(_BOOLEAN),
            },
            required=("host", "apiKey"), closed=True,
        ),
        "RequestCheckResponse": _object(
            {
                "result": ref("Result"), "apiKey": dict(_INTEGER), "apiName": _string(),
                "offset": dict(_INTEGER), "principal": _string(),
                "steps": _array(_object({"result": ref("Result"), "anyOf": _array(check)})),
            },
            required=("result", "apiKey", "apiName", "steps", "offset"),
        ),
    }


def _admin_bodies() -> dict[str, Schema]:
    written = {"offset": dict(_INTEGER), "recordsWritten": dict(_INTEGER)}
    config_entry = _object({
        "name": _string(), "value": _string(), "isDefault": dict(_BOOLEAN),
        "isSensitive": dict(_BOOLEAN), "isReadOnly": dict(_BOOLEAN), "doc": _string(),
    })  # fmt: skip
    return {
        "CreateAclsRequest": _object(
            {"bindings": _array(ref("AclBinding"), maxItems=MAX_ITEMS),
             "onBehalfOf": ref("OnBehalfOf")},
            required=("bindings",), closed=True,
        ),
        "CreateAclsResponse": _object(
            {
                "results": _array(
                    _object({"binding": ref("AclBinding"), "error": ref("ItemError")}),
                    description="One per binding, in order (KIP-140: not transactional).",
                ),
                **written,
            },
            required=("results", "offset"),
        ),
        "DescribeAclsRequest": _object(
            {"filter": ref("AclBindingFilter"), "minOffset": {"type": "integer", "minimum": -1},
             "onBehalfOf": ref("OnBehalfOf")},
            closed=True,
        ),
        "DescribeAclsResponse": _object(
            {"bindings": _array(ref("AclBinding")), "offset": dict(_INTEGER)},
            required=("bindings", "offset"),
        ),
        "DeleteAclsRequest": _object(
            {"filters": _array(ref("AclBindingFilter"), maxItems=MAX_ITEMS),
             "onBehalfOf": ref("OnBehalfOf")},
            required=("filters",), closed=True,
        ),
        "DeleteAclsResponse": _object(
            {
                "results": _array(
                    _object({"filter": ref("AclBindingFilter"), "deleted": _array(ref("AclBinding")),
                             "error": ref("ItemError")}),
                    description="One per filter, matched against the state before the request.",
                ),
                **written,
            },
            required=("results", "offset"),
        ),
        "AlterAclsRequest": _object(
            {
                "deletes": _array(ref("AclBindingFilter"), maxItems=MAX_ITEMS),
                "creates": _array(ref("AclBinding"), maxItems=MAX_ITEMS),
                "configs": {
                    "type": "object", "additionalProperties": dict(_NULLABLE_STRING),
                    "description": "name -> value; null resets to the default.",
                },
            },
            closed=True,
        ),
        "AlterAclsResponse": _object(
            {
                "deleteResults": _array(
                    _object({"filter": ref("AclBindingFilter"), "deleted": _array(ref("AclBinding")),
                             "error": ref("ItemError")}),
                    description="One per filter, matched against the state before the request.",
                ),
                "createResults": _array(
                    _object({"binding": ref("AclBinding"), "error": ref("ItemError")}),
                    description="One per binding, in order.",
                ),
                "configsChanged": _array(_string()),
                **written,
            },
            required=("deleteResults", "createResults", "configsChanged", "offset"),
        ),
        "DescribeConfigsRequest": _object({"names": _array(_string())}, closed=True),
        "DescribeConfigsResponse": _object(
            {"offset": dict(_INTEGER), "configs": _array(config_entry)},
            required=("configs", "offset"),
        ),
        "AlterConfigsRequest": _object(
            {
                "configs": {
                    "type": "object", "additionalProperties": dict(_NULLABLE_STRING),
                    "example": {"allow.everyone.if.no.acl.found": "false"},
                    "description": "name -> value; null resets to the default.",
                },
                "validateOnly": {"type": "boolean", "default": False},
                "forceReason": {
                    "type": "string",
                    "description": "Force lowering acl.format.version although an older reader "
                    "would lose bindings or widen access; recorded with the actor in the log.",
                },
            },
            required=("configs",), closed=True,
        ),
        "AlterConfigsResponse": _object(
            {"changed": _array(_string()), "validateOnly": dict(_BOOLEAN), "offset": dict(_INTEGER)},
            required=("changed", "validateOnly", "offset"),
        ),
    }


def _status() -> Schema:
    return _object({
        "ready": dict(_BOOLEAN), "offset": dict(_INTEGER), "timestampMs": dict(_INTEGER),
        "readyOffset": dict(_INTEGER), "logEndOffset": dict(_INTEGER),
        "logEndAgeMs": dict(_INTEGER),
        "lag": {**_NULLABLE_INTEGER, "description": "null while the log end is not current "
                "(older than the refresh interval plus its timeout, or the log failing)"},
        "stopped": {"type": ["object", "null"]}, "logError": dict(_NULLABLE_STRING),
        "fatalError": dict(_NULLABLE_STRING), "bindings": dict(_INTEGER),
        "ignoredEvents": dict(_INTEGER), "skippedRecords": dict(_INTEGER),
        "readerVersion": dict(_INTEGER), "tooNewEvents": _string(),
    })  # fmt: skip


def components() -> dict[str, Schema]:
    return {**_enums(), **_shapes(), **_decision_bodies(), **_admin_bodies(),
            "ReplicaStatus": _status()}  # fmt: skip


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

_NODE_OPERATIONS: Final[dict[str, Schema]] = {
    "healthz": {
        "summary": "Liveness: 200 unless the replica failed",
        "responses": {"200": {"description": "alive"}, "503": {"description": "the replica failed"}},
    },
    "readyz": {
        "summary": "Readiness: 503 until the replica has caught up with the log end it saw at start",
        "responses": {"200": _json(ref("ReplicaStatus"), "ready"),
                      "503": _json(ref("ReplicaStatus"), "not ready")},
    },
    "metrics": {
        "summary": "Prometheus figures",
        "responses": {"200": {"description": "text exposition format",
                              "content": {"text/plain": {"schema": {"type": "string"}}}}},
    },
    "openapi": {
        "summary": "This document",
        "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1")},
    },
    "status": {
        "summary": "The replica's figures: offset, lag, stopped-at, counters",
        "responses": {"200": _json(ref("ReplicaStatus"), "OK"),
                      **_errors({"403": "Caller outside the authorize networks"})},
    },
}

# name: (tag, summary, request schema, body required, response schema, description)
_API_OPERATIONS: Final[dict[str, tuple[str, str, str, bool, str, str | None]]] = {
    "authorize": (
        "decisions", "Authorize actions (Authorizer.authorize, KIP-50)", "AuthorizeRequest", True,
        "AuthorizeResponse", "Results come in the order of the actions, with the log offset the "
        "answer reflects. Identities may be raw (TLS subject, Kerberos name).",
    ),
    "wait_offset": (
        "decisions", "Wait until the applied offset moves past a known one (a long-poll)",
        "OffsetWaitRequest", True, "OffsetWaitResponse", "Answers as soon as the replica has "
        "applied an offset above after, else after timeoutMs with the offset as it is. A broker "
        "plugin keeps one open to know at once when its cached decisions are out of date; with "
        "a subscriber and leaseMs it answers with the next offset before that is visible, and "
        "the replica waits for the acknowledgement (the next poll) or the lease's end.",
    ),
    "authorize_by_resource_type": (
        "decisions", "May the principal do the operation on some resource of the type (KIP-679)",
        "ByResourceTypeRequest", True, "ByResourceTypeResponse", None,
    ),
    "authorize_request": (
        "decisions", "Every ACL check one Kafka request needs, by API key", "RequestCheckRequest",
        True, "RequestCheckResponse", "Uses the API-key table of Kafka's authorization docs: e.g. "
        "PRODUCE with a transactionalId checks WRITE on the TRANSACTIONAL_ID and WRITE on each topic.",
    ),
    "create_acls": (
        "acls", "CreateAcls (KIP-140): one result per binding", "CreateAclsRequest", True,
        "CreateAclsResponse", None,
    ),
    "describe_acls": (
        "acls", "DescribeAcls (KIP-140) with a filter; no body lists every binding",
        "DescribeAclsRequest", False, "DescribeAclsResponse", None,
    ),
    "delete_acls": (
        "acls", "DeleteAcls (KIP-140): one result per filter", "DeleteAclsRequest", True,
        "DeleteAclsResponse", None,
    ),
    "alter_acls": (
        "acls", "Deletes, creates and settings in one request, written as one batch (one offset)",
        "AlterAclsRequest", True, "AlterAclsResponse", "Deletes are matched against the state "
        "before the request, creates are checked against it less what this request deletes; "
        "a refused filter or binding is reported in its result, a refused setting refuses the "
        "whole request. history restore --apply uses it.",
    ),
    "describe_configs": (
        "configs", "DescribeConfigs of the store's settings (KIP-133); no body describes all",
        "DescribeConfigsRequest", False, "DescribeConfigsResponse", None,
    ),
    "alter_configs": (
        "configs", "AlterConfigs of the store's settings, validateOnly for a dry run (KIP-133)",
        "AlterConfigsRequest", True, "AlterConfigsResponse", None,
    ),
}  # fmt: skip


def operation(endpoint: Endpoint) -> Schema:
    """The OpenAPI operation of one endpoint; a KeyError names an undocumented one."""
    if endpoint.name in _NODE_OPERATIONS:
        node = _NODE_OPERATIONS[endpoint.name]
        return {"summary": node["summary"], "tags": ["node"], "responses": node["responses"]}
    tag, summary, request, required, response, description = _API_OPERATIONS[endpoint.name]
    out: Schema = {
        "summary": summary,
        "tags": [tag],
        "requestBody": {"required": required,
                        "content": {"application/json": {"schema": ref(request)}}},
        "responses": {"200": _json(ref(response), "OK"),
                      **_errors(_DECISION_ERRORS if tag == "decisions" else _ADMIN_ERRORS)},
    }  # fmt: skip
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
