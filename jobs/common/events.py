"""The changes of the log as every job reads them: one frozen value per change, and what it changes.

A record of the log, read through the one fold (:mod:`jobs.common.decode`), is a
:class:`HistoryEvent`: a binding created or deleted, or a setting altered.  The history
archives them, the downgrade watch keeps the live state with them, the audit names the change
that caused a denial.  Pure, no Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from store.acl import AclBinding
from store.fold import ChangeKind

ACL_CREATED: Final = "ACL_CREATED"
ACL_DELETED: Final = "ACL_DELETED"
CONFIG_ALTERED: Final = "CONFIG_ALTERED"
EVENT_TYPES: Final = (ACL_CREATED, ACL_DELETED, CONFIG_ALTERED)
_KINDS: Final = {
    ACL_CREATED: ChangeKind.CREATED, ACL_DELETED: ChangeKind.DELETED, CONFIG_ALTERED: ChangeKind.CONFIG,
}  # fmt: skip

BINDING_KIND: Final = "binding"
SETTING_KIND: Final = "setting"


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEvent:
    """One change of the log as archived: a binding created or deleted, or a setting altered.

    A tombstone of a binding reads as ``ACL_DELETED`` and one of a setting as
    ``CONFIG_ALTERED`` with ``config_value`` None (back to its default), without actor.
    An archived form of a folded record (:class:`store.replay.Folded`): the jobs' states are
    told about it through :func:`store.replay.replay`, and keep it as the position of what
    it changed.
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


def identity(event: HistoryEvent) -> str:
    """What an event changes: ``binding|<the seven fields>`` or ``setting|<name>``."""
    if event.binding is not None:
        return binding_identity(event.binding)
    return setting_identity(event.config_name)


def binding_identity(binding: AclBinding) -> str:
    return BINDING_KIND + "|" + "\x1f".join(binding.fields())


def setting_identity(name: str | None) -> str:
    return f"{SETTING_KIND}|{name}"
