"""The tailing loop: read the change log from the index's applied offset + 1, apply in batches.

Each step reads up to ``batch_records`` records through the store's one fold
(:mod:`store.fold`, and its fast path :mod:`store.fold_fast` for plain ACL events), hands
the changes to an index batch through the one replay driver (:func:`store.replay.replay_one`;
the fast path's plain creates and deletes go to the batch already encoded), and commits them
together with the new applied offset in one RocksDB ``WriteBatch`` (:mod:`replicator.index`).
Before the first step, :meth:`Tailer.check_start` compares the stored offset with the log's watermarks
(quix-streams' ``state/recovery.py`` does the same check but corrects the offset with a
warning; we refuse and tell the operator to rebuild, because a replica ahead of its log or
missing records would answer from a state no log position describes).

A record the replica cannot apply stops it there (:class:`replicator.index.StopRecord`):
everything before it is committed, nothing after it is applied.  Which records stop it:

* undecodable values and malformed keys (``store.codec.UndecodableRecordError``);
* events that need a newer reader format (``NewerFormatRequiredError``), unless the
  ``too_new_events`` policy is IGNORE, in which case the binding is treated as absent
  (its log key is removed, so a DELETE still deletes) and the event is counted;
* events whose content disagrees with their key (all three as :func:`store.fold.fold_record`
  refuses them, the same way for every reader of the log);
* settings the decision rules refuse (a check on the replica's state, so it stays here).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from replicator.encoding import encode_fields
from replicator.errors import StoredOffsetOutOfRangeError
from replicator.index import (
    AclIndex,
    IndexBatch,
    IndexPosition,
    LogAnchor,
    StopRecord,
)
from store.authorizer import AuthorizerConfig
from store.codec import RecordDecodeError
from store.errors import StoreError
from store.events import LATEST_FORMAT_VERSION
from store.fold import ChangeKind, FoldPolicy, TooNewEvents, fold_record, key_mismatch
from store.fold_fast import FastAclDecoder
from store.log.base import ChangeLog, LogOffsetOutOfRangeError, LogRecord
from store.replay import replay_one


@dataclass(frozen=True, slots=True, kw_only=True)
class TailerSettings:
    """How the tailer reads and applies; validated on construction."""

    reader_version: int = LATEST_FORMAT_VERSION
    too_new_events: TooNewEvents = TooNewEvents.STOP
    batch_records: int = 5000
    poll_timeout_s: float = 0.1
    max_resume_age_ms: int | None = None
    """Refuse to resume an index whose last applied record is older than this while the log
    has moved on: set it to the log's ``delete.retention.ms`` (plus ``min.compaction.lag.ms``)
    so that a replica that may have missed a compacted-away tombstone rebuilds instead."""

    def __post_init__(self) -> None:
        self.fold_policy()  # validates reader_version and too_new_events as the fold does
        if self.batch_records < 1 or self.poll_timeout_s < 0:
            raise ValueError("batch_records must be >= 1 and poll_timeout_s >= 0")
        if self.max_resume_age_ms is not None and self.max_resume_age_ms < 0:
            raise ValueError("max_resume_age_ms must be >= 0")

    def fold_policy(self) -> FoldPolicy:
        """How this tailer's records are read (:mod:`store.fold`)."""
        return FoldPolicy(reader_version=self.reader_version, too_new_events=self.too_new_events)


class _Stop(Exception):
    """Raised inside a batch at the first record that cannot be applied."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one :meth:`Tailer.step` did."""

    records: int
    position: IndexPosition
    stopped: StopRecord | None


class Tailer:
    """Applies the change log to an :class:`AclIndex`, one batch per :meth:`step`.

    Not thread-safe: one thread steps a tailer (the replica's), and operator skips are
    serialized with steps by the caller.
    """

    def __init__(self, index: AclIndex, log: ChangeLog, settings: TailerSettings) -> None:
        if settings.reader_version != index.reader_version:
            raise ValueError(
                f"the index reads format v{index.reader_version}, the tailer "
                f"v{settings.reader_version}: open both with the same reader_version"
            )
        self.index = index
        self.log = log
        self.settings = settings
        self._fast = FastAclDecoder(settings.reader_version)
        self._policy = settings.fold_policy()

    def check_start(self, *, now_ms: int | None = None) -> tuple[int, int]:
        """Check the stored offset against the log's watermarks; return them (low, high).

        Raises :class:`StoredOffsetOutOfRangeError` when the index is ahead of the log's end
        (the topic was recreated or truncated) or when records right after the applied
        offset were removed before being applied (retention, or a log rebuilt without them).
        """
        low, high = self.log.watermarks()
        applied = self.index.position.offset
        if applied < 0:
            return low, high
        fix = (
            "Rebuild the replica from the compacted log: stop it, delete its index directory "
            f"({self.index.path}) and start it again."
        )
        if applied >= high:
            raise StoredOffsetOutOfRangeError(
                f"the index has applied offset {applied} but the log ends before it (next "
                f"offset {high}): the log was recreated or truncated. {fix}",
                applied_offset=applied, low=low, high=high,
            )
        if applied + 1 < low:
            raise StoredOffsetOutOfRangeError(
                f"the index has applied offset {applied} but the log now starts at {low}: "
                f"records {applied + 1}..{low - 1} were removed before this replica applied "
                f"them. {fix}",
                applied_offset=applied, low=low, high=high,
            )
        self._check_anchor(fix)
        max_age = self.settings.max_resume_age_ms
        if max_age is not None and applied < high - 1:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            age = now - self.index.position.timestamp_ms
            if age > max_age:
                raise StoredOffsetOutOfRangeError(
                    f"the index's last applied record (offset {applied}) is {age} ms old, more "
                    f"than max_resume_age_ms={max_age}: compaction may have removed tombstones "
                    f"it never saw. {fix}",
                    applied_offset=applied, low=low, high=high,
                )
        return low, high

    def _check_anchor(self, fix: str) -> None:
        """The log must still show, at its offset, the last record the index applied.

        Watermarks alone miss a topic recreated and refilled past the index's offset.  If
        compaction removed the anchor record since, the check is inconclusive and passes.
        """
        anchor = self.index.anchor
        if anchor is None:
            return
        found = self.log.read(anchor.offset, max_records=1, timeout=5.0)
        if not found or found[0].offset != anchor.offset:
            return
        record = found[0]
        if (record.key, record.timestamp_ms) != (anchor.key, anchor.timestamp_ms):
            low, high = self.log.watermarks()
            raise StoredOffsetOutOfRangeError(
                f"the log record at offset {anchor.offset} (key {record.key[:60]!r}, time "
                f"{record.timestamp_ms}) is not the one this index applied there (key "
                f"{anchor.key[:60]!r}, time {anchor.timestamp_ms}): the log was replaced. {fix}",
                applied_offset=self.index.position.offset, low=low, high=high,
            )

    def step(self, *, timeout: float | None = None) -> StepResult:
        """Read and apply one batch; a no-op result when the log has nothing new."""
        position = self.index.position
        wait = self.settings.poll_timeout_s if timeout is None else timeout
        try:
            records = self.log.read(
                position.offset + 1, max_records=self.settings.batch_records, timeout=wait
            )
        except LogOffsetOutOfRangeError as exc:
            low, high = self.log.watermarks()
            raise StoredOffsetOutOfRangeError(
                f"the log no longer has offset {position.offset + 1} ({exc}). Rebuild the "
                f"replica from the compacted log: delete {self.index.path} and start it again.",
                applied_offset=position.offset, low=low, high=high,
            ) from exc
        if not records:
            return StepResult(0, position, self.index.stopped)
        return self.apply(records)

    def apply(self, records: Sequence[LogRecord]) -> StepResult:
        """Apply ``records`` (consecutive reads of the log, in offset order) to the index."""
        batch = self.index.batch()
        batch.prefetch([r.key for r in records])
        applied: LogRecord | None = None
        count = 0
        stop: StopRecord | None = None
        for record in records:
            try:
                # Checks come before any change to the batch, so a stopped record leaves
                # nothing of itself behind.
                self._apply_one(batch, record)
            except _Stop as exc:
                stop = StopRecord(
                    offset=exc.offset, reason=exc.reason, recorded_ms=int(time.time() * 1000)
                )
                break
            applied = record
            count += 1
        position = self.index.position
        anchor = None if applied is None else _anchor(applied)
        if stop is not None:
            # Everything before the stopped record is applied; the gap right before it
            # (compacted offsets) is part of what is applied.
            if stop.offset - 1 > position.offset:
                timestamp = applied.timestamp_ms if applied is not None else position.timestamp_ms
                position = batch.commit(
                    offset=stop.offset - 1, timestamp_ms=timestamp, anchor=anchor
                )
            self.index.record_stop(stop)
            return StepResult(count, position, stop)
        assert applied is not None
        position = batch.commit(
            offset=applied.offset, timestamp_ms=applied.timestamp_ms, anchor=anchor
        )
        return StepResult(len(records), position, None)

    def _apply_one(self, batch: IndexBatch, record: LogRecord) -> None:
        offset = record.offset
        if record.value is not None:
            fast = self._fast.decode(record.value, offset)
            if fast is not None:
                if fast.key != record.key:
                    raise _Stop(offset, key_mismatch(offset, record.key, fast.key).message)
                if fast.created:
                    batch.create_encoded(
                        record.key,
                        encode_fields(
                            fast.resource_type, fast.pattern_type, fast.name, fast.principal,
                            fast.host, fast.operation, fast.permission_type,
                        ),
                    )
                else:
                    batch.remove(record.key)
                return
        try:
            change = fold_record(record, self._policy)
        except RecordDecodeError as exc:
            raise _Stop(offset, exc.message) from exc
        if change.kind is ChangeKind.CONFIG:
            assert change.config_name is not None
            self._check_config(batch, offset, change.config_name, change.config_value)
        # an IGNORED binding is removed (absent, and a newer DELETE still deletes), then counted
        replay_one(change, batch)

    def _check_config(self, batch: IndexBatch, offset: int, name: str, value: str | None) -> None:
        settings = {**self.index.config, **batch.config_set}
        for key in batch.config_removed:
            settings.pop(key, None)
        if value is None:
            settings.pop(name, None)
        else:
            settings[name] = value
        try:
            AuthorizerConfig.from_properties(settings, ignore_unknown=True)
        except (StoreError, ValueError) as exc:
            raise _Stop(
                offset,
                f"the setting at offset {offset} is refused by the authorizer: {exc}. Correct it "
                "with a new ConfigAltered event, then skip this offset explicitly",
            ) from exc


def _anchor(record: LogRecord) -> LogAnchor:
    return LogAnchor(offset=record.offset, timestamp_ms=record.timestamp_ms, key=record.key)
