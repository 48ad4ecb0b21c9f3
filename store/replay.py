"""One replay interface for every state the log is folded into, and the one driver that feeds it.

Kafka's ``ClusterMetadataAuthorizer`` is told about ACLs in three calls: ``loadSnapshot``,
``addAcl`` and ``removeAcl``.  Every state our log is folded into (the admin's
:class:`~store.projection.AclStoreState`, the replica's index batch, the history's validity
intervals, the downgrade watch's live state) implements the same calls, :class:`AclReplay`,
plus ``alter_config`` for our settings events and ``pass_over`` for a record the fold's policy
lets through without a change.

What a state is told about comes out of the one reading of the log (:mod:`store.fold`): a
:class:`~store.fold.Change`, or a job's archived form of one.  Both satisfy :class:`Folded`,
and each call hands the record itself on as ``at``, so a state that needs the record's place
in the log (its offset, log time, key, actor: the history's intervals do) reads it there
instead of deriving it again.  :func:`replay` is the driver: the only code that turns a
folded record into calls.  Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar

from store.acl import AclBinding
from store.fold import ChangeKind


class Folded(Protocol):
    """A record read through the fold: what it changes and the offset it sits at."""

    @property
    def kind(self) -> ChangeKind: ...

    @property
    def offset(self) -> int: ...

    @property
    def binding(self) -> AclBinding | None: ...

    @property
    def config_name(self) -> str | None: ...

    @property
    def config_value(self) -> str | None: ...


F = TypeVar("F", bound=Folded)
F_contra = TypeVar("F_contra", bound=Folded, contravariant=True)


class AclReplay(Protocol[F_contra]):
    """A state the log is folded into (``ClusterMetadataAuthorizer``'s calls, and settings).

    ``at`` is the folded record that makes the call (a :class:`~store.fold.Change`, or an
    archived event of the history), for the state to read its position from.
    """

    def load_snapshot(self, bindings: Iterable[AclBinding], settings: Mapping[str, str], offset: int) -> None:
        """Replace the whole state by ``bindings`` and ``settings`` (those set, by name), as
        of the log's ``offset``: every record up to it applied."""
        ...

    def add_acl(self, binding: AclBinding, at: F_contra) -> None:
        """``binding`` is live from ``at`` (adding a live binding changes nothing)."""
        ...

    def remove_acl(self, binding: AclBinding, at: F_contra) -> None:
        """``binding`` is gone from ``at`` (removing an absent binding changes nothing)."""
        ...

    def alter_config(self, name: str, value: str | None, at: F_contra) -> None:
        """Setting ``name`` is ``value`` from ``at`` (None: back to its default)."""
        ...

    def pass_over(self, at: F_contra) -> None:
        """``at`` changes nothing more: an event too new for the reader under the IGNORE
        policy (its binding, if any, was removed just before) or an offset an operator
        chose to skip."""
        ...


def replay_one(record: F, state: AclReplay[F]) -> None:
    """Tell ``state`` what the folded ``record`` changes."""
    kind = record.kind
    binding = record.binding
    if kind is ChangeKind.CREATED:
        assert binding is not None
        state.add_acl(binding, record)
    elif kind is ChangeKind.DELETED:
        assert binding is not None
        state.remove_acl(binding, record)
    elif kind is ChangeKind.CONFIG:
        assert record.config_name is not None
        state.alter_config(record.config_name, record.config_value, record)
    else:  # IGNORED (the key's binding is absent for this reader) or SKIPPED
        if kind is ChangeKind.IGNORED and binding is not None:
            state.remove_acl(binding, record)
        state.pass_over(record)


def replay(records: Iterable[F], state: AclReplay[F]) -> None:
    """Tell ``state`` what each folded record changes, in order (the records' offset order)."""
    for record in records:
        replay_one(record, state)
