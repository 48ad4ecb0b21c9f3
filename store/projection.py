"""The live ACL set and settings, projected from change-log records in offset order.

Pure: records in, state out, read through the store's one fold (:mod:`store.fold`, as
the replica and the Spark jobs read them) and applied through the one replay interface
(:mod:`store.replay`).  A record this release cannot read raises its
:class:`~store.codec.RecordDecodeError` (naming the offset) and leaves the state at the
record before it; only an explicit ``skip_offsets`` entry lets the projection pass it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from store.acl import AclBinding
from store.authorizer import InMemoryAclIndex
from store.events import LATEST_FORMAT_VERSION, ChangeEvent
from store.fold import Change, ChangeKind, FoldPolicy, change_of_event, fold_record
from store.log.base import LogRecord
from store.replay import replay_one
from store.settings import StoreSettings


class AclStoreState:
    """Bindings (an :class:`InMemoryAclIndex`), settings, and the next offset to apply.

    A state the log is folded into (:class:`store.replay.AclReplay`): every record reaches
    it through :func:`store.replay.replay_one`.
    """

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
        policy = replace(self._policy, skip_offsets=skip_offsets) if skip_offsets else self._policy
        for record in records:
            offset = record.offset
            if offset < self.next_offset:
                continue
            if known is not None and offset in known and offset not in skip_offsets:
                change = self._known(record.key, offset, known[offset][1])
            else:
                change = fold_record(record, policy)
            replay_one(change, self)
            self.next_offset = offset + 1

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
            replay_one(self._known(key, offset, event), self)
            offset = self.next_offset = offset + 1

    def _known(self, key: bytes, offset: int, event: ChangeEvent | None) -> Change:
        """The change of a record this process wrote (its log time is not known here)."""
        if event is None:
            return fold_record(LogRecord(offset, key, None, 0), self._policy)
        return change_of_event(LogRecord(offset, key, None, 0), event)

    # --- the replay interface (store.replay.AclReplay) ---------------------------------------

    def load_snapshot(self, bindings: Iterable[AclBinding], settings: Mapping[str, str], offset: int) -> None:
        self.index = InMemoryAclIndex(bindings)
        self.configs = dict(settings)
        self.next_offset = offset + 1

    def add_acl(self, binding: AclBinding, at: Change) -> None:
        self.index.add(binding)

    def remove_acl(self, binding: AclBinding, at: Change) -> None:
        self.index.remove(binding)

    def alter_config(self, name: str, value: str | None, at: Change) -> None:
        if value is None:
            self.configs.pop(name, None)
        else:
            self.configs[name] = value

    def pass_over(self, at: Change) -> None:
        if at.kind is ChangeKind.SKIPPED:
            self.skipped.append(at.offset)

    def bindings(self) -> list[AclBinding]:
        return sorted(self.index.bindings())
