"""The fold's fast path: a plain ACL event read straight into plain values, or declined.

Bootstrap spends most of its time turning log records into events.  For an ``AclCreated`` or
``AclDeleted`` whose every field this release names exactly, a reader that keeps its own
encoding of bindings (the replica's index) needs only the fields, so :class:`FastAclDecoder`
skips building the event objects; for anything else it declines and the caller takes
:func:`store.fold.fold_record`, which accepts or refuses the record with the codec's typed
errors.  ``tests/replicator/test_replica.py`` holds a differential test of the two paths.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import binding_key_of_fields, codec_of_value
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


class FastAclChange(NamedTuple):
    """A plain ACL event, read: created or deleted, its seven fields, its expected log key.

    The enum fields are Kafka's int8 codes; ``key`` is the log key the event must be stored
    under (:func:`store.codec.binding_key`), for the caller to compare with the record's;
    ``actor`` and ``request_id`` are the event's own (the history archive keeps them).
    """

    created: bool
    resource_type: int
    name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    key: bytes
    actor: str
    request_id: str


class FastAclDecoder:
    """Reads the common ACL event into a :class:`FastAclChange`, or declines (None).

    Uses the codec's own version resolution and upcasting (``EventCodec.read_record``, the
    codec chosen by :func:`store.codec.codec_of_value`), the event module's format rule
    (``binding_format_requirement``, memoized on the four enum fields it depends on) and the
    log-key encoder (:func:`store.codec.binding_key_of_fields`).  Anything else (another
    event type, an UNKNOWN or non-canonical enum name, a missing field, a newer format, a
    decode error) returns None.
    """

    def __init__(self, reader_version: int) -> None:
        self.reader_version = reader_version
        self._requirements: dict[tuple[int, int, int, int], int] = {}

    def decode(self, value: bytes, offset: int) -> FastAclChange | None:
        codec = codec_of_value(value)
        if codec is None:
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
        actor, request_id = record.get("actor"), record.get("requestId")
        if type(actor) is not str or type(request_id) is not str:
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
        key = binding_key_of_fields(
            (names[0], name, names[1], principal, host, names[2], names[3])  # type: ignore[arg-type]
        )
        return FastAclChange(
            event_type == ACL_CREATED, rt, name, pt, principal, host, op, perm, key, actor, request_id
        )

    @staticmethod
    def _requirement(codes: tuple[int, int, int, int]) -> int:
        rt, pt, op, perm = codes
        sample = AclBinding.of(
            ResourceType(rt), "n", PatternType(pt), "User:p", "*", AclOperation(op),
            AclPermissionType(perm),
        )
        return binding_format_requirement(sample)[0]
