"""The tailer's fast path: a plain ACL event decoded straight into the index encoding ``E``.

Bootstrap spends most of its time turning log records into events.  For an ``AclCreated`` or
``AclDeleted`` whose every field this release names exactly, the index needs only ``E``
(:func:`replicator.keys.encode_fields`), so :class:`FastAclDecoder` skips building the event
objects, and otherwise declines so that the tailer takes the codec's full path.
"""

from __future__ import annotations

import json
from typing import Any

from replicator.keys import encode_fields
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import AvroEventCodec, EventCodec, JsonEventCodec
from store.codec.avro_codec import MARKER
from store.errors import StoreError
from store.events import (
    ACL_CREATED,
    ACL_DELETED,
    LATEST_FORMAT_VERSION,
    binding_format_requirement,
    upcast,
)


def _specific(enum_type: type[Any], *excluded: str) -> dict[str, int]:
    return {m.name: int(m) for m in enum_type if m.name not in ("UNKNOWN", *excluded)}


_RESOURCE_TYPES = _specific(ResourceType, "ANY")
_PATTERN_TYPES = _specific(PatternType, "ANY", "MATCH")
_OPERATIONS = _specific(AclOperation, "ANY")
_PERMISSIONS = _specific(AclPermissionType, "ANY")
_KEY_JSON = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


class FastAclDecoder:
    """Decodes the common ACL event straight into the index encoding, or declines.

    Bootstrap spends most of its time turning records into events; for an ``AclCreated`` or
    ``AclDeleted`` whose every field this release names exactly, the index needs only the
    binding's encoding ``E`` (:func:`replicator.index.encode_binding`).  This decoder uses the
    codec's own version resolution and upcasting (``EventCodec.read_record``) and the event
    module's format rule (``binding_format_requirement``, memoized on the four enum fields it
    depends on), and returns ``(created, E, expected log key)``.  Anything else (another event
    type, an UNKNOWN or non-canonical enum name, a missing field, a newer format, a decode
    error) returns None, and the tailer takes the full path (``store.codec.decode_event``),
    which accepts or refuses it with the codec's own typed errors.  ``tests/replicator``
    holds a differential test of the two paths.
    """

    def __init__(self, reader_version: int) -> None:
        self.reader_version = reader_version
        self._avro: EventCodec = AvroEventCodec()
        self._json: EventCodec = JsonEventCodec()
        self._requirements: dict[tuple[int, int, int, int], int] = {}

    def decode(self, value: bytes, offset: int) -> tuple[bool, bytes, bytes] | None:
        if value[:2] == MARKER:
            codec = self._avro
        elif value[:1] == b"{":
            codec = self._json
        else:
            return None
        reader = self.reader_version
        try:
            _, record = codec.read_record(value, offset=offset, reader_version=reader)
        except (StoreError, ValueError, KeyError, TypeError):
            return None
        if reader != LATEST_FORMAT_VERSION:
            record = upcast(record, from_version=reader)
        event_type = record.get("eventType")
        if event_type != ACL_CREATED and event_type != ACL_DELETED:
            return None
        needed = record.get("minReaderVersion")
        schema_version = record.get("schemaVersion")
        if type(needed) is not int or needed > reader or type(schema_version) is not int:
            return None
        if schema_version < 1 or type(record.get("timeMs")) is not int:
            return None
        name, principal, host = record.get("name"), record.get("principal"), record.get("host")
        if type(name) is not str or type(principal) is not str or type(host) is not str:
            return None
        if type(record.get("actor")) is not str or type(record.get("requestId")) is not str:
            return None
        names = (
            record.get("resourceType"),
            record.get("patternType"),
            record.get("operation"),
            record.get("permissionType"),
        )
        rt = _RESOURCE_TYPES.get(names[0])  # type: ignore[arg-type]
        pt = _PATTERN_TYPES.get(names[1])  # type: ignore[arg-type]
        op = _OPERATIONS.get(names[2])  # type: ignore[arg-type]
        perm = _PERMISSIONS.get(names[3])  # type: ignore[arg-type]
        if rt is None or pt is None or op is None or perm is None:
            return None
        codes = (rt, pt, op, perm)
        required = self._requirements.get(codes)
        if required is None:
            required = self._requirements[codes] = self._requirement(codes)
        if required > reader:
            return None
        enc = encode_fields(rt, pt, name, principal, host, op, perm)
        # store.codec.keys.binding_key's documented format: compact ASCII JSON of the fields.
        # Printable ASCII without quote or backslash needs no escaping in JSON.
        if _plain(name) and _plain(principal) and _plain(host):
            text = (
                f'["acl","{names[0]}","{name}","{names[1]}","{principal}","{host}",'
                f'"{names[2]}","{names[3]}"]'
            )
        else:
            text = _KEY_JSON.encode(
                ["acl", names[0], name, names[1], principal, host, names[2], names[3]]
            )
        return event_type == ACL_CREATED, enc, text.encode("ascii")

    @staticmethod
    def _requirement(codes: tuple[int, int, int, int]) -> int:
        rt, pt, op, perm = codes
        sample = AclBinding.of(
            ResourceType(rt), "n", PatternType(pt), "User:p", "*", AclOperation(op),
            AclPermissionType(perm),
        )
        return binding_format_requirement(sample)[0]
