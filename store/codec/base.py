"""What every event codec does: encode at a writer version, decode at a reader version.

Reading is one pipeline for every codec:

1. the codec finds the writer version (Avro: the schema fingerprint; JSON: ``schemaVersion``);
2. a record from an *older* writer is upgraded with ``upcast_vN_to_vN1``; a record from a
   *newer* writer is resolved into the reader's shape, where unknown enum symbols become
   ``UNKNOWN`` (Avro enum defaults, KIP-140's forward-compatibility rule);
3. a record whose ``minReaderVersion`` is above the reader's version is refused with
   :class:`NewerFormatRequiredError` (never applied as a misread binding);
4. anything malformed raises :class:`UndecodableRecordError` naming the offset.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from store.codec.errors import EventFormatError, NewerFormatRequiredError, UndecodableRecordError
from store.errors import InvalidRequestError
from store.events import (
    LATEST_FORMAT_VERSION,
    SUPPORTED_FORMAT_VERSIONS,
    ChangeEvent,
    Record,
    downcast_to,
    from_record,
    to_record,
    upcast,
)


def check_version(version: int, what: str) -> int:
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise ValueError(
            f"{what} {version} is not a format version this release knows "
            f"({list(SUPPORTED_FORMAT_VERSIONS)})"
        )
    return version


class EventCodec(ABC):
    """Turns change events into log values and back.

    ``writer_version`` is the format new values are written in: the log's finalized format
    version, so that readers of that version can decode everything written under it.
    """

    name: ClassVar[str]

    def __init__(self, *, writer_version: int = LATEST_FORMAT_VERSION) -> None:
        self.writer_version = check_version(writer_version, "writer_version")

    # --- the codec-specific parts ---------------------------------------------------------

    @abstractmethod
    def _encode_record(self, record: Record, version: int) -> bytes:
        """Serialize a record already in the shape of ``version``."""

    @abstractmethod
    def _decode_raw(self, value: bytes, *, offset: int, reader_version: int) -> tuple[int, Record]:
        """(writer version, record): the writer's shape, or the reader's if the writer is newer."""

    # --- the shared pipeline ---------------------------------------------------------------

    def encode(self, event: ChangeEvent, *, writer_version: int | None = None) -> bytes:
        """The log value for ``event`` in ``writer_version`` (default: this codec's).

        Raises :class:`EventFormatError` when the event needs a newer format than that.
        """
        version = self.writer_version if writer_version is None else writer_version
        check_version(version, "writer_version")
        if event.min_reader_version > version:
            raise EventFormatError(
                f"{type(event).__name__} needs event format {event.min_reader_version} but the "
                f"writer writes format {version}; finalize a newer format version first"
            )
        try:
            return self._encode_event(event, version)
        except UnicodeEncodeError as exc:
            raise InvalidRequestError(
                f"{type(event).__name__} holds a string that is not valid Unicode ({exc.reason}); "
                "use well-formed UTF-8 names and principals"
            ) from exc

    def _encode_event(self, event: ChangeEvent, version: int) -> bytes:
        """The value of an event already checked against ``version`` (codecs may specialise)."""
        return self._encode_record(downcast_to(to_record(event), version), version)

    def read_record(
        self, value: bytes, *, offset: int = -1, reader_version: int = LATEST_FORMAT_VERSION
    ) -> tuple[int, Record]:
        """(writer version, record in the shape of ``reader_version``), without interpreting it."""
        check_version(reader_version, "reader_version")
        writer_version, record = self._decode_raw(
            value, offset=offset, reader_version=reader_version
        )
        if writer_version < reader_version:
            record = upcast(record, from_version=writer_version, to_version=reader_version)
        return writer_version, record

    def decode(
        self, value: bytes, *, offset: int = -1, reader_version: int = LATEST_FORMAT_VERSION
    ) -> ChangeEvent:
        """The event in ``value``, as a reader of ``reader_version`` may apply it."""
        _, record = self.read_record(value, offset=offset, reader_version=reader_version)
        needed = record.get("minReaderVersion")
        if not isinstance(needed, int):
            raise UndecodableRecordError(
                "minReaderVersion is missing or not an integer", offset=offset
            )
        if needed > reader_version:
            raise NewerFormatRequiredError(
                offset=offset, needed=needed, reader_version=reader_version
            )
        try:
            event = from_record(upcast(record, from_version=reader_version))
        except (KeyError, ValueError, TypeError) as exc:
            raise UndecodableRecordError(f"{type(exc).__name__}: {exc}", offset=offset) from exc
        if not event.readable_by(reader_version):
            raise NewerFormatRequiredError(
                offset=offset, needed=event.min_reader_version, reader_version=reader_version
            )
        return event
