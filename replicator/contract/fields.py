"""The JSON values of the API: decoding, typed fields, Kafka enum names, limits.

Pure functions, no I/O.  Every reader raises :class:`BadRequestError` whose message names the
field (as a JSON path such as ``actions[2].operation``), the offending value and what would be
accepted.  Enum names are accepted as Kafka's ``fromString`` reads them (any letter case,
``DescribeConfigs`` or ``DESCRIBE_CONFIGS``); a name Kafka does not know is a 400, never
``UNKNOWN``: a typo in a request must not silently become a different question.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any, Final, TypeVar

from store.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from store.errors import InvalidRequestError, StoreError
from store.principal import KafkaPrincipal

MAX_ACTIONS: Final = 10_000
"""Actions in one authorize request; a broker batches per request, far below this."""
MAX_ITEMS: Final = 10_000
"""Bindings or filters in one admin request."""

E = TypeVar("E", bound=enum.IntEnum)


class BadRequestError(InvalidRequestError):
    """The request body is not what the endpoint accepts (HTTP 400)."""


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


def show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def obj(value: Any, path: str, known: frozenset[str]) -> Mapping[str, Any]:
    """A JSON object with only ``known`` keys (an unknown key is a typo, refused by name)."""
    if not isinstance(value, dict):
        raise BadRequestError(f"{path or 'the body'} must be a JSON object, got {show(value)}")
    unknown = value.keys() - known
    if unknown:
        where = f"{path}." if path else ""
        raise BadRequestError(
            f"unknown field {where}{sorted(unknown)[0]}; known fields: {', '.join(sorted(known))}"
        )
    return value


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def text(data: Mapping[str, Any], key: str, path: str, *, default: str | None = None) -> str:
    value = data.get(key, default)
    if value is None:
        raise BadRequestError(f"{join(path, key)} is required (a string)")
    if not isinstance(value, str):
        raise BadRequestError(f"{join(path, key)} must be a string, got {show(value)}")
    return value


def optional_text(data: Mapping[str, Any], key: str, path: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequestError(f"{join(path, key)} must be a string or null, got {show(value)}")
    return value


def flag(data: Mapping[str, Any], key: str, path: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise BadRequestError(f"{join(path, key)} must be true or false, got {show(value)}")
    return value


def array(data: Mapping[str, Any], key: str, path: str, *, limit: int = MAX_ITEMS) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise BadRequestError(f"{join(path, key)} must be a JSON array, got {show(value)}")
    if len(value) > limit:
        raise BadRequestError(
            f"{join(path, key)} has {len(value)} items; at most {limit} per request"
        )
    return value


def texts(data: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    if data.get(key) is None:
        return ()
    items = array(data, key, path)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise BadRequestError(f"{join(path, key)}[{i}] must be a string, got {show(item)}")
    return tuple(items)


def min_offset(data: Mapping[str, Any], path: str = "") -> int | None:
    """``minOffset``: the log offset the answer must reflect at least (a consistency token)."""
    value = data.get("minOffset")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value < 2**63:
        raise BadRequestError(
            f"{join(path, 'minOffset')} must be a log offset (integer >= -1), got {show(value)}"
        )
    return value


def timeout_s(data: Mapping[str, Any]) -> float | None:
    """``timeoutMs``: how long a ``minOffset`` wait may take (capped by the replica's bound)."""
    value = data.get("timeoutMs")
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 3_600_000:
        raise BadRequestError(f"timeoutMs must be milliseconds in [0, 3600000], got {show(value)}")
    return float(value) / 1000.0


def _enum_names(cls: type[E], allowed: frozenset[E]) -> str:
    return ", ".join(member.name for member in cls if member in allowed)


def enum_value(cls: type[E], value: Any, path: str, allowed: frozenset[E]) -> E:
    """Parse a Kafka enum name (any case; PascalCase too) that must be one of ``allowed``."""
    label = _LABELS[cls]
    if not isinstance(value, str):
        raise BadRequestError(
            f"{path} must be {label} name ({_enum_names(cls, allowed)}), got {show(value)}"
        )
    member = _FAST[cls].get(value)
    if member is None:
        member = _parse_name(cls, value)
    if member is None or member not in allowed:
        hint = "" if member is None else f" accepted here ({member.name} is not)"
        raise BadRequestError(
            f"{path}: {show(value)} is not {label}{hint}; use one of {_enum_names(cls, allowed)}"
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

SPECIFIC_TYPES = frozenset(
    t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN)
)
SPECIFIC_OPS = frozenset(
    o for o in AclOperation if o not in (AclOperation.ANY, AclOperation.UNKNOWN)
)
SPECIFIC_PERMS = frozenset({AclPermissionType.ALLOW, AclPermissionType.DENY})
ALL_TYPES = frozenset(t for t in ResourceType if t is not ResourceType.UNKNOWN)
ALL_OPS = frozenset(o for o in AclOperation if o is not AclOperation.UNKNOWN)
ALL_PERMS = frozenset(p for p in AclPermissionType if p is not AclPermissionType.UNKNOWN)
ALL_PATTERNS = frozenset(p for p in PatternType if p is not PatternType.UNKNOWN)
LITERAL_ONLY = frozenset({PatternType.LITERAL})



def check_principal(value: str, path: str) -> KafkaPrincipal:
    try:
        return KafkaPrincipal.parse(value)
    except StoreError as exc:
        raise BadRequestError(f'{path}: {exc.message} (for example "User:bob")') from exc
