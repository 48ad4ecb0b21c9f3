"""The history package's errors: one root, under the store's root so the CLI reports them."""

from __future__ import annotations

from store.errors import StoreError


class HistoryError(StoreError):
    """Root of the errors of :mod:`jobs.history`."""


class ArchiveStoppedError(HistoryError):
    """The archive met a record it must not pass; ``offset`` says which (nothing after it is
    archived, everything before it is)."""

    def __init__(self, message: str, *, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class BeforeHistoryError(HistoryError):
    """A time before the first change the archive and the log hold."""


class NoHistoryError(HistoryError):
    """Neither the archive nor the log holds any change yet."""
