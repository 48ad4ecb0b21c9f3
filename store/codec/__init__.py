"""Change-event codecs (Avro single-object encoding, KIP-290-compatible JSON) and log keys.

:func:`decode_event` reads a value written by either codec (it tells them apart by the first
byte), so a log may hold both.
"""

from __future__ import annotations

from functools import cache

from store.codec.avro_codec import MARKER, AvroEventCodec
from store.codec.base import EventCodec
from store.codec.errors import (
    EventFormatError,
    NewerFormatRequiredError,
    RecordDecodeError,
    UndecodableRecordError,
    UnknownWriterSchemaError,
)
from store.codec.json_codec import JsonEventCodec
from store.codec.keys import (
    ConfigKey,
    binding_key,
    binding_key_of_fields,
    config_key,
    event_key,
    parse_key,
)
from store.events import LATEST_FORMAT_VERSION, ChangeEvent

__all__ = [
    "AvroEventCodec",
    "ConfigKey",
    "EventCodec",
    "EventFormatError",
    "JsonEventCodec",
    "NewerFormatRequiredError",
    "RecordDecodeError",
    "UndecodableRecordError",
    "UnknownWriterSchemaError",
    "binding_key",
    "binding_key_of_fields",
    "codec_named",
    "codec_of_value",
    "config_key",
    "decode_event",
    "event_key",
    "parse_key",
]


@cache
def _default(name: str) -> EventCodec:
    return AvroEventCodec() if name == "avro" else JsonEventCodec()


def codec_named(name: str, *, writer_version: int = LATEST_FORMAT_VERSION) -> EventCodec:
    """``"avro"`` or ``"json"``."""
    if name == "avro":
        return AvroEventCodec(writer_version=writer_version)
    if name == "json":
        return JsonEventCodec(writer_version=writer_version)
    raise ValueError(f"unknown event codec {name!r}; use 'avro' or 'json'")


def codec_of_value(value: bytes) -> EventCodec | None:
    """The codec that reads ``value`` (Avro starts with ``C3 01``, JSON with ``{``), or None."""
    if value[:2] == MARKER:
        return _default("avro")
    if value[:1] == b"{":
        return _default("json")
    return None


def decode_event(
    value: bytes, *, offset: int = -1, reader_version: int = LATEST_FORMAT_VERSION
) -> ChangeEvent:
    """Decode a value of either codec: Avro starts with ``C3 01``, JSON with ``{``."""
    codec = codec_of_value(value)
    if codec is None:
        raise UndecodableRecordError(
            f"value {value[:12]!r}... is neither Avro single-object encoding nor JSON",
            offset=offset,
        )
    return codec.decode(value, offset=offset, reader_version=reader_version)
