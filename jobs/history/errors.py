"""The history package's errors: one root, under the jobs' root so the CLI reports them."""

from __future__ import annotations

from jobs.common.errors import JobError


class HistoryError(JobError):
    """Root of the errors of :mod:`jobs.history`."""


class ArchiveStoppedError(HistoryError):
    """The archive met a record it must not pass; ``offset`` says which (nothing after it is
    archived, everything before it is)."""

    def __init__(self, message: str, *, offset: int) -> None:
        super().__init__(message)
        self.offset = offset

    @classmethod
    def at(cls, offset: int, refusal: str) -> ArchiveStoppedError:
        """The archive stopped by the fold's ``refusal`` of the record at ``offset``."""
        return cls(
            f"the archive stopped at offset {offset}: {refusal}; everything before it is archived. "
            "Fix or skip that record in the log, then run the archive again",
            offset=offset,
        )


class BeforeHistoryError(HistoryError):
    """A time before the first change the archive and the log hold."""


class NoHistoryError(HistoryError):
    """Neither the archive nor the log holds any change yet."""
