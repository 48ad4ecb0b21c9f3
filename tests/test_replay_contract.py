"""The replay interface's contract, run against every state the log is folded into.

One random sequence (a snapshot, then creates, deletes, repeated creates, deletes of absent
bindings, settings set and reset, and, for the readers that meet them, events too new for
the reader and operator skips) goes through the one driver (:func:`store.replay.replay`)
into each implementation of :class:`store.replay.AclReplay`:

* the admin's state (:class:`store.projection.AclStoreState`),
* the replica's index batch (:class:`replicator.index.IndexBatch`, committed to RocksDB),
* the history's validity intervals, event by event (:class:`jobs.history.validity.ValidityFold`)
  and over Arrow columns (:class:`jobs.history.intervals.OpenIntervals`),
* the downgrade watch's live state (:class:`jobs.downgrade.watch.LiveState`).

Each final state is compared with an independent replay written here over a dict, including,
where the state keeps it, the offset from which each binding and setting has held.  Each
implementation starts from a different state first, so ``load_snapshot`` must replace it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobs.common.events import ACL_CREATED, ACL_DELETED, CONFIG_ALTERED, HistoryEvent
from jobs.common.rows import BINDING_FIELDS
from jobs.downgrade.watch import LiveState
from jobs.history.intervals import OpenIntervals
from jobs.history.validity import ValidityFold
from replicator.index import AclIndex
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType, parse_fields
from store.codec import binding_key, config_key
from store.events import LATEST_FORMAT_VERSION
from store.fold import Change, ChangeKind
from store.projection import AclStoreState
from store.replay import replay

pytestmark = pytest.mark.unit

SETTINGS = ("super.users", "allow.everyone.if.no.acl.found", "acl.format.version")
SNAPSHOT_OFFSET = 9


def random_binding(rng: random.Random) -> AclBinding:
    return AclBinding.of(
        rng.choice([ResourceType.TOPIC, ResourceType.GROUP]),
        rng.choice(["a", "ab", "orders", "*", "!x"]),
        rng.choice([PatternType.LITERAL, PatternType.PREFIXED]),
        rng.choice(["User:alice", "User:bob", "User:*"]),
        rng.choice(["*", "10.0.0.1"]),
        rng.choice([AclOperation.READ, AclOperation.WRITE, AclOperation.ALL]),
        rng.choice([AclPermissionType.ALLOW, AclPermissionType.DENY]),
    )


def setting_value(rng: random.Random, name: str) -> str | None:
    return {
        "super.users": rng.choice([None, "User:bob", "User:alice;User:bob"]),
        "allow.everyone.if.no.acl.found": rng.choice([None, "true", "false"]),
        "acl.format.version": rng.choice([None, "2", "3"]),
    }[name]


@dataclass(frozen=True)
class Sequence_:
    snapshot_bindings: frozenset[AclBinding]
    snapshot_settings: dict[str, str]
    changes: list[Change]


def binding_change(kind: ChangeKind, offset: int, binding: AclBinding) -> Change:
    key = binding_key(binding)
    return Change(kind=kind, offset=offset, timestamp_ms=1000 + offset, key=key, binding=binding)


def random_sequence(seed: int, *, passed_over: bool) -> Sequence_:
    """A snapshot and the changes after it, in offset order (time = 1000 + offset)."""
    rng = random.Random(seed)
    bindings = frozenset(random_binding(rng) for _ in range(rng.randint(0, 8)))
    settings = {n: v for n in SETTINGS if (v := setting_value(rng, n)) is not None}
    changes: list[Change] = []
    seen = list(bindings)
    for offset in range(SNAPSHOT_OFFSET + 1, SNAPSHOT_OFFSET + 1 + rng.randint(20, 80)):
        roll = rng.random()
        if roll < 0.15:
            name = rng.choice(SETTINGS)
            value = setting_value(rng, name)
            changes.append(Change(kind=ChangeKind.CONFIG, offset=offset, timestamp_ms=1000 + offset,
                                  key=config_key(name), config_name=name, config_value=value))  # fmt: skip
        elif passed_over and roll < 0.22:
            binding = rng.choice(seen) if seen and rng.random() < 0.7 else random_binding(rng)
            changes.append(binding_change(ChangeKind.IGNORED, offset, binding))
        elif passed_over and roll < 0.27:
            skipped = Change(kind=ChangeKind.SKIPPED, offset=offset, timestamp_ms=1000 + offset, key=b"")
            changes.append(skipped)
        elif roll < 0.5 and seen:
            binding = rng.choice(seen)  # live or not: deleting an absent binding changes nothing
            changes.append(binding_change(ChangeKind.DELETED, offset, binding))
        else:
            binding = rng.choice(seen) if seen and rng.random() < 0.2 else random_binding(rng)
            seen.append(binding)
            changes.append(binding_change(ChangeKind.CREATED, offset, binding))
    return Sequence_(bindings, settings, changes)


@dataclass
class Expected:
    """The independent replay: what is live, and since which offset."""

    bindings: dict[AclBinding, int]
    settings: dict[str, tuple[str, int]]
    ignored: int
    skipped: list[int]


def expected_state(sequence: Sequence_) -> Expected:
    bindings = dict.fromkeys(sequence.snapshot_bindings, SNAPSHOT_OFFSET)
    settings = {n: (v, SNAPSHOT_OFFSET) for n, v in sequence.snapshot_settings.items()}
    ignored, skipped = 0, []
    for change in sequence.changes:
        if change.kind is ChangeKind.CREATED:
            assert change.binding is not None
            bindings.setdefault(change.binding, change.offset)
        elif change.kind in (ChangeKind.DELETED, ChangeKind.IGNORED):
            if change.binding is not None:
                bindings.pop(change.binding, None)
            ignored += change.kind is ChangeKind.IGNORED
        elif change.kind is ChangeKind.SKIPPED:
            skipped.append(change.offset)
        else:
            assert change.config_name is not None
            if change.config_value is None:
                settings.pop(change.config_name, None)
            else:
                settings[change.config_name] = (change.config_value, change.offset)
    return Expected(bindings, settings, ignored, skipped)


_TYPES = {ChangeKind.CREATED: ACL_CREATED, ChangeKind.DELETED: ACL_DELETED, ChangeKind.CONFIG: CONFIG_ALTERED}


def history_events(changes: list[Change]) -> list[HistoryEvent]:
    """The changes as the archive holds them (it holds no passed-over record)."""
    return [history_event(c) for c in changes if c.kind in _TYPES]


def history_event(c: Change) -> HistoryEvent:
    return HistoryEvent(
        offset=c.offset, time_ms=c.timestamp_ms, type=_TYPES[c.kind], binding=c.binding,
        config_name=c.config_name, config_value=c.config_value, actor=f"User:{c.offset}",
    )  # fmt: skip


OTHER_BINDINGS = [AclBinding.of(ResourceType.TOPIC, "stale", PatternType.LITERAL, "User:old", "*",
                                AclOperation.READ, AclPermissionType.ALLOW)]  # fmt: skip
OTHER_SETTINGS = {"super.users": "User:old", "unrelated.setting": "x"}


@dataclass(frozen=True)
class Final:
    bindings: dict[AclBinding, int | None]  # since which offset (None: not kept)
    settings: dict[str, tuple[str, int | None]]


def run_projection(sequence: Sequence_, _: Path) -> tuple[Final, dict[str, object]]:
    state = AclStoreState()
    state.load_snapshot(OTHER_BINDINGS, OTHER_SETTINGS, 3)
    state.load_snapshot(sequence.snapshot_bindings, sequence.snapshot_settings, SNAPSHOT_OFFSET)
    replay(sequence.changes, state)
    final = Final(dict.fromkeys(state.index.bindings()), {n: (v, None) for n, v in state.configs.items()})
    return final, {"skipped": state.skipped}


def run_index_batch(sequence: Sequence_, tmp: Path) -> tuple[Final, dict[str, object]]:
    index = AclIndex(tmp / "index", reader_version=LATEST_FORMAT_VERSION)
    try:
        first = index.batch()
        first.load_snapshot(OTHER_BINDINGS, OTHER_SETTINGS, 3)
        first.commit(offset=3, timestamp_ms=3)
        batch = index.batch()
        batch.load_snapshot(sequence.snapshot_bindings, sequence.snapshot_settings, SNAPSHOT_OFFSET)
        replay(sequence.changes, batch)
        last = sequence.changes[-1]
        batch.commit(offset=last.offset, timestamp_ms=last.timestamp_ms)
        view = index.view()
        final = Final(dict.fromkeys(view.bindings()), {n: (v, None) for n, v in index.config.items()})
        return final, {"ignored": index.counters.ignored_events, "bindings": index.counters.bindings}
    finally:
        index.close()


def run_validity_fold(sequence: Sequence_, _: Path) -> tuple[Final, dict[str, object]]:
    fold = ValidityFold()
    fold.load_snapshot(OTHER_BINDINGS, OTHER_SETTINGS, 3)
    fold.load_snapshot(sequence.snapshot_bindings, sequence.snapshot_settings, SNAPSHOT_OFFSET)
    events = history_events(sequence.changes)
    cut = len(events) // 2  # two results: the fold goes on from the intervals it left open
    replay(events[:cut], fold)
    fold.result()
    replay(events[cut:], fold)
    still_open = fold.result()[1]
    bindings: dict[AclBinding, int | None] = {}
    settings: dict[str, tuple[str, int | None]] = {}
    for interval in still_open.values():
        opened = interval.opened
        if opened.binding is not None:
            bindings[opened.binding] = opened.offset
        else:
            assert opened.config_name is not None and opened.config_value is not None
            settings[opened.config_name] = (opened.config_value, opened.offset)
        if opened.offset > SNAPSHOT_OFFSET:  # the position is the event's own
            assert opened.actor == f"User:{opened.offset}" and opened.time_ms == 1000 + opened.offset
    return Final(bindings, settings), {}


def run_open_intervals(sequence: Sequence_, _: Path) -> tuple[Final, dict[str, object]]:
    state = OpenIntervals()
    state.load_snapshot(OTHER_BINDINGS, OTHER_SETTINGS, 3)
    state.load_snapshot(sequence.snapshot_bindings, sequence.snapshot_settings, SNAPSHOT_OFFSET)
    events = history_events(sequence.changes)
    cut = len(events) // 3
    replay(events[:cut], state)
    state.fold_pending()
    replay(events[cut:], state)
    state.fold_pending()
    bindings: dict[AclBinding, int | None] = {}
    settings: dict[str, tuple[str, int | None]] = {}
    for row in state.rows.to_pylist():
        if row["resourceType"] is not None:
            fields = tuple(row[c] for c in BINDING_FIELDS)
            bindings[AclBinding.of(*parse_fields(fields))] = row["fromOffset"]
        else:
            settings[row["configName"]] = (row["configValue"], row["fromOffset"])
        if row["fromOffset"] > SNAPSHOT_OFFSET:
            assert row["fromActor"] == f"User:{row['fromOffset']}"
    return Final(bindings, settings), {}


def run_live_state(sequence: Sequence_, _: Path) -> tuple[Final, dict[str, object]]:
    state = LiveState(1, OTHER_BINDINGS, dict(OTHER_SETTINGS))
    state.load_snapshot(sequence.snapshot_bindings, sequence.snapshot_settings, SNAPSHOT_OFFSET)
    state.apply(history_events(sequence.changes))
    return Final(dict.fromkeys(state.bindings), {n: (v, None) for n, v in state.settings.items()}), {}


Runner = Callable[[Sequence_, Path], tuple[Final, dict[str, object]]]
READERS_OF_CHANGES: dict[str, Runner] = {"projection": run_projection, "index_batch": run_index_batch}
READERS_OF_EVENTS: dict[str, Runner] = {
    "validity_fold": run_validity_fold, "open_intervals": run_open_intervals, "live_state": run_live_state,
}  # fmt: skip


def compare(final: Final, expected: Expected) -> None:
    assert set(final.bindings) == set(expected.bindings)
    assert {n: v for n, (v, _) in final.settings.items()} == {n: v for n, (v, _) in expected.settings.items()}
    for binding, since in final.bindings.items():
        assert since is None or since == expected.bindings[binding], binding
    for name, (_, since) in final.settings.items():
        assert since is None or since == expected.settings[name][1], name


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("reader", sorted(READERS_OF_CHANGES))
def test_every_state_of_changes_equals_a_dict_replay(reader: str, seed: int, tmp_path: Path) -> None:
    sequence = random_sequence(seed, passed_over=True)
    expected = expected_state(sequence)
    final, extra = READERS_OF_CHANGES[reader](sequence, tmp_path)
    compare(final, expected)
    if reader == "projection":
        assert extra["skipped"] == expected.skipped
    else:
        assert extra == {"ignored": expected.ignored, "bindings": len(expected.bindings)}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("reader", sorted(READERS_OF_EVENTS))
def test_every_state_of_archived_events_equals_a_dict_replay(reader: str, seed: int, tmp_path: Path) -> None:
    sequence = random_sequence(seed, passed_over=False)
    expected = expected_state(sequence)
    final, _ = READERS_OF_EVENTS[reader](sequence, tmp_path)
    compare(final, expected)
    if reader in ("validity_fold", "open_intervals"):  # they keep since when each holds
        assert all(since is not None for since in final.bindings.values())


def test_the_sequences_exercise_what_they_claim() -> None:
    kinds = [c.kind for seed in range(12) for c in random_sequence(seed, passed_over=True).changes]
    assert {kind: kinds.count(kind) > 3 for kind in ChangeKind} == dict.fromkeys(ChangeKind, True)
    repeated = deletes_of_absent = 0
    for seed in range(12):
        sequence = random_sequence(seed, passed_over=False)
        live = set(sequence.snapshot_bindings)
        for change in sequence.changes:
            binding = change.binding
            if change.kind is ChangeKind.CREATED and binding is not None:
                repeated += binding in live
                live.add(binding)
            elif change.kind is ChangeKind.DELETED and binding is not None:
                deletes_of_absent += binding not in live
                live.discard(binding)
    assert repeated > 3 and deletes_of_absent > 3
