"""Answers of the sidecar API, declared once (:mod:`replicator.contract.declare`).

Each class is the 200 body of one endpoint (or the body of every error, :class:`ErrorAnswer`):
the server builds it from typed results with the functions here and writes it with
``to_json()``, the client reads it back with ``from_json()``, and the OpenAPI document
describes it.  Every answer about the store carries ``offset``: the log offset it reflects.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from replicator.contract.bindings import (
    BINDING,
    BINDING_OR_INVALID,
    FILTER,
    RESOURCE_NAME,
    InvalidItem,
)
from replicator.contract.declare import Message, message, shape, wire
from replicator.contract.fields import ALL_OPS, ALL_TYPES
from replicator.contract.kinds import (
    FLAG,
    INTEGER,
    NULLABLE_INTEGER,
    NULLABLE_TEXT,
    RESULT,
    STORE_OFFSET,
    TEXT,
    TEXT_ITEM,
    Array,
    Choice,
    Converted,
    KafkaEnum,
    Nullable,
)
from store.acl import AclBinding, AclBindingFilter, AclOperation, ResourceType
from store.authorizer import ALLOWED, DENIED, AuthorizationResult, Decision, DecisionRule
from store.errors import KafkaErrorCode, StoreError
from store.kafka_apis import Check
from store.settings import ConfigEntry

if TYPE_CHECKING:  # types only: the contract needs none of the replica or the admin at run time
    from replicator.replica import ReplicaStatus
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

DENIED_RESULT: Final = DENIED.value
_RESULT_OF: Final = operator.attrgetter("result")
INVALID_ACL_ERROR_CODE: Final = int(KafkaErrorCode.INVALID_REQUEST)
"""The code of a binding that cannot be built (an ANY/MATCH value), as ``CreateAcls`` answers."""

_TEXTS: Final = Array(TEXT_ITEM)


@message("Error")
class ErrorAnswer(Message):
    """The body of every 4xx/5xx answer."""

    error: str = wire(
        TEXT, description="Error class, e.g. BadRequestError, ClusterAuthorizationError."
    )
    message: str = wire(TEXT, description="What was wrong, naming the value and the fix.")
    kafka_error_code: int | None = wire(
        INTEGER, default=None, description="org.apache.kafka.common.protocol.Errors code."
    )
    offset: int | None = wire(
        INTEGER, default=None, description="Offset reached, when a minOffset was not reached."
    )


def error_json(error: str, message: str, **extra: int) -> dict[str, Any]:
    """The body of every 4xx/5xx answer (schema ``Error``); ``extra``: ``kafkaErrorCode``,
    ``offset``."""
    answer = ErrorAnswer(
        error=error, message=message, kafka_error_code=extra.pop("kafkaErrorCode", None),
        offset=extra.pop("offset", None),
    )  # fmt: skip
    if extra:
        raise TypeError(f"the Error answer has no field {sorted(extra)[0]}")
    return answer.to_json()


@message("ItemError", nullable=True)
class ItemError(Message):
    """A per-item error of a batch (null when the item succeeded)."""

    error: str = wire(TEXT)
    message: str = wire(TEXT)
    kafka_error_code: int = wire(INTEGER)

    @classmethod
    def of(cls, exc: StoreError) -> ItemError:
        return cls(error=type(exc).__name__, message=exc.message, kafka_error_code=int(exc.error_code))


def item_error_json(exc: StoreError | None) -> dict[str, Any] | None:
    """A per-item error of a batch (schema ``ItemError``), null when the item succeeded."""
    return None if exc is None else ItemError.of(exc).to_json()


_ITEM_ERROR: Final = Nullable(shape(ItemError))


# --- decisions ----------------------------------------------------------------------------------


@message("Reason")
class Reason(Message):
    """Why: the decisive binding (MATCHING_ACL) or the rule (SUPER_USER, DEFAULT_DENY...)."""

    rule: DecisionRule = wire(Choice(DecisionRule))
    description: str = wire(TEXT)
    binding: AclBinding | None = wire(BINDING, default=None)

    @classmethod
    def of(cls, decision: Decision) -> Reason:
        return cls(rule=decision.rule, description=decision.rule.value, binding=decision.binding)


_REASON: Final = shape(Reason)


def reason_json(decision: Decision) -> dict[str, Any]:
    return Reason.of(decision).to_json()


@message("AuthorizeResponse")
class AuthorizeAnswer(Message):
    results: list[AuthorizationResult] = wire(
        Array(RESULT), description="One per action, in order."
    )
    offset: int = wire(INTEGER, description="Log offset the answer reflects.")
    reasons: list[Reason] | None = wire(Array(_REASON), default=None)
    principal: str | None = wire(
        TEXT, default=None, description="The mapped principal, when a raw identity was given."
    )


def authorize_answer(
    decisions: Sequence[Decision], offset: int, *, explain: bool, mapped_principal: str | None
) -> dict[str, Any]:
    """``/v1/authorize``: one result per action, in order.  ``mapped_principal`` is the
    principal a raw identity (TLS subject, Kerberos name) was mapped to, else None."""
    return AuthorizeAnswer(
        results=list(map(_RESULT_OF, decisions)), offset=offset,
        reasons=[Reason.of(d) for d in decisions] if explain else None,
        principal=mapped_principal,
    ).to_json()  # fmt: skip


@message("ByResourceTypeResponse")
class ByResourceTypeAnswer(Message):
    result: AuthorizationResult = wire(RESULT)
    offset: int = wire(INTEGER)
    reason: Reason | None = wire(_REASON, default=None)
    principal: str | None = wire(TEXT, default=None)


def by_resource_type_answer(
    decision: Decision, offset: int, *, explain: bool, mapped_principal: str | None
) -> dict[str, Any]:
    """``/v1/authorize-by-resource-type`` (KIP-679)."""
    return ByResourceTypeAnswer(
        result=decision.result, offset=offset, reason=Reason.of(decision) if explain else None,
        principal=mapped_principal,
    ).to_json()  # fmt: skip


@message()
class CheckResult(Message):
    """One ACL check of a request-level check, and its result."""

    operation: AclOperation = wire(KafkaEnum(AclOperation, ALL_OPS))
    resource_type: ResourceType = wire(KafkaEnum(ResourceType, ALL_TYPES))
    resource_name: str = wire(TEXT, name=RESOURCE_NAME)
    result: AuthorizationResult = wire(RESULT)
    reason: Reason | None = wire(_REASON, default=None)


@message()
class StepResult(Message):
    """A step of a request-level check: allowed when any of its alternatives is."""

    result: AuthorizationResult = wire(RESULT)
    any_of: list[CheckResult] = wire(Array(shape(CheckResult)))


@message("RequestCheckResponse")
class RequestCheckAnswer(Message):
    result: AuthorizationResult = wire(RESULT)
    api_key: int = wire(INTEGER)
    api_name: str = wire(TEXT)
    steps: list[StepResult] = wire(Array(shape(StepResult)))
    offset: int = wire(INTEGER)
    principal: str | None = wire(TEXT, default=None)


def _either(results: Sequence[AuthorizationResult], combine: Any) -> AuthorizationResult:
    return ALLOWED if combine(r is ALLOWED for r in results) else DENIED


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
        checks = [
            CheckResult(
                operation=check.operation, resource_type=check.resource_type,
                resource_name=check.name, result=decision.result,
                reason=Reason.of(decision) if explain else None,
            )
            for check, decision in step
        ]  # fmt: skip
        out_steps.append(StepResult(result=_either([c.result for c in checks], any), any_of=checks))
    return RequestCheckAnswer(
        result=_either([s.result for s in out_steps], all), api_key=api_key, api_name=api_name,
        steps=out_steps, offset=offset, principal=mapped_principal,
    ).to_json()  # fmt: skip


@message("OffsetWaitResponse")
class OffsetWaitAnswer(Message):
    offset: int = wire(
        INTEGER, description="The applied offset: above after, unless the wait timed out."
    )
    ready: bool = wire(FLAG)


def offset_answer(offset: int, *, ready: bool) -> dict[str, Any]:
    """``/v1/offset/wait``: the applied offset now (above ``after`` unless the wait timed out)."""
    return OffsetWaitAnswer(offset=offset, ready=ready).to_json()


# --- ACL administration (KIP-140) -----------------------------------------------------------------

@message()
class CreateResult(Message):
    """One requested binding and its error (null: created, or there already)."""

    binding: AclBinding | InvalidItem = wire(BINDING_OR_INVALID)
    error: ItemError | None = wire(_ITEM_ERROR)


@message("CreateAclsResponse")
class CreateAclsAnswer(Message):
    """``offset`` and ``recordsWritten`` are None only in an answer a Kafka broker relayed
    (:mod:`replicator.client.kafka_acls`)."""

    results: list[CreateResult] = wire(
        Array(shape(CreateResult)),
        description="One per binding, in order (KIP-140: not transactional).",
    )  # fmt: skip
    offset: int | None = wire(STORE_OFFSET)
    records_written: int | None = wire(INTEGER, default=None)


def _creation_results(
    items: Sequence[AclBinding | InvalidItem], results: Sequence[AclCreationResult]
) -> list[CreateResult]:
    """One per requested item: an :class:`InvalidItem` (an ANY/MATCH value) has its own error
    and was not sent to the store, the others take ``results`` in order."""
    by_position = iter(results)
    out: list[CreateResult] = []
    for item in items:
        if isinstance(item, InvalidItem):
            invalid = ItemError(
                error="InvalidAclError", message=item.message,
                kafka_error_code=INVALID_ACL_ERROR_CODE,
            )  # fmt: skip
            out.append(CreateResult(binding=item, error=invalid))
            continue
        created = next(by_position)
        error = None if created.error is None else ItemError.of(created.error)
        out.append(CreateResult(binding=created.binding, error=error))
    return out


def create_acls_answer(
    items: Sequence[AclBinding | InvalidItem], result: CreateAclsResult
) -> dict[str, Any]:
    """``/v1/acls``: one result per requested item, in order."""
    return CreateAclsAnswer(
        results=_creation_results(items, result.results), offset=result.offset,
        records_written=result.records_written,
    ).to_json()  # fmt: skip


@message("DescribeAclsResponse")
class DescribeAclsAnswer(Message):
    bindings: list[AclBinding] = wire(Array(BINDING))
    offset: int | None = wire(STORE_OFFSET)


def describe_acls_answer(result: DescribeAclsResult) -> dict[str, Any]:
    """``/v1/acls/describe``: the matching bindings in DescribeAcls order."""
    return DescribeAclsAnswer(bindings=list(result.bindings), offset=result.offset).to_json()


@message()
class DeleteResult(Message):
    """One filter, the bindings it deleted, and its error (null: none)."""

    filter: AclBindingFilter = wire(FILTER)
    deleted: list[AclBinding] = wire(Array(BINDING))
    error: ItemError | None = wire(_ITEM_ERROR)


_DELETE_RESULTS: Final = Array(shape(DeleteResult))
_DELETE_TEXT: Final = "One per filter, matched against the state before the request."


@message("DeleteAclsResponse")
class DeleteAclsAnswer(Message):
    results: list[DeleteResult] = wire(_DELETE_RESULTS, description=_DELETE_TEXT)
    offset: int | None = wire(STORE_OFFSET)
    records_written: int | None = wire(INTEGER, default=None)


def _deletion_results(results: Sequence[AclDeletionResult]) -> list[DeleteResult]:
    return [
        DeleteResult(
            filter=item.filter, deleted=list(item.deleted),
            error=None if item.error is None else ItemError.of(item.error),
        )
        for item in results
    ]  # fmt: skip


def delete_acls_answer(result: DeleteAclsResult) -> dict[str, Any]:
    """``/v1/acls/delete``: one result per filter, with the bindings it deleted."""
    return DeleteAclsAnswer(
        results=_deletion_results(result.results), offset=result.offset,
        records_written=result.records_written,
    ).to_json()  # fmt: skip


@message("AlterAclsResponse")
class AlterAclsAnswer(Message):
    delete_results: list[DeleteResult] = wire(_DELETE_RESULTS, description=_DELETE_TEXT)
    create_results: list[CreateResult] = wire(
        Array(shape(CreateResult)), description="One per binding, in order."
    )
    configs_changed: list[str] = wire(_TEXTS)
    offset: int = wire(INTEGER)
    records_written: int | None = wire(INTEGER, default=None)


def alter_acls_answer(
    creates: Sequence[AclBinding | InvalidItem], result: AlterAclsResult
) -> dict[str, Any]:
    """``/v1/acls/alter``: the delete results (one per filter), the create results (one per
    requested binding), the settings changed, and the one offset the batch ends at."""
    return AlterAclsAnswer(
        delete_results=_deletion_results(result.deleted),
        create_results=_creation_results(creates, result.created),
        configs_changed=list(result.configs_changed), offset=result.offset,
        records_written=result.records_written,
    ).to_json()  # fmt: skip


# --- configs (KIP-133) --------------------------------------------------------------------------------


@message()
class ConfigEntryJson(Message):
    """A described setting as the wire has it; read into :class:`store.settings.ConfigEntry`."""

    name: str = wire(TEXT)
    value: str = wire(TEXT)
    is_default: bool = wire(FLAG)
    is_sensitive: bool = wire(FLAG)
    is_read_only: bool = wire(FLAG)
    doc: str = wire(TEXT)


def _entry(item: ConfigEntryJson, raw: Any) -> ConfigEntry:
    return ConfigEntry(
        name=item.name, value=item.value, is_default=item.is_default,
        is_sensitive=item.is_sensitive, is_read_only=item.is_read_only, doc=item.doc,
    )  # fmt: skip


def _entry_json(e: ConfigEntry) -> ConfigEntryJson:
    return ConfigEntryJson(
        name=e.name, value=e.value, is_default=e.is_default, is_sensitive=e.is_sensitive,
        is_read_only=e.is_read_only, doc=e.doc,
    )  # fmt: skip


@message("DescribeConfigsResponse")
class DescribeConfigsAnswer(Message):
    configs: list[ConfigEntry] = wire(
        Array(Converted(shape(ConfigEntryJson), _entry, _entry_json))
    )
    offset: int = wire(INTEGER)


def describe_configs_answer(result: DescribeConfigsResult) -> dict[str, Any]:
    return DescribeConfigsAnswer(configs=list(result.entries), offset=result.offset).to_json()


@message("AlterConfigsResponse")
class AlterConfigsAnswer(Message):
    changed: list[str] = wire(_TEXTS)
    validate_only: bool = wire(FLAG)
    offset: int = wire(INTEGER)


def alter_configs_answer(result: AlterConfigsResult) -> dict[str, Any]:
    return AlterConfigsAnswer(
        changed=list(result.changed), validate_only=result.validate_only, offset=result.offset
    ).to_json()


# --- the node -------------------------------------------------------------------------------------------


@message()
class StoppedAt(Message):
    """Where and why the replica stopped: the first record it could not apply."""

    offset: int = wire(INTEGER)
    reason: str = wire(TEXT)


@message("ReplicaStatus")
class ReplicaStatusAnswer(Message):
    """``/v1/status`` and ``/readyz``: the replica's figures."""

    ready: bool = wire(FLAG)
    offset: int = wire(INTEGER)
    timestamp_ms: int = wire(INTEGER)
    ready_offset: int = wire(INTEGER)
    log_end_offset: int = wire(INTEGER)
    log_end_age_ms: int = wire(INTEGER)
    lag: int | None = wire(
        NULLABLE_INTEGER,
        description="null while the log end is not current (older than the refresh interval "
        "plus its timeout, or the log failing)",
    )  # fmt: skip
    stopped: StoppedAt | None = wire(Nullable(shape(StoppedAt)))
    log_error: str | None = wire(NULLABLE_TEXT)
    fatal_error: str | None = wire(NULLABLE_TEXT)
    storage_error: str | None = wire(
        NULLABLE_TEXT, default=None,
        description="why the node cannot write its local files (the index or the audit spool: "
        "their file system is full), naming the directory and the fix; /readyz answers 503 "
        "while it is set",
    )  # fmt: skip
    bindings: int = wire(INTEGER)
    ignored_events: int = wire(INTEGER)
    skipped_records: int = wire(INTEGER)
    reader_version: int = wire(INTEGER)
    too_new_events: str = wire(TEXT)

    @classmethod
    def of(cls, status: ReplicaStatus, storage_error: str | None = None) -> ReplicaStatusAnswer:
        """``storage_error``: a problem of the node's other files (the audit spool), said
        before the replica's own."""
        stopped = status.stopped
        return cls(
            ready=status.ready, offset=status.offset, timestamp_ms=status.timestamp_ms,
            ready_offset=status.ready_offset, log_end_offset=status.log_end_offset,
            log_end_age_ms=status.log_end_age_ms, lag=status.lag,
            stopped=None if stopped is None else StoppedAt(offset=stopped.offset, reason=stopped.reason),
            log_error=status.log_error, fatal_error=status.fatal_error,
            storage_error=storage_error or status.storage_error, bindings=status.bindings,
            ignored_events=status.ignored_events, skipped_records=status.skipped_records,
            reader_version=status.reader_version, too_new_events=status.too_new_events,
        )  # fmt: skip


def status_json(status: ReplicaStatus, storage_error: str | None = None) -> dict[str, Any]:
    """``/v1/status`` and ``/readyz`` (schema ``ReplicaStatus``)."""
    return ReplicaStatusAnswer.of(status, storage_error).to_json()


@message("Health")
class HealthAnswer(Message):
    """``/healthz``: ``ok``, or ``failed`` with the replica's fatal error (a 503)."""

    status: str = wire(TEXT, description="ok, or failed (the replica failed: a 503).")
    error: str | None = wire(TEXT, default=None, description="The replica's fatal error.")


def health_answer(fatal_error: str | None) -> dict[str, Any]:
    """``/healthz``: ``ok``, or ``failed`` with the replica's fatal error (a 503)."""
    if fatal_error is not None:
        return HealthAnswer(status="failed", error=fatal_error).to_json()
    return HealthAnswer(status="ok").to_json()
