"""Who brought each binding to its state: the log folded into the live bindings, each with the
change that created it, and the bindings deleted, each with the change that deleted it.

A state the log is folded into (:class:`store.replay.AclReplay`, fed by :mod:`store.fold`), so
``drift`` reads records as the admin and the replica do.  A compacted log keeps each key's
latest record: a live binding's creation, and a deleted one's ``AclDeleted`` until the
topic's ``delete.retention.ms`` passes (its tombstone then carries no actor).  Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from store.acl import AclBinding
from store.fold import Change, ChangeKind
from store.replay import replay_one
from store.settings import CHANGE_REFERENCE_CONFIG


@dataclass(frozen=True, slots=True)
class Origin:
    """The change a binding's state comes from: its offset, log time, actor (None when only a
    tombstone or a snapshot says it) and event time."""

    offset: int
    timestamp_ms: int
    actor: str | None
    time_ms: int | None
    request_id: str | None = None

    @classmethod
    def of(cls, change: Change) -> Origin:
        event = change.event
        return cls(
            offset=change.offset,
            timestamp_ms=change.timestamp_ms,
            actor=None if event is None else event.actor,
            time_ms=None if event is None else event.time_ms,
            request_id=None if event is None else event.request_id,
        )

    @property
    def when_ms(self) -> int:
        return self.time_ms if self.time_ms is not None else self.timestamp_ms


class Attribution:
    """Live bindings with their :class:`Origin`, deleted ones with theirs, and the offset."""

    def __init__(self) -> None:
        self.live: dict[AclBinding, Origin] = {}
        self.deleted: dict[AclBinding, Origin] = {}
        self.references: dict[str, str] = {}
        """Request id -> the ``acl.change.reference`` its batch wrote (``apply --reference``)."""
        self.next_offset = 0

    def reference_of(self, origin: Origin | None) -> str | None:
        """The reference the batch of ``origin`` named, if any."""
        if origin is None or origin.request_id is None:
            return None
        return self.references.get(origin.request_id)

    @property
    def offset(self) -> int:
        return self.next_offset - 1

    def apply(self, changes: Iterable[Change]) -> list[AclBinding]:
        """Fold ``changes`` (in offset order); the bindings whose state they changed."""
        touched: list[AclBinding] = []
        for change in changes:
            if change.offset < self.next_offset:
                continue
            replay_one(change, self)
            if change.binding is not None and change.kind in (ChangeKind.CREATED, ChangeKind.DELETED):
                touched.append(change.binding)
            self.next_offset = change.offset + 1
        return touched

    # --- the replay interface (store.replay.AclReplay) ---------------------------------------

    def load_snapshot(self, bindings: Iterable[AclBinding], settings: Mapping[str, str], offset: int) -> None:
        origin = Origin(offset=offset, timestamp_ms=0, actor=None, time_ms=None)
        self.live = dict.fromkeys(bindings, origin)
        self.deleted = {}
        self.next_offset = offset + 1

    def add_acl(self, binding: AclBinding, at: Change) -> None:
        self.live[binding] = Origin.of(at)
        self.deleted.pop(binding, None)

    def remove_acl(self, binding: AclBinding, at: Change) -> None:
        self.live.pop(binding, None)
        if at.event is not None or binding not in self.deleted:  # a tombstone keeps the delete's actor
            self.deleted[binding] = Origin.of(at)

    def alter_config(self, name: str, value: str | None, at: Change) -> None:
        if name == CHANGE_REFERENCE_CONFIG and value is not None and at.event is not None:
            self.references[at.event.request_id] = value

    def pass_over(self, at: Change) -> None:
        return None
