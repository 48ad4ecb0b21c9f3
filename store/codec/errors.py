"""Errors of reading and writing change events.

Every decode error names the log offset of the record, so that no reader can skip a record it
cannot read without saying which one (a replica stops there; an operator decides).
"""

from __future__ import annotations

from store.errors import KafkaErrorCode, StoreError


class RecordDecodeError(StoreError):
    """A log record that this reader cannot turn into an event; ``offset`` says which."""

    error_code = KafkaErrorCode.KAFKA_STORAGE_ERROR

    def __init__(self, message: str, *, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def _where(offset: int) -> str:
    return f"at offset {offset}" if offset >= 0 else "(offset not given)"


class UndecodableRecordError(RecordDecodeError):
    """The record is corrupt or is not a change event at all."""

    def __init__(self, reason: str, *, offset: int) -> None:
        super().__init__(
            f"the log record {_where(offset)} cannot be decoded: {reason}; the record is "
            "corrupt or was not written by aclstore. Inspect it, then either restore the log "
            "or skip this offset explicitly",
            offset=offset,
        )
        self.reason = reason


class UnknownWriterSchemaError(UndecodableRecordError):
    """The record names (by fingerprint) a writer schema this release does not ship."""

    def __init__(self, fingerprint: int, *, offset: int, known: list[int]) -> None:
        super().__init__(
            f"its writer schema fingerprint {fingerprint:#018x} is none of the schema versions "
            f"this release ships {known} (a newer release wrote it: upgrade this reader)",
            offset=offset,
        )
        self.fingerprint = fingerprint


class NewerFormatRequiredError(RecordDecodeError):
    """The record decodes, but it needs a newer reader format than this reader's.

    Applying it anyway is KIP-290's downgrade hazard: a reader without pattern types would take
    a PREFIXED binding for a LITERAL one, or drop a prefixed DENY.
    """

    error_code = KafkaErrorCode.UNSUPPORTED_VERSION

    def __init__(self, *, offset: int, needed: int, reader_version: int) -> None:
        super().__init__(
            f"the log record {_where(offset)} needs reader format version {needed}, but this "
            f"reader understands format {reader_version}: upgrade the reader (or configure it to "
            "ignore newer events explicitly)",
            offset=offset,
        )
        self.needed = needed
        self.reader_version = reader_version


class EventFormatError(StoreError):
    """An event cannot be written in the requested format version (it needs a newer one)."""

    error_code = KafkaErrorCode.UNSUPPORTED_VERSION
