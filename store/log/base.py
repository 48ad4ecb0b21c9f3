"""The change log's contract: one small interface that every backend honours.

Offsets are a total order over every change and serve as consistency tokens: a reader that
has applied offset N reflects every change up to N.  A backend never reports success for a
record it has not durably stored (STYLE: a produce is never fire-and-forget).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from store.errors import InvalidConfigError, KafkaErrorCode, StoreError


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record as stored: its offset, key, value (None is a tombstone) and time."""

    offset: int
    key: bytes
    value: bytes | None
    timestamp_ms: int


@runtime_checkable
class ChangeLog(Protocol):
    """A single ordered, compacted log of change records (Kafka partition 0, or SQLite)."""

    def append(
        self, records: Sequence[tuple[bytes, bytes | None]], *, timeout: float = 10.0
    ) -> list[int]:
        """Durably append; return each record's offset only after the backend acknowledged it.

        Kafka: an idempotent producer with ``acks=all``.  Raises :class:`LogUnavailableError`
        on timeout or failure; it never reports unacknowledged success.
        """
        ...

    def read(
        self, from_offset: int, *, max_records: int = 10_000, timeout: float = 1.0
    ) -> list[LogRecord]:
        """Records with offset >= ``from_offset`` in offset order (may be fewer; empty on timeout).

        Offsets removed by compaction are simply absent.  ``from_offset`` above the high
        watermark raises :class:`LogOffsetOutOfRangeError`.
        """
        ...

    def watermarks(self, *, timeout: float = 10.0) -> tuple[int, int]:
        """(low, high): the log start offset and the next offset to be written."""
        ...

    def close(self) -> None: ...


class LogUnavailableError(StoreError):
    """The log did not acknowledge (or answer) within the timeout; nothing is reported as done.

    After a failed append the outcome of its records is unknown: some may have been stored.
    Retrying is safe for the admin API, which writes nothing for a binding already live.
    """

    error_code = KafkaErrorCode.REQUEST_TIMED_OUT


class LogOffsetOutOfRangeError(StoreError):
    """A read asked for an offset beyond the end of the log (a different or recreated log?)."""

    error_code = KafkaErrorCode.INVALID_REQUEST


class LogConfigError(InvalidConfigError):
    """The log exists with settings the store cannot work with (e.g. not compacted)."""


class LogNotCompactedError(LogConfigError):
    """Compaction was asked of a log whose cleanup policy is ``delete`` (the audit log)."""
