"""Log records to events, through the one fold of the log: pure, picklable.

Records are read through :func:`store.fold.fold_record`, so every job treats a corrupt,
mismatched or too-new record exactly as a replica does: the fold refuses it, naming the
offset.  A binding's tombstone reads as ``ACL_DELETED`` and a setting's as ``CONFIG_ALTERED``
back to its default, without actor.  The jobs' Spark readings of whole micro-batches
(:mod:`jobs.common.spark_decode`, :mod:`jobs.common.worker`) come down to the same function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jobs.common.events import ACL_CREATED, ACL_DELETED, CONFIG_ALTERED, HistoryEvent
from store.codec import RecordDecodeError
from store.fold import ChangeKind, FoldPolicy, fold_record
from store.log.base import LogRecord

_DEFAULT_POLICY = FoldPolicy()


def history_event(
    key: bytes,
    value: bytes | None,
    offset: int,
    timestamp_ms: int,
    policy: FoldPolicy = _DEFAULT_POLICY,
) -> HistoryEvent | None:
    """The event one record archives, or None for a record the policy skips or ignores."""
    change = fold_record(
        LogRecord(offset, bytes(key), None if value is None else bytes(value), timestamp_ms), policy
    )
    event = change.event
    actor = None if event is None else event.actor
    request_id = None if event is None else event.request_id
    if change.kind is ChangeKind.CREATED or change.kind is ChangeKind.DELETED:
        return HistoryEvent(
            offset=offset,
            time_ms=timestamp_ms,
            type=ACL_CREATED if change.kind is ChangeKind.CREATED else ACL_DELETED,
            binding=change.binding,
            actor=actor,
            request_id=request_id,
        )
    if change.kind is ChangeKind.CONFIG:
        return HistoryEvent(
            offset=offset,
            time_ms=timestamp_ms,
            type=CONFIG_ALTERED,
            config_name=change.config_name,
            config_value=change.config_value,
            actor=actor,
            request_id=request_id,
        )
    return None


@dataclass(frozen=True, slots=True)
class Refused:
    """A record the fold refuses: its offset and the fold's message (which names it)."""

    offset: int
    message: str


def decode_batch(rows: Sequence[Any]) -> tuple[list[HistoryEvent], Refused | None]:
    """The events of ``(key, value, offset, timestampMs)`` rows in offset order, up to the
    first record the fold refuses (returned with them: the caller stops there in its own
    words)."""
    events: list[HistoryEvent] = []
    for key, value, offset, timestamp_ms in rows:
        try:
            event = history_event(key, value, offset, timestamp_ms)
        except RecordDecodeError as exc:
            return events, Refused(offset, str(exc))
        if event is not None:
            events.append(event)
    return events, None
