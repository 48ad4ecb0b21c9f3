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
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule

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


class DecisionItems:
    """A decision straight to its spool *item*: the parts of its event that differ from one
    decision of a request to the next, joined by U+001F (shown as ``|``), which JSON text as it
    is written here (ASCII, control characters escaped) never holds raw::

        READ|TOPIC|LITERAL|DENIED|RESOURCE_HAS_ACLS|"t"

    the operation, resource type, pattern type and result by name, the reason by its rule's
    name or, when it names a binding, as its JSON object, then the resource name as a JSON
    string.  For the request path: a few dozen bytes where the event's JSON fields take a few
    hundred, so less to copy, check and write before the answer; the sender makes the JSON
    (:meth:`AuditEventEncoder.fragment_of_item`).  A reason that names a binding is made once
    per binding object (the replica hands out the same object for a binding while it is
    cached).  Safe to share between threads: the cache only ever holds whole entries, and an
    entry is used only for the very object it was made from.  The text is ASCII without raw
    control characters, so it holds no tab or newline either."""

    MAX_BINDINGS: Final = 4096
    """Binding objects whose reasons are kept (all of them dropped past it).  Each entry holds
    its binding, so the memo keeps alive the bindings the replica's cache has let go of: at
    100,000 a decision worker whose cache turned over held up to 100 MB more than its cache,
    growing at up to 25 MB a minute in the soak.  A few thousand hold a broker's hot bindings;
    a reason made again costs microseconds."""

    def __init__(self) -> None:
        self._bindings: dict[int, tuple[AclBinding, DecisionRule, str]] = {}

    def __call__(self, action: Action, decision: Decision) -> str:
        b = decision.binding
        if b is None:
            reason = decision.rule._name_
        else:
            hit = self._bindings.get(id(b))
            if hit is not None and hit[0] is b and hit[1] is decision.rule:
                reason = hit[2]
            else:
                if len(self._bindings) >= self.MAX_BINDINGS:
                    self._bindings = {}
                reason = _binding_reason(decision.rule, b)
                self._bindings[id(b)] = (b, decision.rule, reason)
        # Enum names are ASCII identifiers: only the resource name needs escaping.  A member's
        # ``_name_`` is a plain attribute (``name`` is a descriptor, several times slower).
        return (
            f"{action.operation._name_}\x1f{action.resource_type._name_}\x1f"
            f"{action.pattern_type._name_}\x1f{decision.result._name_}\x1f{reason}\x1f"
            f"{_json_string(action.name)}"
        )


def _binding_reason(rule: DecisionRule, b: AclBinding) -> str:
    """The ``reason`` object of a decision naming ``b``, as :func:`_reason_json` makes it: the
    JSON around each enum's name made once per member (:data:`_REASON_PARTS`), so only the
    three strings a binding holds are escaped here.  What a request whose sampled or first
    allow names a binding the memo does not hold pays for it (in the audit bench, about one a
    request): a third of what joining the reason from its seven names took."""
    p, e = b.pattern, b.entry
    heads, resource_types, pattern_types, operations, permissions = _REASON_PARTS
    return "".join((
        heads[rule], resource_types[p.resource_type], _json_string(p.name),
        pattern_types[p.pattern_type], _json_string(e.principal), ',"host":',
        _json_string(e.host), operations[e.operation], permissions[e.permission_type],
    ))  # fmt: skip


def _reason_json(rule: str, binding: Sequence[str] | None) -> str:
    """The ``reason`` object as compact JSON, as :func:`reason_json` gives it through
    ``json.dumps`` (ASCII, the same escapes), joined from its parts: a request whose decision
    names a binding the memo does not hold makes it on the request path, where building and
    dumping dictionaries took about twenty times as long."""
    head = '{"rule":' + _json_string(rule) + ',"description":' + _RULE_DESCRIPTIONS[rule]
    if binding is None:
        return head + "}"
    fields = ",".join([key + _json_string(value) for key, value in zip(_BINDING_KEYS, binding, strict=True)])
    return head + ',"binding":{' + fields + "}}"


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
    around its fragment (:meth:`fragment_of_item`).  Strings are escaped as
    :func:`json.dumps` escapes them (ASCII only).
    """

    _MAX_REASONS: Final = 10_000

    def __init__(self, source: str) -> None:
        self._source = _json_string(source)
        self._reasons: dict[tuple[str, tuple[str, ...] | None], str] = {}
        self._rule_reasons = {r.name.encode(): _reason_json(r.name, None).encode() for r in DecisionRule}

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
            offset=offset, fragments=[self.fragment_of_names(names) for names in decisions],
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

    def fragment_of_item(self, item: bytes) -> bytes:
        """A spool item (:class:`DecisionItems`) to its *fragment*: the event's ``data`` fields
        from ``"operation"`` to ``"reason"`` as :func:`encode_audit_event` writes them.  Raises
        ValueError for an item of other parts or unknown names."""
        op, rt, pt, result, reason, name = item.split(b"\x1f")
        # The JSON around the resource name, looked up by the names it holds: a name that is
        # no member of its enum finds none.
        head = _FRAGMENT_HEADS.get((op, rt))
        tail = _FRAGMENT_TAILS.get((pt, result))
        if reason[:1] != b"{":
            reason = self._rule_reasons.get(reason, b"")
        if head is None or tail is None or not reason or name[:1] != b'"':
            raise ValueError(f"an audit spool item of unknown names: {item[:80]!r}")
        return b"".join((head, name, tail, reason))

    def fragment_of_names(self, names: Sequence[Any]) -> bytes:
        """A decision as names (:func:`decision_names`, or as JSON gives them back) to its
        fragment, through its item: one way from a decision to its event's JSON."""
        return self.fragment_of_item(self.item(names).encode())

    def item(self, names: Sequence[Any]) -> str:
        """A decision as names (:func:`decision_names`, or as JSON gives them back) to its
        spool item (as :class:`DecisionItems` makes it of the decision)."""
        op, rt, name, pt, result, rule, binding = names
        reason = rule if binding is None else self._reason(rule, binding)
        return f"{op}\x1f{rt}\x1f{pt}\x1f{result}\x1f{reason}\x1f{_json_string(name)}"

    def _reason(self, rule: str, binding: Sequence[str] | None) -> str:
        key = (rule, None if binding is None else tuple(binding))
        text = self._reasons.get(key)
        if text is None:
            if len(self._reasons) >= self._MAX_REASONS:
                self._reasons.clear()
            text = self._reasons[key] = _reason_json(rule, binding)
        return text


_FRAGMENT_HEADS: Final = {
    (op.name.encode(), rt.name.encode()):
        f'"operation":"{op.name}","resourceType":"{rt.name}","{RESOURCE_NAME}":'.encode()
    for op in AclOperation for rt in ResourceType
}  # fmt: skip
"""A fragment's JSON before the resource name, by the item's operation and resource type."""
_FRAGMENT_TAILS: Final = {
    (pt.name.encode(), result.name.encode()):
        f',"patternType":"{pt.name}","result":"{result.name}","reason":'.encode()
    for pt in PatternType for result in AuthorizationResult
}  # fmt: skip
"""A fragment's JSON from after the resource name to the reason, by the item's pattern type
and result."""
_BINDING_FIELDS: Final = (
    "resourceType", RESOURCE_NAME, "patternType", "principal", "host", "operation",
    "permissionType",
)  # fmt: skip
_json_string: Final = encode_basestring_ascii
_BINDING_KEYS: Final = tuple(f"{_json_string(name)}:" for name in _BINDING_FIELDS)
_RULE_DESCRIPTIONS: Final = {rule.name: _json_string(rule.value) for rule in DecisionRule}
_REASON_PARTS: Final = (
    {r: f'{{"rule":{_json_string(r.name)},"description":{_RULE_DESCRIPTIONS[r.name]},"binding":{{'
     for r in DecisionRule},
    {t: f'"resourceType":{_json_string(t.name)},"{RESOURCE_NAME}":' for t in ResourceType},
    {t: f',"patternType":{_json_string(t.name)},"principal":' for t in PatternType},
    {o: f',"operation":{_json_string(o.name)},"permissionType":' for o in AclOperation},
    {t: f"{_json_string(t.name)}}}}}" for t in AclPermissionType},
)  # fmt: skip
"""The JSON of a binding's reason around its three strings (:func:`_binding_reason`), by rule,
resource type, pattern type, operation and permission type (one dict per enum: Kafka's enums
are integers, and READ == DENY == 3 as dict keys)."""


def audit_event_schema() -> dict[str, Any]:
    """The declared schema of :data:`EVENT_TYPE` (``schemas/audit_event_v1.json``)."""
    text = (resources.files("schemas") / SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
