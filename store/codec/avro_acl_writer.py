"""The write path's Avro fast lane: ACL events encoded by a plan compiled from the writer schema.

A batched CreateAcls encodes one ``AclCreated`` per binding, and fastavro's
``schemaless_writer`` spends most of its time per call rather than per byte.  An Avro record is
the concatenation of its fields' encodings, so this writer encodes the six fields every event
of one request shares (schema version, minimum reader version, event type, actor, request id,
time) once, then each binding's fields: strings as a zig-zag varint length and UTF-8 bytes,
enums as the zig-zag varint of the symbol's index in the writer schema, and ``config`` as the
``null`` branch of its union.

The plan is read from the schema file (field order, enum symbols), never assumed; a schema whose
shape it does not recognise gets no plan, and an event outside it (a config event, an enum
symbol the writer schema lacks, an event carrying an older ``schema_version``) returns None, so
the caller falls back to fastavro.  The bytes are fastavro's, byte for byte
(``tests/store/test_codec.py`` compares both over every schema version).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from operator import attrgetter
from typing import Any, Final

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.events import LATEST_FORMAT_VERSION, AclCreated, AclDeleted

HEADER_FIELDS: Final = (
    "schemaVersion",
    "minReaderVersion",
    "eventType",
    "actor",
    "requestId",
    "timeMs",
)

_BINDING_FIELDS: Final[Mapping[str, tuple[Callable[[AclBinding], Any], type[Enum] | None]]] = {
    # field -> (how to read it from a binding, the Kafka enum it holds or None for a string)
    "resourceType": (attrgetter("pattern.resource_type"), ResourceType),
    "name": (attrgetter("pattern.name"), None),
    "patternType": (attrgetter("pattern.pattern_type"), PatternType),
    "principal": (attrgetter("entry.principal"), None),
    "host": (attrgetter("entry.host"), None),
    "operation": (attrgetter("entry.operation"), AclOperation),
    "permissionType": (attrgetter("entry.permission_type"), AclPermissionType),
}

_HEADER_CACHE_SIZE: Final = 16


def zigzag_varint(value: int) -> bytes:
    """Avro's ``int``/``long`` encoding: zig-zag, then 7 bits per byte, low bits first."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def avro_string(text: str) -> bytes:
    """Avro's ``string``: the UTF-8 length as a long, then the bytes (surrogates raise)."""
    data = text.encode("utf-8")
    return zigzag_varint(len(data)) + data


def _enum_symbols(field_type: Any) -> list[str] | None:
    if isinstance(field_type, dict) and field_type.get("type") == "enum":
        return list(field_type["symbols"])
    return None


class AclEventWriter:
    """The Avro body of ACL events for one writer schema (a plan built from its fields)."""

    def __init__(self, schema: Mapping[str, Any], version: int) -> None:
        fields = list(schema["fields"])
        names = [f["name"] for f in fields]
        if tuple(names[: len(HEADER_FIELDS)]) != HEADER_FIELDS:
            raise ValueError(f"schema v{version} does not start with {HEADER_FIELDS}")
        event_symbols = _enum_symbols(fields[2]["type"])
        if event_symbols is None:
            raise ValueError(f"schema v{version}: eventType is not an enum")
        self.version = version
        self._event_types = {s: zigzag_varint(i) for i, s in enumerate(event_symbols)}
        self._binding: list[tuple[Callable[[AclBinding], Any], dict[Any, bytes] | None]] = []
        self._trailer = b""
        for field in fields[len(HEADER_FIELDS) :]:
            if field["name"] == "config" and field is fields[-1]:
                if field["type"][0] != "null":
                    raise ValueError(f"schema v{version}: config's union does not start with null")
                self._trailer = zigzag_varint(0)  # the union's null branch
                continue
            if field["name"] not in _BINDING_FIELDS:
                raise ValueError(f"schema v{version}: no plan for field {field['name']!r}")
            getter, enum_type = _BINDING_FIELDS[field["name"]]
            if enum_type is None:
                self._binding.append((getter, None))
                continue
            symbols = _enum_symbols(field["type"])
            if symbols is None:
                raise ValueError(f"schema v{version}: {field['name']} is not an enum")
            table = {m: zigzag_varint(symbols.index(m.name)) for m in enum_type if m.name in symbols}
            self._binding.append((getter, table))
        self._headers: dict[tuple[Any, ...], bytes] = {}

    def body(self, event: AclCreated | AclDeleted) -> bytes | None:
        """The Avro body of ``event`` in this schema, or None when it is outside the plan."""
        if event.schema_version != LATEST_FORMAT_VERSION:
            return None  # an upcast old event keeps its own schemaVersion: fastavro writes it
        event_type = "ACL_CREATED" if isinstance(event, AclCreated) else "ACL_DELETED"
        header_key = (event_type, event.min_reader_version, event.actor, event.request_id, event.time_ms)
        header = self._headers.get(header_key)
        if header is None:
            header = self._header(event_type, event)
            if header is None:
                return None
            if len(self._headers) >= _HEADER_CACHE_SIZE:
                self._headers.clear()
            self._headers[header_key] = header
        parts = [header]
        binding = event.binding
        for getter, table in self._binding:
            value = getter(binding)
            if table is None:
                parts.append(avro_string(value))
            else:
                encoded = table.get(value)
                if encoded is None:
                    return None
                parts.append(encoded)
        parts.append(self._trailer)
        return b"".join(parts)

    def _header(self, event_type: str, event: AclCreated | AclDeleted) -> bytes | None:
        encoded_type = self._event_types.get(event_type)
        if encoded_type is None:
            return None
        return b"".join(
            (
                zigzag_varint(self.version),  # downcast_to writes the writer's version
                zigzag_varint(event.min_reader_version),
                encoded_type,
                avro_string(event.actor),
                avro_string(event.request_id),
                zigzag_varint(event.time_ms),
            )
        )


def compile_acl_writer(schema: Mapping[str, Any], version: int) -> AclEventWriter | None:
    """The writer for ``schema``, or None when its shape is not one the plan knows."""
    try:
        return AclEventWriter(schema, version)
    except (ValueError, KeyError, TypeError, IndexError):
        return None
