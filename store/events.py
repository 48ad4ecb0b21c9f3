"""Change events: what the write path appends to the log, and how old events are read today.

Three frozen, past-tense events (``AclCreated``, ``AclDeleted``, ``ConfigAltered``) carry the
full binding (or config key and value), the actor who made the change, the request id, the
time, the schema version they were written with, and the **minimum reader format version**
they need.  That last field is how an older reader learns that it meets a feature it does not
know, instead of misreading it: KIP-290's downgrade hazard is a reader without pattern types
taking a PREFIXED binding for a LITERAL one (or dropping a prefixed DENY).

Format versions tell the real history of Kafka's ACL feature set:

* 1: literal patterns only, as Kafka's legacy ``/kafka-acl-changes`` notifications;
* 2: the pattern type (KIP-290: PREFIXED);
* 3: USER and DELEGATION_TOKEN resources, CREATE_TOKENS/DESCRIBE_TOKENS, and config events.

Events also have a plain *record* form (camelCase keys, Kafka enum names), which both codecs
share.  Records of an old schema version are upgraded on read by ``upcast_vN_to_vN1``; the log
itself is never rewritten.  Pure values, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from store.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    parse_fields,
)
from store.errors import StoreError

FORMAT_V1: Final = 1
FORMAT_V2: Final = 2
FORMAT_V3: Final = 3
LATEST_FORMAT_VERSION: Final = FORMAT_V3
"""The newest event format (and Avro schema) version this release reads and writes."""

SUPPORTED_FORMAT_VERSIONS: Final = (FORMAT_V1, FORMAT_V2, FORMAT_V3)

_V3_RESOURCE_TYPES = frozenset({ResourceType.USER, ResourceType.DELEGATION_TOKEN})
_V3_OPERATIONS = frozenset({AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS})


def binding_format_requirement(binding: AclBinding) -> tuple[int, str]:
    """The format version a reader needs to understand ``binding``, and the feature why.

    An UNKNOWN field (a value this release cannot name) needs a version newer than any this
    release knows, so such a binding is never applied or written by mistake.
    """
    # Identity checks on the members: this runs for every event written and read.
    pattern, entry = binding.pattern, binding.entry
    rt, pt, op = pattern.resource_type, pattern.pattern_type, entry.operation
    if (
        rt is ResourceType.UNKNOWN
        or pt is PatternType.UNKNOWN
        or op is AclOperation.UNKNOWN
        or entry.permission_type is AclPermissionType.UNKNOWN
    ):
        return LATEST_FORMAT_VERSION + 1, f"an UNKNOWN field in {binding}"
    if rt in _V3_RESOURCE_TYPES:
        return FORMAT_V3, f"the {rt.name} resource type"
    if op in _V3_OPERATIONS:
        return FORMAT_V3, f"the {op.name} operation"
    if pt is PatternType.PREFIXED:
        return FORMAT_V2, "the PREFIXED pattern type (KIP-290)"
    return FORMAT_V1, "literal patterns"


def binding_min_reader_version(binding: AclBinding) -> int:
    return binding_format_requirement(binding)[0]


def binding_requirement_key(binding: AclBinding) -> tuple[object, ...]:
    """What :func:`binding_format_requirement` reads of a binding (its four enum fields): two
    bindings with the same key need the same version, so a caller over millions of bindings
    asks once per key.  Kept beside the rule: a rule reading more must widen this key."""
    pattern, entry = binding.pattern, binding.entry
    return (pattern.resource_type, pattern.pattern_type, entry.operation, entry.permission_type)


CONFIG_EVENT_MIN_READER_VERSION: Final = FORMAT_V3
"""Config events came with format 3; older readers see them as an unknown event type."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _ChangeEvent:
    """Fields every change event carries.

    ``min_reader_version`` is never below what the content needs: a value of 0 (the default)
    means "derive it", and a larger stored value (from a newer writer) is kept.
    """

    actor: str
    request_id: str
    time_ms: int
    schema_version: int = LATEST_FORMAT_VERSION
    min_reader_version: int = 0

    def _content_min_reader_version(self) -> int:
        raise NotImplementedError

    def __post_init__(self) -> None:
        if not isinstance(self.actor, str) or not isinstance(self.request_id, str):
            raise TypeError("actor and request_id must be strings")
        if self.schema_version < FORMAT_V1:
            raise ValueError(f"schema_version must be >= 1, got {self.schema_version}")
        needed = max(self.min_reader_version, self._content_min_reader_version())
        object.__setattr__(self, "min_reader_version", needed)

    def readable_by(self, reader_version: int) -> bool:
        """True when a reader of ``reader_version`` understands everything in this event."""
        return self.min_reader_version <= reader_version


@dataclass(frozen=True, slots=True, kw_only=True)
class AclCreated(_ChangeEvent):
    """A binding was added (Kafka: ``AccessControlEntryRecord``)."""

    binding: AclBinding

    def _content_min_reader_version(self) -> int:
        return binding_min_reader_version(self.binding)


@dataclass(frozen=True, slots=True, kw_only=True)
class AclDeleted(_ChangeEvent):
    """A binding was removed (Kafka: ``RemoveAccessControlEntryRecord``)."""

    binding: AclBinding

    def _content_min_reader_version(self) -> int:
        return binding_min_reader_version(self.binding)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigAltered(_ChangeEvent):
    """One of the store's own settings was set (``value``) or reset to its default (None).

    KIP-133's AlterConfigs applied to ``super.users``, ``allow.everyone.if.no.acl.found`` and
    the finalized format version.
    """

    name: str
    value: str | None

    def _content_min_reader_version(self) -> int:
        return CONFIG_EVENT_MIN_READER_VERSION


ChangeEvent: TypeAlias = AclCreated | AclDeleted | ConfigAltered

# --- record form ----------------------------------------------------------------------------

Record: TypeAlias = dict[str, Any]
"""An event as a plain dict with the schema's camelCase field names and Kafka enum names."""

ACL_CREATED: Final = "ACL_CREATED"
ACL_DELETED: Final = "ACL_DELETED"
CONFIG_ALTERED: Final = "CONFIG_ALTERED"
UNKNOWN_EVENT: Final = "UNKNOWN"

BINDING_FIELDS: Final = (
    "resourceType",
    "name",
    "patternType",
    "principal",
    "host",
    "operation",
    "permissionType",
)
"""The record's binding fields, in :meth:`~store.acl.AclBinding.fields` order."""

_PLACEHOLDER_BINDING: Final[Mapping[str, str]] = {
    # A config event has no binding; v3 keeps the binding fields (older readers require them)
    # and fills them with values that no real binding can have.
    "resourceType": "UNKNOWN",
    "name": "",
    "patternType": "UNKNOWN",
    "principal": "",
    "host": "",
    "operation": "UNKNOWN",
    "permissionType": "UNKNOWN",
}


def to_record(event: ChangeEvent) -> Record:
    """The event in the latest record shape (format 3)."""
    record: Record = {
        "schemaVersion": event.schema_version,
        "minReaderVersion": event.min_reader_version,
        "actor": event.actor,
        "requestId": event.request_id,
        "timeMs": event.time_ms,
    }
    if isinstance(event, ConfigAltered):
        record["eventType"] = CONFIG_ALTERED
        record.update(_PLACEHOLDER_BINDING)
        record["config"] = {"name": event.name, "value": event.value}
        return record
    record["eventType"] = ACL_CREATED if isinstance(event, AclCreated) else ACL_DELETED
    record.update(zip(BINDING_FIELDS, event.binding.fields(), strict=True))
    record["config"] = None
    return record


class UnknownEventTypeError(StoreError, ValueError):
    """A record whose event type this release cannot name (a newer writer's event).

    Under the store's root error, and still a ``ValueError`` for callers that treat every
    malformed record alike.
    """


def from_record(record: Mapping[str, Any]) -> ChangeEvent:
    """Build the event from a latest-shape record (raise ``ValueError``/``KeyError`` if malformed).

    Enum names this release does not know become UNKNOWN (KIP-140's rule); the stored
    ``minReaderVersion`` is kept, so the caller can tell the event came from a newer writer.
    """
    common: dict[str, Any] = {
        "actor": record["actor"],
        "request_id": record["requestId"],
        "time_ms": int(record["timeMs"]),
        "schema_version": int(record["schemaVersion"]),
        "min_reader_version": int(record["minReaderVersion"]),
    }
    event_type = record["eventType"]
    if event_type == CONFIG_ALTERED:
        config = record["config"]
        if config is None:
            raise ValueError("a CONFIG_ALTERED record has no config entry")
        return ConfigAltered(name=config["name"], value=config["value"], **common)
    if event_type not in (ACL_CREATED, ACL_DELETED):
        raise UnknownEventTypeError(f"unknown event type {event_type!r}")
    binding = AclBinding.of(*parse_fields([record[field] for field in BINDING_FIELDS]))
    if event_type == ACL_CREATED:
        return AclCreated(binding=binding, **common)
    return AclDeleted(binding=binding, **common)


# --- upcasting: old records are upgraded on read, never rewritten ---------------------------


def upcast_v1_to_v2(record: Record) -> Record:
    """Format 1 had literal patterns only (``/kafka-acl-changes``): the pattern is LITERAL."""
    return {**record, "patternType": PatternType.LITERAL.name}


def upcast_v2_to_v3(record: Record) -> Record:
    """Format 3 added config events; a format-2 record is never one."""
    return {**record, "config": None}


UPCASTERS: Final[Mapping[int, Callable[[Record], Record]]] = {
    FORMAT_V1: upcast_v1_to_v2,
    FORMAT_V2: upcast_v2_to_v3,
}


def upcast(record: Record, *, from_version: int, to_version: int = LATEST_FORMAT_VERSION) -> Record:
    """Apply ``upcast_vN_to_vN1`` from ``from_version`` up to ``to_version``.

    ``schemaVersion`` keeps the version the record was written with.
    """
    for version in range(from_version, to_version):
        record = UPCASTERS[version](record)
    return record


def downcast_to(record: Record, version: int) -> Record:
    """The latest-shape ``record`` in an older writer's shape, for writing at ``version``.

    Returns ``record`` itself (not a copy) for the latest version.

    Only valid when the event's ``minReaderVersion`` is at most ``version`` (callers check),
    so nothing a ``version`` reader needs is dropped.
    """
    if version == LATEST_FORMAT_VERSION:
        return record
    out = dict(record)
    if version < FORMAT_V3:
        out.pop("config", None)
    if version < FORMAT_V2:
        out.pop("patternType", None)
    out["schemaVersion"] = version
    return out
