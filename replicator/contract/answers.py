"""Answers of the sidecar API: typed results to the JSON bodies the server sends.

Pure functions, no I/O.  Each endpoint's 200 body is built by one function here, so the server
never writes a field name of its own and the OpenAPI document (:mod:`replicator.contract.openapi`)
describes what these functions build.  Every answer about the store carries ``offset``: the log
offset it reflects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from replicator.contract.bindings import RESOURCE_NAME, InvalidItem, binding_json, filter_json
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
from store.authorizer import ALLOWED, Decision
from store.errors import KafkaErrorCode, StoreError
from store.kafka_apis import Check

if TYPE_CHECKING:  # a type only: the contract needs none of the replica at run time
    from replicator.replica import ReplicaStatus

DENIED_RESULT: Final = "DENIED"
INVALID_ACL_ERROR_CODE: Final = int(KafkaErrorCode.INVALID_REQUEST)
"""The code of a binding that cannot be built (an ANY/MATCH value), as ``CreateAcls`` answers."""


def reason_json(decision: Decision) -> dict[str, Any]:
    """Why: the decisive binding (MATCHING_ACL) or the rule (SUPER_USER, DEFAULT_DENY...)."""
    reason: dict[str, Any] = {"rule": decision.rule.name, "description": decision.rule.value}
    if decision.binding is not None:
        reason["binding"] = binding_json(decision.binding)
    return reason


def error_json(error: str, message: str, **extra: Any) -> dict[str, Any]:
    """The body of every 4xx/5xx answer (schema ``Error``)."""
    return {"error": error, "message": message, **extra}


def item_error_json(exc: StoreError | None) -> dict[str, Any] | None:
    """A per-item error of a batch (schema ``ItemError``), null when the item succeeded."""
    if exc is None:
        return None
    return {
        "error": type(exc).__name__,
        "message": exc.message,
        "kafkaErrorCode": int(exc.error_code),
    }


# --- decisions ----------------------------------------------------------------------------------


def authorize_answer(
    decisions: Sequence[Decision], offset: int, *, explain: bool, mapped_principal: str | None
) -> dict[str, Any]:
    """``/v1/authorize``: one result per action, in order.  ``mapped_principal`` is the
    principal a raw identity (TLS subject, Kerberos name) was mapped to, else None."""
    out: dict[str, Any] = {"results": [d.result.value for d in decisions], "offset": offset}
    if explain:
        out["reasons"] = [reason_json(d) for d in decisions]
    if mapped_principal is not None:
        out["principal"] = mapped_principal
    return out


def by_resource_type_answer(
    decision: Decision, offset: int, *, explain: bool, mapped_principal: str | None
) -> dict[str, Any]:
    """``/v1/authorize-by-resource-type`` (KIP-679)."""
    out: dict[str, Any] = {"result": decision.result.value, "offset": offset}
    if explain:
        out["reason"] = reason_json(decision)
    if mapped_principal is not None:
        out["principal"] = mapped_principal
    return out


def request_check_answer(
    *,
    api_key: int,
    api_name: str,
    steps: Sequence[Sequence[tuple[Check, Decision]]],
    offset: int,
    explain: bool,
    mapped_principal: str | None,
) -> dict[str, Any]:
    """``/v1/authorize-request``: the request is allowed when every step is; a step when any
    of its alternatives (``anyOf``) is."""
    out_steps = []
    for step in steps:
        checks = []
        for check, decision in step:
            item: dict[str, Any] = {
                "operation": check.operation.name,
                "resourceType": check.resource_type.name,
                RESOURCE_NAME: check.name,
                "result": decision.result.value,
            }
            if explain:
                item["reason"] = reason_json(decision)
            checks.append(item)
        allowed = any(c["result"] == ALLOWED.value for c in checks)
        out_steps.append({"result": ALLOWED.value if allowed else DENIED_RESULT, "anyOf": checks})
    overall = all(s["result"] == ALLOWED.value for s in out_steps)
    out: dict[str, Any] = {
        "result": ALLOWED.value if overall else DENIED_RESULT,
        "apiKey": api_key,
        "apiName": api_name,
        "steps": out_steps,
        "offset": offset,
    }
    if mapped_principal is not None:
        out["principal"] = mapped_principal
    return out


# --- ACL administration (KIP-140) -----------------------------------------------------------------


def create_acls_answer(
    items: Sequence[object], result: CreateAclsResult
) -> dict[str, Any]:
    """``/v1/acls``: one result per requested item, in order.  ``items`` are the parsed
    bindings; an :class:`InvalidItem` (an ANY/MATCH value) has its own error and was not sent
    to the store, the others take ``result.results`` in order."""
    out = _creation_results(items, result.results)
    return {"results": out, "offset": result.offset, "recordsWritten": result.records_written}


def _creation_results(items: Sequence[object], results: Sequence[AclCreationResult]) -> list[dict[str, Any]]:
    by_position = iter(results)
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, InvalidItem):
            error = {
                "error": "InvalidAclError",
                "message": item.message,
                "kafkaErrorCode": INVALID_ACL_ERROR_CODE,
            }
            out.append({"binding": item.raw, "error": error})
            continue
        created = next(by_position)
        out.append(
            {"binding": binding_json(created.binding), "error": item_error_json(created.error)}
        )
    return out


def describe_acls_answer(result: DescribeAclsResult) -> dict[str, Any]:
    """``/v1/acls/describe``: the matching bindings in DescribeAcls order."""
    return {"bindings": [binding_json(b) for b in result.bindings], "offset": result.offset}


def delete_acls_answer(result: DeleteAclsResult) -> dict[str, Any]:
    """``/v1/acls/delete``: one result per filter, with the bindings it deleted."""
    out = _deletion_results(result.results)
    return {"results": out, "offset": result.offset, "recordsWritten": result.records_written}


def _deletion_results(results: Sequence[AclDeletionResult]) -> list[dict[str, Any]]:
    return [
        {
            "filter": filter_json(item.filter),
            "deleted": [binding_json(b) for b in item.deleted],
            "error": item_error_json(item.error),
        }
        for item in results
    ]


def alter_acls_answer(creates: Sequence[object], result: AlterAclsResult) -> dict[str, Any]:
    """``/v1/acls/alter``: the delete results (one per filter), the create results (one per
    requested binding), the settings changed, and the one offset the batch ends at."""
    return {
        "deleteResults": _deletion_results(result.deleted),
        "createResults": _creation_results(creates, result.created),
        "configsChanged": list(result.configs_changed),
        "offset": result.offset,
        "recordsWritten": result.records_written,
    }


# --- configs (KIP-133) --------------------------------------------------------------------------------


def describe_configs_answer(result: DescribeConfigsResult) -> dict[str, Any]:
    configs = [
        {
            "name": e.name,
            "value": e.value,
            "isDefault": e.is_default,
            "isSensitive": e.is_sensitive,
            "isReadOnly": e.is_read_only,
            "doc": e.doc,
        }
        for e in result.entries
    ]
    return {"configs": configs, "offset": result.offset}


def alter_configs_answer(result: AlterConfigsResult) -> dict[str, Any]:
    return {
        "changed": list(result.changed),
        "validateOnly": result.validate_only,
        "offset": result.offset,
    }


# --- the node -------------------------------------------------------------------------------------------


def status_json(status: ReplicaStatus) -> dict[str, Any]:
    """``/v1/status`` and ``/readyz`` (schema ``ReplicaStatus``)."""
    stopped = status.stopped
    return {
        "ready": status.ready,
        "offset": status.offset,
        "timestampMs": status.timestamp_ms,
        "readyOffset": status.ready_offset,
        "logEndOffset": status.log_end_offset,
        "logEndAgeMs": status.log_end_age_ms,
        "lag": status.lag,
        "stopped": None
        if stopped is None
        else {"offset": stopped.offset, "reason": stopped.reason},
        "logError": status.log_error,
        "fatalError": status.fatal_error,
        "bindings": status.bindings,
        "ignoredEvents": status.ignored_events,
        "skippedRecords": status.skipped_records,
        "readerVersion": status.reader_version,
        "tooNewEvents": status.too_new_events,
    }


def offset_answer(offset: int, *, ready: bool) -> dict[str, Any]:
    """``/v1/offset/wait``: the applied offset now (above ``after`` unless the wait timed out)."""
    return {"offset": offset, "ready": ready}


def health_answer(fatal_error: str | None) -> dict[str, Any]:
    """``/healthz``: ``ok``, or ``failed`` with the replica's fatal error (a 503)."""
    if fatal_error is not None:
        return {"status": "failed", "error": fatal_error}
    return {"status": "ok"}
