"""The answers of the history questions: frozen values with their JSON documents (issue 10).

Pure, no Spark: the CLI renders these and the tests compare them with a replay.  Times are
epoch milliseconds in the values and ISO-8601 UTC (plus the milliseconds) in JSON; a binding
is the list of its seven Kafka fields, as in the conformance vectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from jobs.history.timeparse import format_time
from store.access_diff import AccessDiff
from store.acl import AclBinding
from store.fold import ChangeKind

ACL_CREATED: Final = "ACL_CREATED"
ACL_DELETED: Final = "ACL_DELETED"
CONFIG_ALTERED: Final = "CONFIG_ALTERED"
EVENT_TYPES: Final = (ACL_CREATED, ACL_DELETED, CONFIG_ALTERED)
_KINDS: Final = {
    ACL_CREATED: ChangeKind.CREATED, ACL_DELETED: ChangeKind.DELETED, CONFIG_ALTERED: ChangeKind.CONFIG,
}  # fmt: skip

EVERY_PRINCIPAL: Final = "User:*"
"""The principal of a :class:`WhoEntry` that stands for every principal."""


def _time(ms: int | None) -> str | None:
    return None if ms is None else format_time(ms)


def binding_json(binding: AclBinding) -> list[str]:
    """``[resourceType, name, patternType, principal, host, operation, permission]``."""
    return list(binding.fields())


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEvent:
    """One change of the log as archived: a binding created or deleted, or a setting altered.

    A tombstone of a binding reads as ``ACL_DELETED`` and one of a setting as
    ``CONFIG_ALTERED`` with ``config_value`` None (back to its default), without actor.
    An archived form of a folded record (:class:`store.replay.Folded`): the history's
    states are told about it through :func:`store.replay.replay`, and keep it as the
    position of what it changed.
    """

    offset: int
    time_ms: int
    type: str
    binding: AclBinding | None = None
    config_name: str | None = None
    config_value: str | None = None
    actor: str | None = None
    request_id: str | None = None

    @property
    def kind(self) -> ChangeKind:
        """What the event changes, as the fold names it (:class:`store.fold.ChangeKind`)."""
        return _KINDS[self.type]

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"offset": self.offset, "time": _time(self.time_ms), "type": self.type}
        if self.binding is not None:
            doc["binding"] = binding_json(self.binding)
        else:
            doc["config"] = {"name": self.config_name, "value": self.config_value}
        doc["actor"] = self.actor
        doc["requestId"] = self.request_id
        return doc


@dataclass(frozen=True, slots=True, kw_only=True)
class EventsAnswer:
    """The events of a range, oldest first, and the log offset the answer reflects."""

    events: tuple[HistoryEvent, ...]
    offset: int

    def to_json(self) -> list[dict[str, Any]]:
        """Issue 10's plain list of events (the offset it reflects is not part of it)."""
        return [e.to_json() for e in self.events]


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """The live bindings and the settings in force just after log offset ``offset``.

    ``settings`` holds only the settings altered from their defaults; ``time_ms`` is the log
    time of the record at ``offset`` (None before the first record).
    """

    offset: int
    time_ms: int | None
    bindings: tuple[AclBinding, ...]
    settings: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "time": _time(self.time_ms),
            "bindings": [binding_json(b) for b in sorted(self.bindings)],
            "settings": dict(sorted(self.settings.items())),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class WhoEntry:
    """A principal's decision and what decided it.

    ``principal`` ``User:*`` means every principal; ``deciding`` is the rule's name
    (:class:`store.authorizer.DecisionRule`: ``MATCHING_ACL``, ``DEFAULT_ALLOW``...) and
    ``binding`` the deciding binding when an ACL decided.
    """

    principal: str
    deciding: str
    binding: AclBinding | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "principal": self.principal,
            "deciding": self.deciding,
            "binding": None if self.binding is None else binding_json(self.binding),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class WhoAnswer:
    """Who may do one operation on one resource from one host, just after log offset ``offset``.

    ``everyone`` is true when every principal not listed in ``denied`` is allowed (a ``User:*``
    ALLOW, or no ACL on the resource with ``allow.everyone.if.no.acl.found``); ``allowed`` then
    starts with the ``User:*`` entry.  ``super_users`` are allowed whatever the ACLs say.
    """

    offset: int
    time_ms: int | None
    allowed: tuple[WhoEntry, ...]
    denied: tuple[WhoEntry, ...]
    super_users: tuple[str, ...]
    everyone: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "time": _time(self.time_ms),
            "everyone": self.everyone,
            "allowed": [e.to_json() for e in self.allowed],
            "denied": [e.to_json() for e in self.denied],
            "superUsers": list(self.super_users),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Interval:
    """A stretch of the log in which the decision was ALLOWED.

    It starts just after ``from_offset`` (the record ``opened_by``; None when it was already
    open where the range starts) and ends just after ``to_offset`` (``closed_by``); both
    ``to_`` fields are None while it is still open.
    """

    from_offset: int
    to_offset: int | None
    from_ms: int
    to_ms: int | None
    opened_by: HistoryEvent | None = None
    closed_by: HistoryEvent | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "fromOffset": self.from_offset,
            "toOffset": self.to_offset,
            "from": _time(self.from_ms),
            "to": _time(self.to_ms),
            "openedBy": None if self.opened_by is None else self.opened_by.to_json(),
            "closedBy": None if self.closed_by is None else self.closed_by.to_json(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class WhenAnswer:
    """The ALLOWED intervals of one (principal, host, operation, resource) in a range."""

    intervals: tuple[Interval, ...]
    offset: int

    def to_json(self) -> dict[str, Any]:
        return {"intervals": [i.to_json() for i in self.intervals], "offset": self.offset}


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffAnswer:
    """What changed between the states just after ``from_offset`` and ``to_offset``.

    ``settings_changed`` holds ``(name, old, new)``, None meaning the default.
    """

    from_offset: int
    to_offset: int
    added: tuple[AclBinding, ...]
    removed: tuple[AclBinding, ...]
    settings_changed: tuple[tuple[str, str | None, str | None], ...]

    @property
    def offset(self) -> int:
        return self.to_offset

    def to_json(self) -> dict[str, Any]:
        return {
            "fromOffset": self.from_offset,
            "toOffset": self.to_offset,
            "added": [binding_json(b) for b in sorted(self.added)],
            "removed": [binding_json(b) for b in sorted(self.removed)],
            "settings": [{"name": n, "old": o, "new": v} for n, o, v in self.settings_changed],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessChange:
    """The access that changed between two points: what :class:`DiffAnswer` says changed in
    the bindings and settings, and the requests whose decision it changed
    (:func:`store.access_diff.access_diff` on the two states), each set with a witness.

    Its JSON (``history diff --access``) is the diff's with ``widened`` and ``narrowed``
    added, rendered as ``downgrade-check`` renders them.
    """

    diff: DiffAnswer
    access: AccessDiff

    @property
    def offset(self) -> int:
        return self.diff.to_offset


@dataclass(frozen=True, slots=True, kw_only=True)
class RestorePlan:
    """The deletes, creates and settings that bring the state at ``offset`` back to
    ``at_offset``; ``settings`` are ``(name, value then)`` of the authorizer's settings that
    differ (None: back to the default)."""

    at_offset: int
    offset: int
    creates: tuple[AclBinding, ...]
    deletes: tuple[AclBinding, ...]
    settings: tuple[tuple[str, str | None], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "atOffset": self.at_offset,
            "offset": self.offset,
            "deletes": [binding_json(b) for b in sorted(self.deletes)],
            "creates": [binding_json(b) for b in sorted(self.creates)],
            "settings": dict(self.settings),
        }
