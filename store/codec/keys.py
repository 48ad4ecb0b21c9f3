"""Log keys: one key per binding and one per setting, so compaction keeps exactly the live set.

A binding's key is a canonical encoding of its seven fields (Kafka's enum names, ASCII JSON),
so two writers that create or delete the same binding address the same key, and two different
bindings never share one.  Tombstones carry no value, so readers decode the key to learn which
binding (or setting) a tombstone is for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from store.acl import AclBinding, parse_fields
from store.codec.errors import UndecodableRecordError
from store.events import AclCreated, AclDeleted, ChangeEvent

ACL_KEY_TAG: Final = "acl"
CONFIG_KEY_TAG: Final = "config"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigKey:
    """The key of one of the store's settings (``super.users``, ...)."""

    name: str


_quote = json.encoder.encode_basestring_ascii  # what json.dumps(ensure_ascii=True) uses


def _dump(items: list[str]) -> bytes:
    """``json.dumps(items, ensure_ascii=True, separators=(",", ":"))``, without its overhead."""
    return ("[" + ",".join(map(_quote, items)) + "]").encode("ascii")


def binding_key(binding: AclBinding) -> bytes:
    """``["acl",TYPE,name,PATTERN,principal,host,OPERATION,PERMISSION]`` as compact ASCII JSON."""
    return _dump([ACL_KEY_TAG, *binding.fields()])


def binding_key_of_fields(fields: Sequence[str]) -> bytes:
    """:func:`binding_key` from the seven fields as strings (Kafka's enum names), in order.

    For readers that have the fields but no :class:`AclBinding` (the fold's fast path).
    """
    return _dump([ACL_KEY_TAG, *fields])


def config_key(name: str) -> bytes:
    return _dump([CONFIG_KEY_TAG, name])


def event_key(event: ChangeEvent) -> bytes:
    """The log key an event is appended under."""
    if isinstance(event, AclCreated | AclDeleted):
        return binding_key(event.binding)
    return config_key(event.name)


def parse_key(key: bytes, *, offset: int = -1) -> AclBinding | ConfigKey:
    """The binding or setting a key names; a malformed key raises with its offset."""
    try:
        items = json.loads(key.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UndecodableRecordError(
            f"key {key[:80]!r} is not a change-log key", offset=offset
        ) from exc
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise UndecodableRecordError(f"key {key[:80]!r} is not a list of strings", offset=offset)
    if len(items) == 8 and items[0] == ACL_KEY_TAG:
        try:
            return AclBinding.of(*parse_fields(items[1:]))
        except ValueError as exc:
            raise UndecodableRecordError(f"key {key[:80]!r}: {exc}", offset=offset) from exc
    if len(items) == 2 and items[0] == CONFIG_KEY_TAG:
        return ConfigKey(name=items[1])
    raise UndecodableRecordError(
        f"key {key[:80]!r} names neither a binding nor a setting", offset=offset
    )
