"""What the index reports about itself: its log position, the last record it applied, where
it stopped, the operator's skips and its counters.  Plain frozen values, no I/O."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexPosition:
    """The point of the log the index reflects: every record up to ``offset`` is applied.

    ``offset`` is -1 before anything was applied; ``timestamp_ms`` is the log timestamp of
    the last applied record (-1 when none).
    """

    offset: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LogAnchor:
    """The identity of the last record applied: the log must still show it at ``offset``."""

    offset: int
    timestamp_ms: int
    key: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class StopRecord:
    """Where and why the replica stopped: the first record it could not apply."""

    offset: int
    reason: str
    recorded_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SkipRecord:
    """An operator's decision to pass over one record the replica stopped at."""

    offset: int
    reason: str
    actor: str
    stop_reason: str
    recorded_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexCounters:
    bindings: int
    ignored_events: int
    skipped_records: int
