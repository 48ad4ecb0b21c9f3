"""Avro single-object encoding of change events (fastavro), resolved by schema fingerprint.

A value is ``C3 01`` + the 8-byte little-endian CRC-64-AVRO fingerprint of the writer schema's
Parsing Canonical Form + the Avro binary body.  The fingerprint names the writer schema among
the versions shipped in ``schemas/`` (no registry server); a reader resolves a newer writer's
record into its own schema, where unknown enum symbols take the enum's ``UNKNOWN`` default.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any, Final

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.schema import to_parsing_canonical_form

import schemas
from store.codec.avro_acl_writer import compile_acl_writer
from store.codec.base import EventCodec, check_version
from store.codec.errors import UndecodableRecordError, UnknownWriterSchemaError
from store.codec.fingerprint import crc64_avro
from store.events import LATEST_FORMAT_VERSION, AclCreated, AclDeleted, ChangeEvent, Record

MARKER: Final = b"\xc3\x01"
HEADER_SIZE: Final = len(MARKER) + 8


def schema_fingerprint(version: int) -> int:
    """CRC-64-AVRO of the Parsing Canonical Form of ``acl_event_v{version}.avsc``."""
    canonical = to_parsing_canonical_form(schemas.avro_schema(version))
    return crc64_avro(canonical.encode("utf-8"))


class AvroEventCodec(EventCodec):
    """Change events as Avro single-object encoded values.

    ``known_versions`` (default: every schema shipped) models what a release knows; a record
    whose fingerprint is not among them raises :class:`UnknownWriterSchemaError`.
    """

    name = "avro"

    def __init__(
        self,
        *,
        writer_version: int = LATEST_FORMAT_VERSION,
        known_versions: Iterable[int] | None = None,
    ) -> None:
        super().__init__(writer_version=writer_version)
        versions = tuple(known_versions) if known_versions is not None else schemas.avro_versions()
        for version in versions:
            check_version(version, "known version")
        if writer_version not in versions:
            raise ValueError(f"writer_version {writer_version} is not among {list(versions)}")
        self._schemas: dict[int, Any] = {v: parse_schema(schemas.avro_schema(v)) for v in versions}
        self._headers: dict[int, bytes] = {
            v: MARKER + schema_fingerprint(v).to_bytes(8, "little") for v in versions
        }
        self._by_fingerprint: dict[int, int] = {
            int.from_bytes(header[2:], "little"): v for v, header in self._headers.items()
        }
        self._acl_writers = {v: compile_acl_writer(schemas.avro_schema(v), v) for v in versions}

    def header(self, version: int) -> bytes:
        return self._headers[version]

    def _encode_event(self, event: ChangeEvent, version: int) -> bytes:
        """ACL events through their compiled writer (same bytes, a fraction of the cost)."""
        writer = self._acl_writers[version]
        if writer is not None and isinstance(event, AclCreated | AclDeleted):
            body = writer.body(event)
            if body is not None:
                return self._headers[version] + body
        return super()._encode_event(event, version)

    def _encode_record(self, record: Record, version: int) -> bytes:
        out = io.BytesIO()
        out.write(self._headers[version])
        schemaless_writer(out, self._schemas[version], record)
        return out.getvalue()

    def _decode_raw(self, value: bytes, *, offset: int, reader_version: int) -> tuple[int, Record]:
        if len(value) < HEADER_SIZE or value[:2] != MARKER:
            raise UndecodableRecordError(
                f"value {value[:12]!r}... lacks the Avro single-object marker C3 01", offset=offset
            )
        fingerprint = int.from_bytes(value[2:HEADER_SIZE], "little")
        writer_version = self._by_fingerprint.get(fingerprint)
        if writer_version is None:
            raise UnknownWriterSchemaError(fingerprint, offset=offset, known=sorted(self._schemas))
        if reader_version not in self._schemas:
            raise ValueError(f"reader_version {reader_version} is not a schema this codec knows")
        reader = self._schemas[reader_version] if writer_version > reader_version else None
        body = io.BytesIO(value[HEADER_SIZE:])
        try:
            record = schemaless_reader(body, self._schemas[writer_version], reader)
        except Exception as exc:  # fastavro raises many types on corrupt bytes; all mean "corrupt"
            raise UndecodableRecordError(
                f"Avro body does not match writer schema v{writer_version} "
                f"({type(exc).__name__}: {exc})",
                offset=offset,
            ) from exc
        if body.tell() != len(value) - HEADER_SIZE:
            raise UndecodableRecordError(
                f"{len(value) - HEADER_SIZE - body.tell()} trailing bytes after the Avro body",
                offset=offset,
            )
        if not isinstance(record, dict) or record.get("schemaVersion") != writer_version:
            raise UndecodableRecordError(
                f"schemaVersion {record.get('schemaVersion') if isinstance(record, dict) else '?'}"
                f" disagrees with the writer schema fingerprint (v{writer_version})",
                offset=offset,
            )
        return writer_version, record
