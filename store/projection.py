"""The live ACL set and settings, projected from change-log records in offset order.

Pure: records in, state out, read through the store's one fold (:mod:`store.fold`, as
the replica and the Spark jobs read them).  A record this release cannot read raises its
:class:`~store.codec.RecordDecodeError` (naming the offset) and leaves the state at the
record before it; only an explicit ``skip_offsets`` entry lets the projection pass it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from store.acl import AclBinding
from store.authorizer import InMemoryAclIndex
from store.events import LATEST_FORMAT_VERSION, AclCreated, AclDeleted, ChangeEvent
from store.fold import Change, ChangeKind, FoldPolicy, fold_record
from store.log.base import LogRecord
from store.settings import StoreSettings


class AclStoreState:
    """Bindings (an :class:`InMemoryAclIndex`), settings, and the next offset to apply."""

    def __init__(self, *, reader_version: int = LATEST_FORMAT_VERSION) -> None:
        self.index = InMemoryAclIndex()
        self.configs: dict[str, str] = {}
        self.next_offset = 0
        self.reader_version = reader_version
        self.skipped: list[int] = []
        self._policy = FoldPolicy(reader_version=reader_version)

    @property
    def offset(self) -> int:
        """The last offset the state reflects (-1 before the first record)."""
        return self.next_offset - 1

    @property
    def settings(self) -> StoreSettings:
        return StoreSettings(dict(self.configs))

    def apply_records(
        self,
        records: Iterable[LogRecord],
        *,
        known: Mapping[int, tuple[bytes, ChangeEvent | None]] | None = None,
        skip_offsets: frozenset[int] = frozenset(),
    ) -> None:
        """Apply records in offset order.

        ``known`` maps offsets this process wrote itself to their key and event (None for a
        tombstone), which saves decoding them again.
        """
        for record in records:
            if record.offset < self.next_offset:
                continue
            if record.offset in skip_offsets:
                self.skipped.append(record.offset)
            elif known is not None and record.offset in known:
                self._apply_known(record.key, record.offset, known[record.offset][1])
            else:
                self._apply(record)
            self.next_offset = record.offset + 1

    def apply_written(
        self,
        written: Mapping[int, tuple[bytes, ChangeEvent | None]],
        *,
        end: int,
        skip_offsets: frozenset[int] = frozenset(),
    ) -> None:
        """Apply, without reading them back, the records from ``next_offset`` this process wrote.

        ``written`` maps offsets the log acknowledged to this process's appends to their key
        and event (None for a tombstone).  Offsets are unique in the log, so the record at an
        acknowledged offset is the one appended: the run of such offsets starting at
        ``next_offset`` (and before ``end``) is applied as if read; the first offset not in
        ``written`` (another writer's record) or in ``skip_offsets`` ends the run.
        """
        offset = self.next_offset
        while offset < end and offset in written and offset not in skip_offsets:
            key, event = written[offset]
            self._apply_known(key, offset, event)
            offset = self.next_offset = offset + 1

    def _apply_known(self, key: bytes, offset: int, event: ChangeEvent | None) -> None:
        if event is None:
            self.apply_change(fold_record(LogRecord(offset, key, None, 0), self._policy))
        else:
            self.apply_event(event)

    def _apply(self, record: LogRecord) -> None:
        self.apply_change(fold_record(record, self._policy))

    def apply_change(self, change: Change) -> None:
        """Apply one change read by :func:`store.fold.fold_record`."""
        kind = change.kind
        if kind is ChangeKind.CREATED:
            assert change.binding is not None
            self.index.add(change.binding)
        elif kind is ChangeKind.DELETED:
            assert change.binding is not None
            self.index.remove(change.binding)
        elif kind is ChangeKind.CONFIG:
            assert change.config_name is not None
            if change.config_value is None:
                self.configs.pop(change.config_name, None)
            else:
                self.configs[change.config_name] = change.config_value

    def apply_event(self, event: ChangeEvent) -> None:
        if isinstance(event, AclCreated):
            self.index.add(event.binding)
        elif isinstance(event, AclDeleted):
            self.index.remove(event.binding)
        elif event.value is None:
            self.configs.pop(event.name, None)
        else:
            self.configs[event.name] = event.value

    def bindings(self) -> list[AclBinding]:
        return sorted(self.index.bindings())
