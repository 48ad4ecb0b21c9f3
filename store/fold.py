"""One reading of the change log: records in, typed changes out, under one policy.

Every consumer of the log (the admin's state, the replica's tailer and its fast path, the
Spark jobs) turns records into changes here, so a corrupt record, a record whose key and
value disagree, a tombstone and an event that needs a newer reader are treated the same way
everywhere (Kafka has one metadata loader for the same reason).

Pure: no I/O, no clock, picklable values only, so the functions run inside Spark's Python
workers as well as in a replica.  A record the policy does not let through raises a
:class:`~store.codec.RecordDecodeError` naming its offset; the caller decides whether that
stops it (a replica records a stop, the admin raises, a job fails its batch).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from store.acl import AclBinding
from store.codec import (
    ConfigKey,
    NewerFormatRequiredError,
    UndecodableRecordError,
    decode_event,
    event_key,
    parse_key,
)
from store.events import (
    LATEST_FORMAT_VERSION,
    SUPPORTED_FORMAT_VERSIONS,
    AclCreated,
    AclDeleted,
    ChangeEvent,
)
from store.log.base import LogRecord


class TooNewEvents(enum.Enum):
    """What a reader does with an event that needs a newer reader format than its own."""

    STOP = "stop"
    """Stop at the event until aclstore is upgraded or an operator skips it (the default)."""
    IGNORE = "ignore"
    """Treat its binding as absent and count it, as an older Kafka broker treats a PREFIXED ACL."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldPolicy:
    """How records become changes: the reader's format version, too-new events, skips.

    ``skip_offsets`` are offsets an operator explicitly chose to pass (a corrupt record is
    never passed silently).
    """

    reader_version: int = LATEST_FORMAT_VERSION
    too_new_events: TooNewEvents = TooNewEvents.STOP
    skip_offsets: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if self.reader_version not in SUPPORTED_FORMAT_VERSIONS:
            raise ValueError(
                f"reader_version {self.reader_version} is not one of {SUPPORTED_FORMAT_VERSIONS}"
            )
        if not isinstance(self.too_new_events, TooNewEvents):
            raise ValueError(f"too_new_events must be a TooNewEvents, got {self.too_new_events!r}")


class ChangeKind(enum.Enum):
    """What one record does to the state."""

    CREATED = "created"
    """``binding`` is live from this offset (an ``AclCreated``)."""
    DELETED = "deleted"
    """``binding`` is gone from this offset (an ``AclDeleted``, or a binding's tombstone)."""
    CONFIG = "config"
    """Setting ``config_name`` is ``config_value`` from here (None: reset to its default)."""
    IGNORED = "ignored"
    """Too new for this reader under :attr:`TooNewEvents.IGNORE`: the key's binding is absent
    (``binding`` is the binding the key names, so a newer DELETE still deletes), or nothing
    changes when the key names a setting (``binding`` is None)."""
    SKIPPED = "skipped"
    """An offset the operator chose to skip: nothing changes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One record, read: what it changes, at which offset and log time, and the event if any."""

    kind: ChangeKind
    offset: int
    timestamp_ms: int
    key: bytes
    binding: AclBinding | None = None
    config_name: str | None = None
    config_value: str | None = None
    event: ChangeEvent | None = None
    """The decoded event; None for tombstones, ignored and skipped records."""

    @property
    def is_tombstone(self) -> bool:
        return self.event is None and self.kind in (ChangeKind.DELETED, ChangeKind.CONFIG)


def _change(
    record: LogRecord,
    kind: ChangeKind,
    *,
    binding: AclBinding | None = None,
    config_name: str | None = None,
    config_value: str | None = None,
    event: ChangeEvent | None = None,
) -> Change:
    return Change(
        kind=kind,
        offset=record.offset,
        timestamp_ms=record.timestamp_ms,
        key=record.key,
        binding=binding,
        config_name=config_name,
        config_value=config_value,
        event=event,
    )


def key_mismatch(offset: int, key: bytes, expected: bytes) -> UndecodableRecordError:
    """The error for a record whose key is not the key of the event it holds."""
    return UndecodableRecordError(
        f"its key {key[:80]!r} is not the key of the event it holds ({expected[:80]!r}): the "
        "log is inconsistent",
        offset=offset,
    )


def fold_key(key: bytes, offset: int) -> AclBinding | ConfigKey:
    """The binding or setting a record's key names (raises with the offset if malformed)."""
    return parse_key(key, offset=offset)


def change_of_event(record: LogRecord, event: ChangeEvent) -> Change:
    """The change an event decoded from ``record`` makes (its key checked against the event)."""
    expected = event_key(event)
    if expected != record.key:
        raise key_mismatch(record.offset, record.key, expected)
    if isinstance(event, AclCreated):
        return _change(record, ChangeKind.CREATED, binding=event.binding, event=event)
    if isinstance(event, AclDeleted):
        return _change(record, ChangeKind.DELETED, binding=event.binding, event=event)
    return _change(
        record, ChangeKind.CONFIG, config_name=event.name, config_value=event.value, event=event
    )


def fold_record(record: LogRecord, policy: FoldPolicy = FoldPolicy()) -> Change:
    """Read one record under ``policy``.

    Raises :class:`~store.codec.RecordDecodeError` (with the record's offset) for a corrupt
    record, a malformed key, a key that disagrees with its event, and, under
    :attr:`TooNewEvents.STOP`, an event that needs a newer reader.
    """
    offset = record.offset
    if offset in policy.skip_offsets:
        return _change(record, ChangeKind.SKIPPED)
    if record.value is None:
        target = fold_key(record.key, offset)
        if isinstance(target, ConfigKey):
            return _change(record, ChangeKind.CONFIG, config_name=target.name)
        return _change(record, ChangeKind.DELETED, binding=target)
    try:
        event = decode_event(record.value, offset=offset, reader_version=policy.reader_version)
    except NewerFormatRequiredError:
        if policy.too_new_events is TooNewEvents.STOP:
            raise
        target = fold_key(record.key, offset)
        binding = None if isinstance(target, ConfigKey) else target
        return _change(record, ChangeKind.IGNORED, binding=binding)
    return change_of_event(record, event)


def fold_records(records: Iterable[LogRecord], policy: FoldPolicy = FoldPolicy()) -> Iterator[Change]:
    """:func:`fold_record` over ``records`` in order; the first refused record raises."""
    for record in records:
        yield fold_record(record, policy)
