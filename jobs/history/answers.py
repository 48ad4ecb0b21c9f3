"""The answers of the history questions: frozen values (issue 10).

Pure, no Spark: the tests compare them with a replay, and the command line turns them into
tables, CSV and JSON documents (:mod:`cli.present.history`).  Times are epoch milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from jobs.common.events import HistoryEvent
from jobs.history.validity import Validity
from store.access_diff import AccessDiff
from store.acl import AclBinding

EVERY_PRINCIPAL: Final = "User:*"
"""The principal of a :class:`WhoEntry` that stands for every principal."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventsAnswer:
    """The events of a range, oldest first, and the log offset the answer reflects; of a page
    (a ``limit``), also the next page's cursor: the last offset shown, or None at the end."""

    events: tuple[HistoryEvent, ...]
    offset: int
    next_after: int | None = None


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


@dataclass(frozen=True, slots=True, kw_only=True)
class WhenAnswer:
    """The ALLOWED intervals of one (principal, host, operation, resource) in a range."""

    intervals: tuple[Interval, ...]
    offset: int


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


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessChange:
    """The access that changed between two points: what :class:`DiffAnswer` says changed in
    the bindings and settings, and the requests whose decision it changed
    (:func:`store.access_diff.access_diff` on the two states), each set with a witness.

    ``history diff --access`` shows it as ``downgrade-check`` shows an access diff.
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Intervals:
    """The validity intervals (each binding live, or each setting at a value, over a stretch of
    the log) brought to log offset ``offset``: what the questions are answered from."""

    intervals: tuple[Validity, ...]
    offset: int
