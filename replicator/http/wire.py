"""JSON <-> domain values for the sidecar API: pure functions, no I/O.

Every parser takes the decoded JSON value and returns typed requests from :mod:`store.acl` and
:mod:`store.authorizer`, or raises :class:`BadRequestError` whose message names the field (as a
JSON path such as ``actions[2].operation``), the offending value and what would be accepted.
Enum names are accepted as Kafka's ``fromString`` reads them (any letter case, ``DescribeConfigs``
or ``DESCRIBE_CONFIGS``); a name Kafka does not know is a 400, never ``UNKNOWN``: a typo in a
request must not silently become a different question.

Field names follow KIP-290's change notification (``resourceType``, ``patternType``) and
KIP-140's describe filters; bindings use ``resourceName`` like the authorize actions.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.authorizer import Action, Decision
from store.errors import InvalidRequestError, StoreError
from store.principal import KafkaPrincipal

MAX_ACTIONS: Final = 10_000
"""Actions in one authorize request; a broker batches per request, far below this."""
MAX_ITEMS: Final = 10_000
"""Bindings or filters in one admin request."""

E = TypeVar("E", bound=enum.IntEnum)


class BadRequestError(InvalidRequestError):
    """The request body is not what the endpoint accepts (HTTP 400)."""


class IdentityKind(enum.Enum):
    """How the caller named the identity to authorize."""

    PRINCIPAL = "principal"
    """``Type:name`` as Kafka's ACLs store it."""
    SSL_DISTINGUISHED_NAME = "sslDistinguishedName"
    """A TLS client certificate's subject, mapped by ``ssl.principal.mapping.rules``."""
    KERBEROS_PRINCIPAL = "kerberosPrincipal"
    """A Kerberos name, mapped by ``sasl.kerberos.principal.to.local.rules``."""


@dataclass(frozen=True, slots=True)
class Identity:
    """The identity of an authorize request, before principal mapping."""

    kind: IdentityKind
    text: str


@dataclass(frozen=True, slots=True)
class AuthorizeRequest:
    identity: Identity
    host: str
    actions: list[Action]
    min_offset: int | None
    explain: bool
    timeout_s: float | None


@dataclass(frozen=True, slots=True)
class ByResourceTypeRequest:
    identity: Identity
    host: str
    operation: AclOperation
    resource_type: ResourceType
    min_offset: int | None
    explain: bool
    timeout_s: float | None


@dataclass(frozen=True, slots=True)
class RequestCheckRequest:
    """A request-level check: every ACL check the Kafka request ``api_key`` needs."""

    identity: Identity
    host: str
    api_key: int
    topics: tuple[str, ...]
    group: str | None
    groups: tuple[str, ...]
    transactional_id: str | None
    idempotent: bool
    follower: bool
    auto_create: bool
    broker_configs: bool
    min_offset: int | None
    explain: bool
    timeout_s: float | None


@dataclass(frozen=True, slots=True)
class InvalidItem:
    """A binding that cannot even be built (an ANY/MATCH value): its per-item error (KIP-140)."""

    message: str
    raw: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DescribeAclsRequest:
    acl_filter: AclBindingFilter
    min_offset: int | None


@dataclass(frozen=True, slots=True)
class AlterConfigsRequest:
    configs: dict[str, str | None]
    validate_only: bool


# --- JSON -------------------------------------------------------------------------------------


def parse_json(body: bytes) -> Any:
    """Decode a UTF-8 JSON body; the error names the line and column."""
    if not body.strip():
        raise BadRequestError("the request body is empty; send a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequestError(f"the request body is not UTF-8 (byte {exc.start})") from exc
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise BadRequestError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise BadRequestError("malformed JSON: nested too deeply") from exc


def _refuse_constant(name: str) -> Any:
    raise BadRequestError(f"malformed JSON: {name} is not a JSON value")


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# --- fields -----------------------------------------------------------------------------------


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def obj(value: Any, path: str, known: frozenset[str]) -> Mapping[str, Any]:
    """A JSON object with only ``known`` keys (an unknown key is a typo, refused by name)."""
    if not isinstance(value, dict):
        raise BadRequestError(f"{path or 'the body'} must be a JSON object, got {_show(value)}")
    unknown = value.keys() - known
    if unknown:
        where = f"{path}." if path else ""
        raise BadRequestError(
            f"unknown field {where}{sorted(unknown)[0]}; known fields: {', '.join(sorted(known))}"
        )
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def text(data: Mapping[str, Any], key: str, path: str, *, default: str | None = None) -> str:
    value = data.get(key, default)
    if value is None:
        raise BadRequestError(f"{_join(path, key)} is required (a string)")
    if not isinstance(value, str):
        raise BadRequestError(f"{_join(path, key)} must be a string, got {_show(value)}")
    return value


def optional_text(data: Mapping[str, Any], key: str, path: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequestError(f"{_join(path, key)} must be a string or null, got {_show(value)}")
    return value


def flag(data: Mapping[str, Any], key: str, path: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise BadRequestError(f"{_join(path, key)} must be true or false, got {_show(value)}")
    return value


def array(data: Mapping[str, Any], key: str, path: str, *, limit: int = MAX_ITEMS) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise BadRequestError(f"{_join(path, key)} must be a JSON array, got {_show(value)}")
    if len(value) > limit:
        raise BadRequestError(
            f"{_join(path, key)} has {len(value)} items; at most {limit} per request"
        )
    return value


def texts(data: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    if data.get(key) is None:
        return ()
    items = array(data, key, path)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise BadRequestError(f"{_join(path, key)}[{i}] must be a string, got {_show(item)}")
    return tuple(items)


def min_offset(data: Mapping[str, Any], path: str = "") -> int | None:
    """``minOffset``: the log offset the answer must reflect at least (a consistency token)."""
    value = data.get("minOffset")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value < 2**63:
        raise BadRequestError(
            f"{_join(path, 'minOffset')} must be a log offset (integer >= -1), got {_show(value)}"
        )
    return value


def timeout_s(data: Mapping[str, Any]) -> float | None:
    """``timeoutMs``: how long a ``minOffset`` wait may take (capped by the replica's bound)."""
    value = data.get("timeoutMs")
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 3_600_000:
        raise BadRequestError(f"timeoutMs must be milliseconds in [0, 3600000], got {_show(value)}")
    return float(value) / 1000.0


def _enum_names(cls: type[E], allowed: frozenset[E]) -> str:
    return ", ".join(member.name for member in cls if member in allowed)


def enum_value(cls: type[E], value: Any, path: str, allowed: frozenset[E]) -> E:
    """Parse a Kafka enum name (any case; PascalCase too) that must be one of ``allowed``."""
    label = _LABELS[cls]
    if not isinstance(value, str):
        raise BadRequestError(
            f"{path} must be {label} name ({_enum_names(cls, allowed)}), got {_show(value)}"
        )
    member = _FAST[cls].get(value)
    if member is None:
        member = _parse_name(cls, value)
    if member is None or member not in allowed:
        hint = "" if member is None else f" accepted here ({member.name} is not)"
        raise BadRequestError(
            f"{path}: {_show(value)} is not {label}{hint}; use one of {_enum_names(cls, allowed)}"
        )
    return member


def _parse_name(cls: type[E], value: str) -> E | None:
    # Kafka's PatternType.fromString is case-sensitive; kafka-acls.sh and this API are not.
    found: Any = (
        PatternType.__members__.get(value.upper()) if cls is PatternType else cls.parse(value)  # type: ignore[attr-defined]
    )
    if found is None or found.name == "UNKNOWN":
        return None
    return found  # type: ignore[no-any-return]


_LABELS: dict[type[Any], str] = {
    ResourceType: "a resource type",
    AclOperation: "an operation",
    AclPermissionType: "a permission type",
    PatternType: "a pattern type",
}
_FAST: dict[type[Any], dict[str, Any]] = {
    cls: {member.name: member for member in cls} for cls in _LABELS
}

_SPECIFIC_TYPES = frozenset(
    t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN)
)
_SPECIFIC_OPS = frozenset(
    o for o in AclOperation if o not in (AclOperation.ANY, AclOperation.UNKNOWN)
)
_SPECIFIC_PERMS = frozenset({AclPermissionType.ALLOW, AclPermissionType.DENY})
_ALL_TYPES = frozenset(t for t in ResourceType if t is not ResourceType.UNKNOWN)
_ALL_OPS = frozenset(o for o in AclOperation if o is not AclOperation.UNKNOWN)
_ALL_PERMS = frozenset(p for p in AclPermissionType if p is not AclPermissionType.UNKNOWN)
_ALL_PATTERNS = frozenset(p for p in PatternType if p is not PatternType.UNKNOWN)
_LITERAL_ONLY = frozenset({PatternType.LITERAL})


# --- identities and actions -----------------------------------------------------------------

_IDENTITY_KEYS = tuple(kind.value for kind in IdentityKind)


def identity(data: Mapping[str, Any]) -> Identity:
    """Exactly one of ``principal``, ``sslDistinguishedName`` or ``kerberosPrincipal``."""
    given = [key for key in _IDENTITY_KEYS if data.get(key) is not None]
    if len(given) != 1:
        raise BadRequestError(
            'give exactly one identity: principal ("User:bob"), sslDistinguishedName '
            f'("CN=bob,OU=...") or kerberosPrincipal ("bob/host@REALM"); got {given or "none"}'
        )
    key = given[0]
    value = text(data, key, "")
    kind = IdentityKind(key)
    if kind is IdentityKind.PRINCIPAL:
        check_principal(value, "principal")
    return Identity(kind, value)


def check_principal(value: str, path: str) -> KafkaPrincipal:
    try:
        return KafkaPrincipal.parse(value)
    except StoreError as exc:
        raise BadRequestError(f'{path}: {exc.message} (for example "User:bob")') from exc


_ACTION_KEYS = frozenset({"operation", "resourceType", "resourceName", "patternType"})
_AUTHORIZE_KEYS = frozenset(
    {*_IDENTITY_KEYS, "host", "actions", "minOffset", "explain", "timeoutMs"}
)


def action(value: Any, path: str) -> Action:
    data = obj(value, path, _ACTION_KEYS)
    operation = enum_value(AclOperation, data.get("operation"), f"{path}.operation", _SPECIFIC_OPS)
    resource_type = enum_value(
        ResourceType, data.get("resourceType"), f"{path}.resourceType", _SPECIFIC_TYPES
    )
    name = text(data, "resourceName", path)
    if data.get("patternType") is not None:
        enum_value(PatternType, data["patternType"], f"{path}.patternType", _LITERAL_ONLY)
    return Action(operation, resource_type, name)


def authorize_request(body: Any) -> AuthorizeRequest:
    data = obj(body, "", _AUTHORIZE_KEYS)
    items = array(data, "actions", "", limit=MAX_ACTIONS)
    actions = [action(item, f"actions[{i}]") for i, item in enumerate(items)]
    return AuthorizeRequest(
        identity(data),
        text(data, "host", ""),
        actions,
        min_offset(data),
        flag(data, "explain", ""),
        timeout_s(data),
    )


_BY_TYPE_KEYS = frozenset(
    {*_IDENTITY_KEYS, "host", "operation", "resourceType", "minOffset", "explain", "timeoutMs"}
)


def by_resource_type_request(body: Any) -> ByResourceTypeRequest:
    data = obj(body, "", _BY_TYPE_KEYS)
    return ByResourceTypeRequest(
        identity(data),
        text(data, "host", ""),
        enum_value(AclOperation, data.get("operation"), "operation", _SPECIFIC_OPS),
        enum_value(ResourceType, data.get("resourceType"), "resourceType", _SPECIFIC_TYPES),
        min_offset(data),
        flag(data, "explain", ""),
        timeout_s(data),
    )


_REQUEST_CHECK_KEYS = frozenset(
    {*_IDENTITY_KEYS, "host", "apiKey", "topics", "group", "groups", "transactionalId",
     "idempotent", "follower", "autoCreate", "brokerConfigs", "minOffset", "explain", "timeoutMs"}
)  # fmt: skip


def api_key(value: Any, names: Mapping[str, int]) -> int:
    """A Kafka API key as its number (0) or its name (``PRODUCE``, ``Produce``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        key = names.get(value.upper().replace("-", "_"))
        if key is None and value.isdigit():
            key = int(value)
        if key is not None:
            return key
    known = ", ".join(sorted(names, key=names.__getitem__))
    raise BadRequestError(
        f"apiKey: {_show(value)} is not a Kafka API key; use a number or one of {known}"
    )


def request_check_request(body: Any, api_names: Mapping[str, int]) -> RequestCheckRequest:
    data = obj(body, "", _REQUEST_CHECK_KEYS)
    return RequestCheckRequest(
        identity=identity(data),
        host=text(data, "host", ""),
        api_key=api_key(data.get("apiKey"), api_names),
        topics=texts(data, "topics", ""),
        group=optional_text(data, "group", ""),
        groups=texts(data, "groups", ""),
        transactional_id=optional_text(data, "transactionalId", ""),
        idempotent=flag(data, "idempotent", ""),
        follower=flag(data, "follower", ""),
        auto_create=flag(data, "autoCreate", ""),
        broker_configs=flag(data, "brokerConfigs", ""),
        min_offset=min_offset(data),
        explain=flag(data, "explain", ""),
        timeout_s=timeout_s(data),
    )


# --- bindings and filters -------------------------------------------------------------------

BINDING_KEYS = frozenset(
    {
        "resourceType",
        "resourceName",
        "patternType",
        "principal",
        "host",
        "operation",
        "permissionType",
    }
)


def binding(value: Any, path: str) -> AclBinding | InvalidItem:
    """A binding to create.  Names Kafka knows but that only filters use (ANY, MATCH) make a
    per-item error, as ``KafkaAdminClient.createAcls`` fails that one binding (KIP-140)."""
    data = obj(value, path, BINDING_KEYS)
    resource_type = enum_value(
        ResourceType, data.get("resourceType"), f"{path}.resourceType", _ALL_TYPES
    )
    pattern_type = enum_value(
        PatternType, data.get("patternType", "LITERAL"), f"{path}.patternType", _ALL_PATTERNS
    )
    operation = enum_value(AclOperation, data.get("operation"), f"{path}.operation", _ALL_OPS)
    permission = enum_value(
        AclPermissionType, data.get("permissionType", "ALLOW"), f"{path}.permissionType", _ALL_PERMS
    )
    name = text(data, "resourceName", path)
    principal = text(data, "principal", path)
    host = text(data, "host", path, default="*")
    for label, member in (
        ("Resource type", resource_type),
        ("Resource pattern type", pattern_type),
        ("Operation", operation),
        ("Permission type", permission),
    ):
        if member.name in ("ANY", "MATCH"):
            return InvalidItem(f"Invalid ACL creation: {label} is {member.name}", dict(data))
    return AclBinding.of(resource_type, name, pattern_type, principal, host, operation, permission)


def bindings(body: Any) -> list[AclBinding | InvalidItem]:
    data = obj(body, "", frozenset({"bindings"}))
    return [binding(item, f"bindings[{i}]") for i, item in enumerate(array(data, "bindings", ""))]


def acl_filter(value: Any, path: str) -> AclBindingFilter:
    """A KIP-140 filter: a missing field or null matches anything; ``"*"`` is a literal name."""
    data = obj(value if value is not None else {}, path, BINDING_KEYS)

    def member(cls: type[E], key: str, allowed: frozenset[E], default: str) -> E:
        return enum_value(cls, data.get(key) or default, _join(path, key), allowed)

    return AclBindingFilter.of(
        member(ResourceType, "resourceType", _ALL_TYPES, "ANY"),
        optional_text(data, "resourceName", path),
        member(PatternType, "patternType", _ALL_PATTERNS, "ANY"),
        optional_text(data, "principal", path),
        optional_text(data, "host", path),
        member(AclOperation, "operation", _ALL_OPS, "ANY"),
        member(AclPermissionType, "permissionType", _ALL_PERMS, "ANY"),
    )


def describe_request(body: Any) -> DescribeAclsRequest:
    data = obj(body, "", frozenset({"filter", "minOffset"}))
    return DescribeAclsRequest(acl_filter(data.get("filter"), "filter"), min_offset(data))


def delete_filters(body: Any) -> list[AclBindingFilter]:
    data = obj(body, "", frozenset({"filters"}))
    return [acl_filter(item, f"filters[{i}]") for i, item in enumerate(array(data, "filters", ""))]


def describe_configs_request(body: Any) -> tuple[str, ...]:
    data = obj(body if body is not None else {}, "", frozenset({"names"}))
    return texts(data, "names", "")


def alter_configs_request(body: Any) -> AlterConfigsRequest:
    """``{"configs": {"super.users": "User:a;User:b", "x": null}, "validateOnly": true}``;
    null resets a setting to its default (KIP-133's delete)."""
    data = obj(body, "", frozenset({"configs", "validateOnly"}))
    configs = data.get("configs")
    if not isinstance(configs, dict) or not configs:
        raise BadRequestError(
            f"configs must be a non-empty object of name -> value (or null), got {_show(configs)}"
        )
    for key, value in configs.items():
        if value is not None and not isinstance(value, str):
            raise BadRequestError(f"configs.{key} must be a string or null, got {_show(value)}")
    return AlterConfigsRequest(dict(configs), flag(data, "validateOnly", ""))


# --- answers ----------------------------------------------------------------------------------


def binding_json(b: AclBinding) -> dict[str, str]:
    return {
        "resourceType": b.resource_type.name,
        "resourceName": b.name,
        "patternType": b.pattern_type.name,
        "principal": b.principal,
        "host": b.host,
        "operation": b.operation.name,
        "permissionType": b.permission_type.name,
    }


def filter_json(f: AclBindingFilter) -> dict[str, str | None]:
    pf, ef = f.pattern_filter, f.entry_filter
    return {
        "resourceType": pf.resource_type.name,
        "resourceName": pf.name,
        "patternType": pf.pattern_type.name,
        "principal": ef.principal,
        "host": ef.host,
        "operation": ef.operation.name,
        "permissionType": ef.permission_type.name,
    }


def binding_from_json(data: Mapping[str, Any]) -> AclBinding:
    """The inverse of :func:`binding_json` for answers we produced (clients, tests)."""
    item = binding(data, "binding")
    if isinstance(item, InvalidItem):
        raise BadRequestError(item.message)
    return item


def reason_json(decision: Decision) -> dict[str, Any]:
    """Why: the decisive binding (MATCHING_ACL) or the rule (SUPER_USER, DEFAULT_DENY...)."""
    reason: dict[str, Any] = {"rule": decision.rule.name, "description": decision.rule.value}
    if decision.binding is not None:
        reason["binding"] = binding_json(decision.binding)
    return reason


def error_json(error: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": error, "message": message, **extra}


def names_of(values: Sequence[enum.Enum]) -> list[str]:
    return [v.name for v in values]
