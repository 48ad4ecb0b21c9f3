"""JSON change events: a superset of Kafka's KIP-290 extended ACL change notification.

Kafka wrote ``{"version":1,"resourceType":"TOPIC","name":"orgName","patternType":"PREFIXED"}``
to ``/kafka-acl-extended-changes`` (``ExtendedAclChangeEvent``, whose reader refuses a
``version`` above 1).  Our value starts with exactly those fields, names and casing, and adds
the entry, the event type, actor, request id, time, ``schemaVersion`` and ``minReaderVersion``.
Format-1 values omit ``patternType`` (literal only, as ``/kafka-acl-changes``).  A newer
writer's value is projected onto the reader's schema (same field list and enum defaults as the
Avro schema of that version), so both codecs resolve versions identically.
"""

from __future__ import annotations

import json
from typing import Any, Final

import schemas
from store.codec.base import EventCodec
from store.codec.errors import UndecodableRecordError
from store.events import Record

NOTIFICATION_VERSION: Final = 1
"""Kafka's ``ExtendedAclChangeEvent.currentVersion``; our format version is ``schemaVersion``."""

_LEADING: Final = ("resourceType", "name", "patternType")


def project(record: dict[str, Any], schema: dict[str, Any]) -> Record:
    """``record`` in the shape of ``schema``: Avro's resolution rules, on plain dicts.

    Fields the schema lacks are dropped, missing ones take the field default, and an enum
    symbol the schema does not list becomes the enum's default (``UNKNOWN``).
    """
    out: Record = {}
    for field in schema["fields"]:
        name = field["name"]
        if name in record:
            value = record[name]
        elif "default" in field:
            value = field["default"]
        else:
            raise KeyError(f"field {name!r} is missing")
        ftype = field["type"]
        is_enum = isinstance(ftype, dict) and ftype.get("type") == "enum"
        if is_enum and value not in ftype["symbols"]:
            value = ftype["default"]
        out[name] = value
    return out


class JsonEventCodec(EventCodec):
    """Change events as UTF-8 JSON objects (ASCII-escaped, compact)."""

    name = "json"

    def _encode_record(self, record: Record, version: int) -> bytes:
        document: dict[str, Any] = {"version": NOTIFICATION_VERSION}
        for name in _LEADING:
            if name in record:
                document[name] = record[name]
        document.update((k, v) for k, v in record.items() if k not in document)
        return json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode("ascii")

    def _decode_raw(self, value: bytes, *, offset: int, reader_version: int) -> tuple[int, Record]:
        try:
            document = json.loads(value)
        except (UnicodeDecodeError, ValueError) as exc:
            raise UndecodableRecordError(f"value is not JSON ({exc})", offset=offset) from exc
        if not isinstance(document, dict):
            raise UndecodableRecordError("JSON value is not an object", offset=offset)
        notification_version = document.pop("version", None)
        if notification_version != NOTIFICATION_VERSION:
            raise UndecodableRecordError(
                f"notification version {notification_version!r} is not {NOTIFICATION_VERSION}",
                offset=offset,
            )
        writer_version = document.get("schemaVersion")
        if type(writer_version) is not int or writer_version < 1:
            raise UndecodableRecordError(
                f"schemaVersion {writer_version!r} is not a positive integer", offset=offset
            )
        if writer_version > reader_version:
            try:
                return writer_version, project(document, schemas.avro_schema(reader_version))
            except KeyError as exc:
                raise UndecodableRecordError(str(exc), offset=offset) from exc
        return writer_version, document
