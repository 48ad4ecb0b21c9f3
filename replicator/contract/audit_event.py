"""The audit event: one authorization decision as a CloudEvents 1.0 JSON record.

Its shape is declared, versioned, in ``schemas/audit_event_v1.json`` (JSON Schema) beside the
change-event schemas; :data:`EVENT_TYPE` carries the same version, so a consumer can tell a
later shape from this one.  ``data`` uses the API's field names (``resourceName``, ``reason``
as the authorize answers give it with ``explain``).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from json.encoder import encode_basestring_ascii
from typing import Any, Final

from replicator.contract.answers import reason_json
from replicator.contract.bindings import RESOURCE_NAME
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, Decision, DecisionRule

EVENT_TYPE: Final = "io.aclstore.authorization.decision.v1"
SPEC_VERSION: Final = "1.0"
SCHEMA_VERSION: Final = 1
SCHEMA_FILE: Final = f"audit_event_v{SCHEMA_VERSION}.json"
"""In the ``schemas`` package."""


def audit_event(
    *,
    event_id: str,
    source: str,
    time_ns: int,
    principal: str,
    host: str,
    action: Action,
    decision: Decision,
    offset: int,
) -> dict[str, Any]:
    """The event of one decision (``offset``: the replica offset the decision reflects)."""
    return {
        "specversion": SPEC_VERSION,
        "id": event_id,
        "source": source,
        "type": EVENT_TYPE,
        "time": event_time(time_ns),
        "datacontenttype": "application/json",
        "subject": principal,
        "data": {
            "principal": principal,
            "host": host,
            "operation": action.operation.name,
            "resourceType": action.resource_type.name,
            RESOURCE_NAME: action.name,
            "patternType": action.pattern_type.name,
            "result": decision.result.value,
            "reason": reason_json(decision),
            "offset": offset,
        },
    }


def encode_audit_event(event: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, as the audit topic carries it."""
    return json.dumps(event, separators=(",", ":")).encode("utf-8")


def event_time(time_ns: int) -> str:
    """The ``time`` attribute: UTC, microseconds."""
    return datetime.fromtimestamp(time_ns / 1e9, UTC).isoformat(timespec="microseconds")


def decision_names(action: Action, decision: Decision) -> list[Any]:
    """A decision as names, a list as JSON gives it back: [operation, resourceType,
    resourceName, patternType, result, rule, binding], the binding as [resourceType,
    resourceName, patternType, principal, host, operation, permissionType] or None."""
    # Dict lookups are cheaper than Enum.name; one dict per enum, as Kafka's enums are integers
    # (READ == DENY == 3 as dict keys).
    b = decision.binding
    return [
        _OPERATIONS[action.operation], _RESOURCE_TYPES[action.resource_type], action.name,
        _PATTERN_TYPES[action.pattern_type], decision.result.value, _RULES[decision.rule],
        None if b is None else [
            _RESOURCE_TYPES[b.resource_type], b.name, _PATTERN_TYPES[b.pattern_type],
            b.principal, b.host, _OPERATIONS[b.operation], _PERMISSIONS[b.permission_type],
        ],
    ]  # fmt: skip


class DecisionFragments:
    """A decision straight to its *fragment*: the text of the event's ``data`` fields that
    differ from one decision of a request to the next, from ``"operation"`` to ``"reason"``::

        "operation":"READ","resourceType":"TOPIC","resourceName":"t","patternType":"LITERAL",
        "result":"DENIED","reason":{...}

    For the request path: the spool keeps fragments, so the sender only puts ids and what the
    request's events share around them (:meth:`AuditEventEncoder.encode_fragments`).  Each
    reason is made once per rule, and once per binding object for the reasons that name a
    binding (the replica hands out the same object for a binding while it is cached).  Safe to
    share between threads: the cache only ever holds whole entries, and an entry is used only
    for the very object it was made from.  The text is ASCII JSON (a tab or newline in a name
    is escaped), so a raw tab or newline never occurs in it."""

    _MAX_BINDINGS: Final = 100_000

    def __init__(self) -> None:
        self._bindings: dict[int, tuple[AclBinding, DecisionRule, str]] = {}
        self._rules = {id(rule): _reason_json(rule.name, None) for rule in DecisionRule}

    def __call__(self, action: Action, decision: Decision) -> str:
        b = decision.binding
        if b is None:
            reason = self._rules[id(decision.rule)]
        else:
            hit = self._bindings.get(id(b))
            if hit is not None and hit[0] is b and hit[1] is decision.rule:
                reason = hit[2]
            else:
                if len(self._bindings) >= self._MAX_BINDINGS:
                    self._bindings = {}
                reason = _reason_json(decision.rule.name, _binding_names(b))
                self._bindings[id(b)] = (b, decision.rule, reason)
        # Enum names are ASCII identifiers: only the resource name needs escaping.  A member's
        # ``_name_`` is a plain attribute (``name`` is a descriptor, several times slower).
        return (
            f'"operation":"{action.operation._name_}",'
            f'"resourceType":"{action.resource_type._name_}",'
            f'"{RESOURCE_NAME}":{_json_string(action.name)},'
            f'"patternType":"{action.pattern_type._name_}",'
            f'"result":"{decision.result._name_}","reason":{reason}'
        )


def _binding_names(b: AclBinding) -> list[str]:
    return [
        _RESOURCE_TYPES[b.resource_type], b.name, _PATTERN_TYPES[b.pattern_type], b.principal,
        b.host, _OPERATIONS[b.operation], _PERMISSIONS[b.permission_type],
    ]  # fmt: skip


def _reason_json(rule: str, binding: Sequence[str] | None) -> str:
    """The ``reason`` object as compact JSON (as :func:`reason_json` gives it)."""
    reason: dict[str, Any] = {"rule": rule, "description": DecisionRule[rule].value}
    if binding is not None:
        reason["binding"] = dict(zip(_BINDING_FIELDS, binding, strict=True))
    return json.dumps(reason, separators=(",", ":"))


def _names(kind: type[enum.Enum]) -> dict[Any, str]:
    return {member: member.name for member in kind}


_OPERATIONS: Final = _names(AclOperation)
_RESOURCE_TYPES: Final = _names(ResourceType)
_PATTERN_TYPES: Final = _names(PatternType)
_PERMISSIONS: Final = _names(AclPermissionType)
_RULES: Final = _names(DecisionRule)


class AuditEventEncoder:
    """Encodes events straight to the bytes ``encode_audit_event(audit_event(...))`` gives.

    The audit sender's loop: no dict per event, the JSON of what a request's events share
    (source, time, principal, host, offset) made once, each event a join of byte strings
    around its fragment (:class:`DecisionFragments`).  Strings are escaped as
    :func:`json.dumps` escapes them (ASCII only).
    """

    _MAX_REASONS: Final = 10_000

    def __init__(self, source: str) -> None:
        self._source = _json_string(source)
        self._reasons: dict[tuple[str, tuple[str, ...] | None], str] = {}

    def encode(
        self,
        *,
        event_ids: Sequence[str],
        time_ns: int,
        principal: str,
        host: str,
        offset: int,
        decisions: Sequence[Sequence[Any]],
    ) -> list[bytes]:
        """One event per decision (as :func:`decision_names` gives it), all of one request."""
        return self.encode_fragments(
            event_ids=[_json_string(i)[1:-1].encode() for i in event_ids], time_ns=time_ns,
            principal_json=_json_string(principal).encode(), host_json=_json_string(host).encode(),
            offset=offset, fragments=[self.fragment(names).encode() for names in decisions],
        )  # fmt: skip

    def encode_fragments(
        self,
        *,
        event_ids: Sequence[bytes],
        time_ns: int,
        principal_json: bytes,
        host_json: bytes,
        offset: int,
        fragments: Sequence[bytes],
    ) -> list[bytes]:
        """One event per fragment, all of one request; ``event_ids`` already escaped as JSON
        string contents (without the quotes), ``principal_json`` and ``host_json`` JSON strings
        (with them)."""
        head = b"".join((
            f'","source":{self._source},"type":"{EVENT_TYPE}","time":"{event_time(time_ns)}",'
            '"datacontenttype":"application/json","subject":'.encode(),
            principal_json, b',"data":{"principal":', principal_json, b',"host":', host_json, b",",
        ))  # fmt: skip
        tail = b',"offset":%d}}' % int(offset)
        start = b'{"specversion":"' + SPEC_VERSION.encode() + b'","id":"'
        join = b"".join
        return [
            join((start, event_id, head, fragment, tail))
            for event_id, fragment in zip(event_ids, fragments, strict=True)
        ]

    def fragment(self, names: Sequence[Any]) -> str:
        """A decision as names (:func:`decision_names`, or as JSON gives them back) to the text
        :class:`DecisionFragments` makes of it."""
        op, rt, name, pt, result, rule, binding = names
        return (
            f'"operation":"{op}","resourceType":"{rt}","{RESOURCE_NAME}":{_json_string(name)},'
            f'"patternType":"{pt}","result":"{result}","reason":{self._reason(rule, binding)}'
        )

    def _reason(self, rule: str, binding: Sequence[str] | None) -> str:
        key = (rule, None if binding is None else tuple(binding))
        text = self._reasons.get(key)
        if text is None:
            if len(self._reasons) >= self._MAX_REASONS:
                self._reasons.clear()
            text = self._reasons[key] = _reason_json(rule, binding)
        return text


_BINDING_FIELDS: Final = (
    "resourceType", RESOURCE_NAME, "patternType", "principal", "host", "operation",
    "permissionType",
)  # fmt: skip
_json_string: Final = encode_basestring_ascii


def audit_event_schema() -> dict[str, Any]:
    """The declared schema of :data:`EVENT_TYPE` (``schemas/audit_event_v1.json``)."""
    text = (resources.files("schemas") / SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
