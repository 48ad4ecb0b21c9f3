"""Errors of the replica: one root, one subclass per condition, each naming the fix.

A replica refuses to answer rather than answer from a state it cannot attribute to a
position of the log (issue 5, "fail closed").  The not-ready condition is Kafka's own
``AuthorizerNotReadyException`` (:class:`store.errors.AuthorizerNotReadyError`), raised by
the decision rules; everything else the replica reports is a :class:`ReplicaError`.
"""

from __future__ import annotations

from store.errors import KafkaErrorCode, StoreError


class ReplicaError(StoreError):
    """Root of every error raised by the ``replicator`` package's replica."""


class IndexOpenError(ReplicaError):
    """The RocksDB index directory cannot be opened (locked by another process, damaged)."""

    error_code = KafkaErrorCode.KAFKA_STORAGE_ERROR


class IndexRebuildRequiredError(ReplicaError):
    """The stored index cannot be used as it is: its layout or its reader format differs.

    The fix is always the same: delete the index directory (``aclstore serve --rebuild-index``,
    or :meth:`replicator.replica.Replica.discard_index`) so the replica bootstraps from the
    compacted log.
    """

    error_code = KafkaErrorCode.KAFKA_STORAGE_ERROR


class IndexCorruptError(IndexRebuildRequiredError):
    """A file of the index fails RocksDB's checksums or cannot be read whole: the index cannot
    say which bindings it holds, so the replica refuses to serve from it.  ``path`` is the
    index directory; the fix is a rebuild from the log (``aclstore serve --rebuild-index``)."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class IndexStorageFullError(ReplicaError):
    """The file system under the index has too little space left for the next batch: the
    replica writes nothing (RocksDB would turn read-only after a failed write), keeps
    answering from what it applied, and tries again until space returns."""

    error_code = KafkaErrorCode.KAFKA_STORAGE_ERROR

    def __init__(self, message: str, *, path: str, free_bytes: int, needed_bytes: int) -> None:
        super().__init__(message)
        self.path = path
        self.free_bytes = free_bytes
        self.needed_bytes = needed_bytes


class StoredOffsetOutOfRangeError(IndexRebuildRequiredError):
    """The index's applied offset does not fit the log's watermarks (quix-streams'
    ``InvalidStoredOffset``, but never silently corrected): the topic was recreated or
    truncated, or retention removed records the index never applied."""

    def __init__(self, message: str, *, applied_offset: int, low: int, high: int) -> None:
        super().__init__(message)
        self.applied_offset = applied_offset
        self.low = low
        self.high = high


class ReplicaStoppedError(ReplicaError):
    """The replica stopped at a record it cannot apply: undecodable, or needing a newer format.

    It resumes after an upgrade of aclstore, or after an operator records a skip of exactly
    ``offset`` (``Replica.skip(offset, ...)``), which is kept in the index's metadata.
    """

    def __init__(self, message: str, *, offset: int, reason: str) -> None:
        super().__init__(message)
        self.offset = offset
        self.reason = reason


class SkipRefusedError(ReplicaError):
    """An operator skip names an offset the replica is not stopped at."""

    error_code = KafkaErrorCode.INVALID_REQUEST


class ConsistencyTimeoutError(ReplicaError):
    """The replica did not reach a requested minimum offset within the wait bound.

    ``reached`` is the offset the replica has applied; the caller may retry later or ask a
    replica that is further along (Zanzibar's "at least as fresh as" tokens).
    """

    error_code = KafkaErrorCode.REQUEST_TIMED_OUT

    def __init__(self, message: str, *, min_offset: int, reached: int) -> None:
        super().__init__(message)
        self.min_offset = min_offset
        self.reached = reached


class ReplicaClosedError(ReplicaError):
    """The replica was closed; open a new one."""
