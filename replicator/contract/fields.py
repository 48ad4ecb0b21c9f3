"""The JSON values of the API: decoding, Kafka enum names, limits, the 400 error.

Pure functions, no I/O.  Every error is a :class:`BadRequestError` whose message names the
field (as a JSON path such as ``actions[2].operation``), the offending value and what would be
accepted (the field kinds that raise them: :mod:`replicator.contract.kinds`).  Enum names are
accepted as Kafka's ``fromString`` reads them (any letter case, ``DescribeConfigs`` or
``DESCRIBE_CONFIGS``); a name Kafka does not know is a 400, never ``UNKNOWN``: a typo in a
request must not silently become a different question.
"""

from __future__ import annotations

import enum
import json
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
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise BadRequestError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise BadRequestError("malformed JSON: nested too deeply") from exc
    if "\\ud" in text or "\\uD" in text:  # an escaped UTF-16 surrogate: paired, or refused
        try:
            dumps(value)
        except UnicodeEncodeError as exc:
            raise BadRequestError(
                "the request body escapes a lone UTF-16 surrogate (\\ud800-\\udfff), which is "
                "not a character: send the character itself, or both halves of its pair"
            ) from exc
    return value


def _refuse_constant(name: str) -> Any:
    raise BadRequestError(f"malformed JSON: {name} is not a JSON value")


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# --- values -----------------------------------------------------------------------------------


def show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""A key missing from a JSON object (distinct from null)."""


def where(parent: str, key: str | int) -> str:
    """The JSON path of ``key`` in ``parent``: ``actions[2]``, ``filter.patternType``, ``host``."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if parent and key:
        return f"{parent}.{key}"
    return parent or key


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
