"""History events to validity intervals: pure, picklable.

A *validity interval* is one binding live, or one setting at one value, from the record that
made it so (``from_offset``) to the record that ended it (``to_offset``, None while it holds).
The events are the log's changes as every job reads them (:mod:`jobs.common.events`, through
the one fold of the log); their rules are written once over whole columns (:func:`fold_codes`)
and used by the archive's Arrow fold (:mod:`jobs.history.intervals`) and by the questions'
event-by-event fold (:class:`ValidityFold`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from jobs.common.events import (
    ACL_CREATED,
    ACL_DELETED,
    CONFIG_ALTERED,
    HistoryEvent,
    binding_identity,
    identity,
    setting_identity,
)
from store.acl import AclBinding
from store.replay import replay


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

NO_OPENER: Final = np.iinfo(np.int64).min
"""In :func:`fold_codes`' arrays: no interval open."""
CREATES: Final = 0
"""An event's kind for :func:`fold_codes`: a binding created, ..."""
DELETES: Final = 1
"""... deleted, ..."""
SETS: Final = 2
"""... a setting altered to a value, ..."""
RESETS: Final = 3
"""... or back to its default (no value)."""


def kind_codes(
    deleted: npt.NDArray[np.bool_], altered: npt.NDArray[np.bool_], to_value: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int8]:
    """Each event's kind for :func:`fold_codes`, of whether it is an ``ACL_DELETED``, a
    ``CONFIG_ALTERED``, and (for the latter) to a value; any other event is a create."""
    codes = np.full(len(deleted), CREATES, np.int8)
    codes[deleted] = DELETES
    codes[altered & to_value] = SETS
    codes[altered & ~to_value] = RESETS
    return codes


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldedCodes:
    """What a batch did to the validity intervals (:func:`fold_codes`).

    ``openers[i]`` and ``closers[i]`` (where ``closed[i]``) are the ends of the i-th interval
    the batch opened or closed, in the order the batch first touched each: a new interval at
    its opening row, one open before the batch at its closing row.  ``open_after`` is the
    ``open_before`` of the next batch."""

    openers: npt.NDArray[np.int64]
    closers: npt.NDArray[np.int64]
    closed: npt.NDArray[np.bool_]
    open_after: npt.NDArray[np.int64]


def fold_codes(
    keys: npt.NDArray[np.int64],
    kinds: npt.NDArray[np.int8],
    labels: npt.NDArray[np.int64],
    open_before: npt.NDArray[np.int64],
) -> FoldedCodes:
    """The rules of the validity intervals, over whole columns at once: row i of a batch (in
    log order) changes the binding or setting numbered ``keys[i]`` with an event of
    ``kinds[i]`` (:data:`CREATES`, :data:`DELETES`, :data:`SETS`, :data:`RESETS`) and is
    named ``labels[i]``; ``open_before[k]`` is the opener of ``k``'s interval open before the
    batch, or :data:`NO_OPENER`.

    Creating a live binding or deleting an absent one changes nothing, as in the live set;
    every ``ConfigAltered`` closes the setting's interval and, to a value, opens the next.

    Each key's events are taken in log order (a stable sort by key).  Whether its interval is
    open after an event depends on that event alone (a create or a value: open; a delete or a
    default: closed), so whether it was open before is the previous event's answer, or
    ``open_before`` for its first.  Between an opening event and the next event that closes
    anything of the same key there is nothing but creates of a live binding, so that event is
    the one that closes it."""
    rows = len(keys)
    if not rows:
        none = np.empty(0, np.int64)
        return FoldedCodes(openers=none, closers=none, closed=np.empty(0, np.bool_), open_after=open_before)
    order = np.argsort(keys, kind="stable")
    key, kind, label = keys[order], kinds[order], labels[order]
    first = np.ones(rows, np.bool_)
    first[1:] = key[1:] != key[:-1]
    after = (kind == CREATES) | (kind == SETS)
    carried = open_before[key]
    before = np.empty(rows, np.bool_)
    before[1:] = after[:-1]
    before[first] = carried[first] != NO_OPENER
    closes = before & (kind != CREATES)
    opens = (kind == SETS) | ((kind == CREATES) & ~before)

    closing = np.flatnonzero(closes)
    new = np.flatnonzero(opens)
    old = np.flatnonzero(first & before)  # the first row of a key open before the batch

    def closer_at(at: npt.NDArray[np.intp], side: Literal["left", "right"]) -> npt.NDArray[np.intp]:
        """The first closing row at or after (``left``) or after (``right``) each of ``at``
        of the same key, or -1."""
        if not len(closing):
            return np.full(len(at), -1, np.intp)
        found = np.searchsorted(closing, at, side=side)
        candidate = closing[np.minimum(found, len(closing) - 1)]
        return np.where((found < len(closing)) & (key[candidate] == key[at]), candidate, -1)

    new_closer = closer_at(new, "right")
    old_closer = closer_at(old, "left")
    old, old_closer = old[old_closer >= 0], old_closer[old_closer >= 0]
    closer = np.concatenate([old_closer, new_closer])
    # A row that closes one interval and opens the next touches the one it closes first.
    by_row = np.argsort(np.concatenate([order[old_closer], order[new]]), kind="stable")
    closer, closed = closer[by_row], closer[by_row] >= 0
    openers = np.concatenate([carried[old], label[new]])[by_row]
    closers = np.where(closed, label[np.maximum(closer, 0)], 0)

    open_after = open_before.copy()
    last = np.flatnonzero(np.append(first[1:], True))  # each key's last row
    latest_opening = np.maximum.accumulate(np.where(opens, np.arange(rows), -1))[last]
    opened_here = (latest_opening >= 0) & (key[np.maximum(latest_opening, 0)] == key[last])
    still = np.where(opened_here, label[np.maximum(latest_opening, 0)], carried[last])
    open_after[key[last]] = np.where(after[last], still, NO_OPENER)
    return FoldedCodes(openers=openers, closers=closers, closed=closed, open_after=open_after)


def fold_positions(
    ids: Sequence[str],
    types: Sequence[str],
    config_values: Sequence[str | None],
    still_open: dict[str, Opener],
    labels: Sequence[int] | None = None,
) -> list[tuple[Opener, int | None]]:
    """:func:`fold_codes` over plain columns: row i of a batch changes ``ids[i]`` with an
    event of ``types[i]`` (and, for a setting, ``config_values[i]``).

    ``still_open`` maps each id whose interval is open to its opener; it is updated to the
    state after the batch.  Returns each interval the batch opened or closed once, in its
    latest form: ``(opener, closing row or None)``, a row named by ``labels[i]`` (default:
    ``i``; labels must differ from each other and from the openers in ``still_open``).
    """
    numbers = {key: k for k, key in enumerate(still_open)}
    keys = np.fromiter((numbers.setdefault(key, len(numbers)) for key in ids), np.int64, len(ids))
    names = list(numbers)
    open_before = np.full(len(names), NO_OPENER, np.int64)
    open_before[: len(still_open)] = np.fromiter(still_open.values(), np.int64, len(still_open))
    named = np.asarray(types, dtype=object)
    kinds = kind_codes(
        named == ACL_DELETED, named == CONFIG_ALTERED,
        np.fromiter((value is not None for value in config_values), np.bool_, len(ids)),
    )  # fmt: skip
    rows = np.arange(len(ids), dtype=np.int64) if labels is None else np.asarray(labels, np.int64)
    folded = fold_codes(keys, kinds, rows, open_before)
    still_open.clear()
    still_open.update(
        (names[k], int(opener)) for k, opener in enumerate(folded.open_after) if opener != NO_OPENER
    )
    return [
        (int(opener), int(closer) if closed else None)
        for opener, closer, closed in zip(folded.openers, folded.closers, folded.closed, strict=True)
    ]


class ValidityFold:
    """The validity intervals as a state the log is folded into (:class:`store.replay.AclReplay`).

    Each call names the event that makes it (``at``), which becomes the opening or closing
    end of an interval: the state keeps the record's position, not a copy of it.  The calls
    are collected and folded at :meth:`result` by :func:`fold_positions` (the rules of
    :func:`fold_codes`, over whole columns).
    """

    def __init__(self, open_intervals: Mapping[str, Validity] | None = None) -> None:
        self._open: dict[str, Validity] = dict(open_intervals or {})
        self._ids: list[str] = []
        self._types: list[str] = []
        self._values: list[str | None] = []
        self._events: list[HistoryEvent] = []

    def load_snapshot(self, bindings: Iterable[AclBinding], settings: Mapping[str, str], offset: int) -> None:
        """Every binding and setting open from ``offset`` (their opening events known by the
        offset and what they opened alone: time 0, no actor)."""
        opened = [HistoryEvent(offset=offset, time_ms=0, type=ACL_CREATED, binding=b) for b in bindings]
        opened += [
            HistoryEvent(offset=offset, time_ms=0, type=CONFIG_ALTERED, config_name=n, config_value=v)
            for n, v in settings.items()
        ]
        self._open = {identity(e): Validity(id=identity(e), opened=e) for e in opened}
        self._ids, self._types, self._values, self._events = [], [], [], []

    def _record(self, key: str, event_type: str, value: str | None, at: HistoryEvent) -> None:
        self._ids.append(key)
        self._types.append(event_type)
        self._values.append(value)
        self._events.append(at)

    def add_acl(self, binding: AclBinding, at: HistoryEvent) -> None:
        self._record(binding_identity(binding), ACL_CREATED, None, at)

    def remove_acl(self, binding: AclBinding, at: HistoryEvent) -> None:
        self._record(binding_identity(binding), ACL_DELETED, None, at)

    def alter_config(self, name: str, value: str | None, at: HistoryEvent) -> None:
        self._record(setting_identity(name), CONFIG_ALTERED, value, at)

    def pass_over(self, at: HistoryEvent) -> None:
        """Nothing changes (the archive holds no passed-over record)."""

    def result(self) -> tuple[list[Validity], dict[str, Validity]]:
        """The intervals the calls since the last result opened or closed (each once, in its
        latest form) and the intervals open after them, which the fold goes on from."""
        before = list(self._open.values())
        events = self._events
        positions: dict[str, Opener] = {v.id: -1 - k for k, v in enumerate(before)}
        changes = fold_positions(self._ids, self._types, self._values, positions)

        def opened(opener: Opener) -> Validity:
            if opener < 0:
                return before[-1 - opener]
            return Validity(id=self._ids[opener], opened=events[opener])

        changed = [
            opened(opener) if closer is None else replace(opened(opener), closed=events[closer])
            for opener, closer in changes
        ]
        self._open = {key: opened(opener) for key, opener in positions.items()}
        self._ids, self._types, self._values, self._events = [], [], [], []
        return changed, dict(self._open)


def fold_validity(
    events: Sequence[HistoryEvent], open_intervals: Mapping[str, Validity]
) -> tuple[list[Validity], dict[str, Validity]]:
    """Apply ``events`` (in offset order) to the intervals still open.

    Returns the intervals opened or closed by the events (each once, in its latest form) and
    the intervals open afterwards (:class:`ValidityFold`, the events replayed into it).
    """
    fold = ValidityFold(open_intervals)
    replay(events, fold)
    return fold.result()
