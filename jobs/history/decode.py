"""Log records to history events, and history events to validity intervals: pure, picklable.

Records are read through the one fold of the log (:func:`store.fold.fold_record`), so the
archive treats a corrupt, mismatched or too-new record exactly as a replica does: it raises
:class:`~store.codec.RecordDecodeError` naming the offset.  A binding's tombstone reads as
``ACL_DELETED`` and a setting's as ``CONFIG_ALTERED`` back to its default, without actor.

A *validity interval* is one binding live, or one setting at one value, from the record that
made it so (``from_offset``) to the record that ended it (``to_offset``, None while it holds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from jobs.history.answers import ACL_CREATED, ACL_DELETED, CONFIG_ALTERED, HistoryEvent
from store.acl import AclBinding
from store.fold import ChangeKind, FoldPolicy, fold_record
from store.log.base import LogRecord

_DEFAULT_POLICY = FoldPolicy()
BINDING_KIND = "binding"
SETTING_KIND = "setting"


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


def identity(event: HistoryEvent) -> str:
    """What an event changes: ``binding|<the seven fields>`` or ``setting|<name>``."""
    if event.binding is not None:
        return binding_identity(event.binding)
    return f"{SETTING_KIND}|{event.config_name}"


def binding_identity(binding: AclBinding) -> str:
    return BINDING_KIND + "|" + "\x1f".join(binding.fields())


@dataclass(frozen=True, slots=True, kw_only=True)
class Validity:
    """One binding live (or one setting at ``config_value``) over ``[from_offset, to_offset)``.

    The state just after offset N holds every interval with ``from_offset <= N`` and
    ``to_offset`` None or ``> N``.  ``opened``/``closed`` are the events at either end.
    """

    id: str
    opened: HistoryEvent
    closed: HistoryEvent | None = None

    @property
    def from_offset(self) -> int:
        return self.opened.offset

    @property
    def to_offset(self) -> int | None:
        return None if self.closed is None else self.closed.offset

    @property
    def binding(self) -> AclBinding | None:
        return self.opened.binding

    def live_at(self, offset: int) -> bool:
        return self.from_offset <= offset and (self.closed is None or self.closed.offset > offset)


Opener = int
"""Who opened an interval, for :func:`fold_positions`: the label of a row of the batch (its
index, or what ``labels`` names it) or whatever label the caller gave an interval open before
the batch in ``still_open`` (:func:`fold_validity`: -1, -2, ...; the archive: its offset)."""


def fold_positions(
    ids: Sequence[str],
    types: Sequence[str],
    config_values: Sequence[str | None],
    still_open: dict[str, Opener],
    labels: Sequence[int] | None = None,
) -> list[tuple[Opener, int | None]]:
    """The rules of the validity intervals over plain columns: row i of a batch changes
    ``ids[i]`` with an event of ``types[i]`` (and, for a setting, ``config_values[i]``).

    ``still_open`` maps each id whose interval is open to its opener; it is updated to the
    state after the batch.  Returns each interval the batch opened or closed once, in its
    latest form: ``(opener, closing row or None)``, a row named by ``labels[i]`` (default:
    ``i``; labels must differ from each other and from the openers in ``still_open``).
    Creating a live binding or deleting an absent one changes nothing, as in the live set;
    every ``ConfigAltered`` closes the setting's interval and, to a value, opens the next.
    """
    rows = range(len(ids)) if labels is None else labels
    changed: dict[Opener, int | None] = {}
    for row, key, kind, value in zip(rows, ids, types, config_values, strict=True):
        if kind == ACL_CREATED:
            if key not in still_open:
                still_open[key] = row
                changed[row] = None
            continue
        previous = still_open.pop(key, None)
        if previous is not None:
            changed[previous] = row
        if kind == CONFIG_ALTERED and value is not None:
            still_open[key] = row
            changed[row] = None
    return list(changed.items())


def fold_validity(
    events: Sequence[HistoryEvent], open_intervals: Mapping[str, Validity]
) -> tuple[list[Validity], dict[str, Validity]]:
    """Apply ``events`` (in offset order) to the intervals still open.

    Returns the intervals opened or closed by the events (each once, in its latest form) and
    the intervals open afterwards (:func:`fold_positions`' rules over events).
    """
    before = list(open_intervals.values())
    positions: dict[str, Opener] = {v.id: -1 - k for k, v in enumerate(before)}
    changes = fold_positions(
        [identity(e) for e in events], [e.type for e in events], [e.config_value for e in events],
        positions,
    )  # fmt: skip

    def opened(opener: Opener) -> Validity:
        if opener < 0:
            return before[-1 - opener]
        event = events[opener]
        return Validity(id=identity(event), opened=event)

    changed = [
        opened(opener) if closer is None else replace(opened(opener), closed=events[closer])
        for opener, closer in changes
    ]
    return changed, {key: opened(opener) for key, opener in positions.items()}
