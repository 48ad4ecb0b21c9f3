"""The access-diff endpoints of the sidecar API, declared once (:mod:`replicator.contract.declare`).

The node answers them from its own index (:mod:`replicator.access`), so a client sends the
change or the target format, never the state:

* ``/v1/acls/dry-run``: the bindings ``creates`` would add and ``deletes`` would remove
  (DeleteAcls matching, against the state before), and the access that would widen and narrow;
* ``/v1/format/downgrade-check``: what a replica of event format ``to`` with
  ``too_new_events=ignore`` would decide differently from the live state.

A row of either answer is one symbolic set of requests (:class:`store.access_diff.AccessDelta`):
an operation on a resource type's name set, for a principal (or any principal but those named)
from a host (or any host but those named), with a witness request; ``widened`` and ``narrowed``
say which way it changed.
"""

from __future__ import annotations

from typing import Any, Final

from replicator.contract.bindings import BINDING, BINDING_OR_INVALID, FILTER, RESOURCE_NAME, InvalidItem
from replicator.contract.declare import Message, message, shape, wire
from replicator.contract.fields import ALL_OPS, ALL_TYPES, MAX_ITEMS, BadRequestError
from replicator.contract.kinds import (
    FLAG,
    INTEGER,
    LOG_OFFSET,
    NULLABLE_INTEGER,
    NULLABLE_TEXT,
    TEXT,
    TEXT_ITEM,
    Array,
    Converted,
    Integer,
    KafkaEnum,
)
from store.access_diff import AccessDelta, Change, NameSet, Request
from store.acl import AclBinding, AclBindingFilter, AclOperation, PatternType, ResourceType

_TEXTS: Final = Array(TEXT_ITEM)
_NAME_PATTERNS: Final = frozenset({PatternType.LITERAL, PatternType.PREFIXED})


@message("NameSet")
class NameSetJson(Message):
    """The resource names of a row: LITERAL exactly ``resourceName``... as ``name``; PREFIXED
    the names starting with ``name`` ("" every name) minus the carved-out names and prefixes."""

    pattern_type: PatternType = wire(KafkaEnum(PatternType, _NAME_PATTERNS, inline=True))
    name: str = wire(TEXT)
    except_names: list[str] = wire(_TEXTS, default_factory=list)
    except_prefixes: list[str] = wire(_TEXTS, default_factory=list)


@message("Witness")
class WitnessJson(Message):
    """One concrete request of the row's set, decided the other way after the change."""

    principal: str = wire(TEXT)
    host: str = wire(TEXT)
    operation: AclOperation = wire(KafkaEnum(AclOperation, ALL_OPS))
    resource_type: ResourceType = wire(KafkaEnum(ResourceType, ALL_TYPES))
    resource_name: str = wire(TEXT, name=RESOURCE_NAME)


@message("AccessDelta")
class AccessDeltaJson(Message):
    """One set of requests whose decision changes the same way (the list it is in says how)."""

    resource_type: ResourceType = wire(KafkaEnum(ResourceType, ALL_TYPES))
    names: NameSetJson = wire(shape(NameSetJson))
    operation: AclOperation = wire(KafkaEnum(AclOperation, ALL_OPS))
    principal: str = wire(TEXT, description='A principal, or "*": any principal.')
    principal_type: str | None = wire(
        NULLABLE_TEXT, default=None,
        description='With principal "*": only principals of this type (User); null: any type.',
    )  # fmt: skip
    principal_except: list[str] = wire(_TEXTS, default_factory=list)
    host: str = wire(TEXT, description='A host, or "*": any host.')
    host_except: list[str] = wire(_TEXTS, default_factory=list)
    witness: WitnessJson = wire(shape(WitnessJson))


def _delta_json(row: AccessDelta) -> AccessDeltaJson:
    w, n = row.witness, row.names
    return AccessDeltaJson(
        resource_type=row.resource_type,
        names=NameSetJson(pattern_type=n.pattern_type, name=n.name,
                          except_names=list(n.except_names), except_prefixes=list(n.except_prefixes)),
        operation=row.operation, principal=row.principal, principal_type=row.principal_type,
        principal_except=list(row.principal_except), host=row.host,
        host_except=list(row.host_except),
        witness=WitnessJson(principal=w.principal, host=w.host, operation=w.operation,
                            resource_type=w.resource_type, resource_name=w.resource_name),
    )  # fmt: skip


def _rows(change: Change) -> Converted[AccessDeltaJson, AccessDelta]:
    def decode(item: AccessDeltaJson, raw: Any) -> AccessDelta:
        n, w = item.names, item.witness
        return AccessDelta(
            change=change, resource_type=item.resource_type,
            names=NameSet(n.pattern_type, n.name, tuple(n.except_names), tuple(n.except_prefixes)),
            operation=item.operation, principal=item.principal, host=item.host,
            witness=Request(w.principal, w.host, w.operation, w.resource_type, w.resource_name),
            principal_except=tuple(item.principal_except), host_except=tuple(item.host_except),
            principal_type=item.principal_type,
        )  # fmt: skip

    return Converted(shape(AccessDeltaJson), decode, _delta_json)


_ROW: Final = _rows(Change.WIDENED)


def access_delta_json(row: AccessDelta) -> dict[str, Any]:
    """One row as the answers' ``widened`` and ``narrowed`` lists carry it (the list says
    which): for a writer that builds an answer's text in pieces."""
    return _ROW.write(row)  # type: ignore[no-any-return]


WIDENED: Final = Array(_rows(Change.WIDENED))
NARROWED: Final = Array(_rows(Change.NARROWED))
_BINDINGS: Final = Array(BINDING)


# --- a dry run ------------------------------------------------------------------------------------


@message("DryRunRequest", closed=True)
class DryRunRequest(Message):
    """``/v1/acls/dry-run``: the bindings to create and the filters to delete with; nothing is
    written.  At least one of them."""

    creates: list[AclBinding | InvalidItem] = wire(
        Array(BINDING_OR_INVALID, limit=MAX_ITEMS), default_factory=list
    )
    deletes: list[AclBindingFilter] = wire(Array(FILTER, limit=MAX_ITEMS), default_factory=list)
    min_offset: int | None = wire(
        LOG_OFFSET, default=None,
        description="Answer from a state that has applied at least this log offset (waits, bounded).",
    )  # fmt: skip

    def check(self, path: str) -> None:
        if not (self.creates or self.deletes):
            raise BadRequestError("a dry run needs creates or deletes: the change to judge")
        invalid = next((item for item in self.creates if isinstance(item, InvalidItem)), None)
        if invalid is not None:
            raise BadRequestError(f"creates: {invalid.message}")


@message("DryRunResponse")
class DryRunAnswer(Message):
    added: list[AclBinding] = wire(_BINDINGS, description="The creates not there already.")
    removed: list[AclBinding] = wire(
        _BINDINGS, description="The live bindings the deletes match, as DeleteAcls matches them."
    )
    widened: list[AccessDelta] = wire(WIDENED, description="Denied now, allowed after.")
    narrowed: list[AccessDelta] = wire(NARROWED, description="Allowed now, denied after.")
    offset: int = wire(INTEGER, description="Log offset of the state judged.")


# --- a format downgrade ---------------------------------------------------------------------------


@message("DowngradeCheckRequest", closed=True)
class DowngradeCheckRequest(Message):
    """``/v1/format/downgrade-check``: would a replica of event format ``to`` widen access?"""

    to: int = wire(
        Integer(minimum=1, what="must be an event format (integer >= 1)"),
        description="The event format of the older reader.",
    )  # fmt: skip
    min_offset: int | None = wire(LOG_OFFSET, default=None)


@message("DowngradeCheckResponse")
class DowngradeCheckAnswer(Message):
    safe: bool = wire(FLAG, description="No access would widen.")
    to: int = wire(INTEGER)
    ignored: list[AclBinding] = wire(
        _BINDINGS, description="The live bindings that reader cannot read, in DescribeAcls order."
    )
    stopping: int = wire(
        INTEGER, description="How many bindings a reader with too_new_events=stop would stop at."
    )
    widened: list[AccessDelta] = wire(WIDENED)
    narrowed: list[AccessDelta] = wire(NARROWED)
    offset: int = wire(INTEGER, description="Log offset of the state judged.")


# --- a walk's progress ----------------------------------------------------------------------------


@message("AnalysisProgress")
class AnalysisProgressAnswer(Message):
    """``/v1/analysis``: how far the walk of the node's analysis (a downgrade check, the
    format gate, a large dry run) has got; the last walk's figures when none runs."""

    running: bool = wire(FLAG, description="A walk runs now.")
    question: str | None = wire(
        NULLABLE_TEXT, default=None,
        description="downgrade_check, format_gate or dry_run; null before the first walk.",
    )  # fmt: skip
    read: int = wire(INTEGER, description="Bindings the walk has read.")
    total: int | None = wire(
        NULLABLE_INTEGER, default=None, description="Bindings it reads in all (null: not known yet)."
    )
    elapsed_ms: int = wire(INTEGER, description="Since the walk started (to its end, once ended).")


SAFE_HEADER: Final = "Aclstore-Safe"
"""A downgrade check's answer says ``safe`` in this header too (``true``/``false``), and
:data:`OFFSET_HEADER` its offset: a client that copies the body out as it reads it (the
CLI's ``--format json``) knows the verdict without parsing it."""
OFFSET_HEADER: Final = "Aclstore-Offset"

dry_run_request: Final = shape(DryRunRequest).parse
downgrade_check_request: Final = shape(DowngradeCheckRequest).parse
