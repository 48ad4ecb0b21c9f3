"""The cause of a denial, on real Spark over a hand-written history (archive plus tail).

Each expected cause below is worked out by hand from the history's comments, not by asking
the decision rules: the offset that turned the request from ALLOWED to DENIED, its actor, its
type and binding or setting, and the log time the embedded log gave that record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli.present.audit import cause_json
from jobs.audit.cause import Cause, CauseStatus, DeniedRequest, cause_of, causes
from jobs.common import LogSource
from jobs.common.events import HistoryEvent
from jobs.history import HistoryArchive, Interval
from jobs.history.job import run_archive
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action
from store.authorizer.config import ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG
from store.codec import JsonEventCodec, event_key
from store.events import AclCreated, AclDeleted, ChangeEvent, ConfigAltered
from store.log.embedded import EmbeddedChangeLog
from store.principal import SUPER_USERS_CONFIG

TOPIC, READ = ResourceType.TOPIC, AclOperation.READ
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl(
    name: str, pattern: PatternType, principal: str, host: str, permission: AclPermissionType
) -> AclBinding:
    return AclBinding.of(TOPIC, name, pattern, principal, host, READ, permission)


BOB_ALLOW = acl("orders", LITERAL, "User:bob", "*", ALLOW)
CAROL_ALLOW = acl("orders", LITERAL, "User:carol", "*", ALLOW)
BOB_PREFIX_DENY = acl("ord", PREFIXED, "User:bob", "*", DENY)
BOB_HOST_DENY = acl("orders", LITERAL, "User:bob", "10.0.0.1", DENY)
GUS_FRESH = acl("fresh", LITERAL, "User:gus", "*", ALLOW)

# offset: event (actor) -- what it does to the requests asked below
HISTORY: list[tuple[str, type[ChangeEvent], dict[str, Any]]] = [
    ("alice", AclCreated, {"binding": BOB_ALLOW}),  # 0: bob may read orders
    ("alice", AclCreated, {"binding": CAROL_ALLOW}),  # 1: carol may read orders
    ("mallory", AclCreated, {"binding": BOB_PREFIX_DENY}),  # 2: bob denied (prefixed DENY)
    ("alice", AclCreated, {"binding": acl("other", LITERAL, "User:dave", "*", ALLOW)}),  # 3: unrelated
    ("ops", AclDeleted, {"binding": CAROL_ALLOW}),  # 4: carol denied (her ALLOW removed)
    ("ops", ConfigAltered, {"name": SUPER_USERS_CONFIG, "value": "User:erin"}),  # 5: erin allowed
    # --- archived up to here; the rest is the log's tail ---
    ("ops", ConfigAltered, {"name": SUPER_USERS_CONFIG, "value": None}),  # 6: erin denied
    ("alice", AclDeleted, {"binding": BOB_PREFIX_DENY}),  # 7: bob allowed again
    ("mallory", AclCreated, {"binding": BOB_HOST_DENY}),  # 8: bob denied from 10.0.0.1 only
    # 9: anyone reads fresh (no ACL on it)
    ("ops", ConfigAltered, {"name": ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, "value": "true"}),
    ("gus", AclCreated, {"binding": GUS_FRESH}),  # 10: fresh has an ACL now: hal denied
]
ARCHIVED = 6


def request(principal: str, name: str, offset: int, host: str = "10.0.0.1") -> DeniedRequest:
    return DeniedRequest(
        principal=principal, host=host, operation=READ, resource_type=TOPIC, resource_name=name,
        pattern_type=LITERAL, acl_offset=offset,
    )  # fmt: skip


@pytest.mark.spark
def test_the_cause_is_the_change_that_closed_the_last_allowed_stretch(spark: Any, tmp_path: Path) -> None:
    codec = JsonEventCodec()
    records = []
    for i, (actor, kind, content) in enumerate(HISTORY):
        event = kind(**content, actor=f"User:{actor}", request_id=f"r{i}", time_ms=1_700_000_000_000 + i)
        records.append((event_key(event), codec.encode(event)))
    data_dir, location = tmp_path / "log", str(tmp_path / "archive")
    source = LogSource.embedded(data_dir)
    with EmbeddedChangeLog(data_dir) as log:
        log.append(records[:ARCHIVED])
        run_archive(spark, source, location, str(tmp_path / "cp"), once=True)
        log.append(records[ARCHIVED:])
        times = {r.offset: r.timestamp_ms for r in log.read(0, max_records=100)}

    asked = {
        "bob after the prefixed DENY": request("User:bob", "orders", 3),
        "bob from another host, same stretch": request("User:bob", "orders", 5, host="10.0.0.2"),
        "bob after the host DENY": request("User:bob", "orders", 10),
        "carol after her ALLOW went": request("User:carol", "orders", 4),
        "erin after super.users changed": request("User:erin", "orders", 9),
        "hal after fresh got an ACL": request("User:hal", "fresh", 10),
        "zed, never allowed": request("User:zed", "orders", 10),
        "bob while allowed again": request("User:bob", "orders", 7),
        "beyond the log": request("User:bob", "orders", 99),
        "by resource type": DeniedRequest(
            principal="User:bob", host="10.0.0.1", operation=READ, resource_type=TOPIC,
            resource_name="*", pattern_type=PatternType.ANY, acl_offset=10,
        ),
    }
    found = causes(HistoryArchive.for_path(spark, location, source=source), asked.values())
    got = {what: _summary(found[r]) for what, r in asked.items()}
    mallory = ("User:mallory", "ACL_CREATED")
    assert got == {
        "bob after the prefixed DENY": ("FOUND", 2, *mallory, BOB_PREFIX_DENY, 0),
        "bob from another host, same stretch": ("FOUND", 2, *mallory, BOB_PREFIX_DENY, 0),
        "bob after the host DENY": ("FOUND", 8, *mallory, BOB_HOST_DENY, 7),
        "carol after her ALLOW went": ("FOUND", 4, "User:ops", "ACL_DELETED", CAROL_ALLOW, 1),
        "erin after super.users changed": ("FOUND", 6, "User:ops", "CONFIG_ALTERED", None, 5),
        "hal after fresh got an ACL": ("FOUND", 10, "User:gus", "ACL_CREATED", GUS_FRESH, 9),
        "zed, never allowed": ("NEVER_ALLOWED",),
        "bob while allowed again": ("ALLOWED_AT_OFFSET",),
        "beyond the log": ("BEYOND_HISTORY",),
        "by resource type": ("BY_RESOURCE_TYPE",),
    }
    erin = found[asked["erin after super.users changed"]]
    assert erin.event is not None
    assert (erin.event.config_name, erin.event.config_value) == (SUPER_USERS_CONFIG, None)
    checked = ("bob after the prefixed DENY", "erin after super.users changed", "hal after fresh got an ACL")
    for what in checked:
        cause = cause_json(found[asked[what]])
        assert cause is not None
        assert cause["time"] == _iso(times[cause["offset"]]), what
        assert cause["requestId"] == f"r{cause['offset']}"
    assert cause_json(found[asked["zed, never allowed"]]) is None


def _summary(cause: Cause) -> tuple[Any, ...]:
    if cause.event is None:
        return (cause.status.name,)
    opened = None if cause.allowed_by is None else cause.allowed_by.offset
    event = cause.event
    return (cause.status.name, event.offset, event.actor, event.type, event.binding, opened)


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _event(offset: int) -> HistoryEvent:
    return HistoryEvent(offset=offset, time_ms=1000 + offset, type="ACL_CREATED")


def _stretch(start: int, end: int | None) -> Interval:
    return Interval(
        from_offset=start, to_offset=end, from_ms=1000 + start, to_ms=None if end is None else 1000 + end,
        opened_by=_event(start), closed_by=None if end is None else _event(end),
    )  # fmt: skip


@pytest.mark.unit
@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (2, ("NEVER_ALLOWED", None)),  # before the first stretch
        (3, ("ALLOWED_AT_OFFSET", None)),  # [3, 5): allowed just after 3
        (5, ("FOUND", 5)),  # denied just after 5: 5 is the cause
        (8, ("FOUND", 5)),
        (9, ("ALLOWED_AT_OFFSET", None)),
        (12, ("FOUND", 12)),  # the last closing at or before the offset, not the first
        (40, ("ALLOWED_AT_OFFSET", None)),  # the open stretch from 20
    ],
)
def test_cause_of_picks_the_last_closing_at_or_before_the_offset(
    offset: int, expected: tuple[str, int | None]
) -> None:
    intervals = [_stretch(3, 5), _stretch(9, 12), _stretch(20, None)]
    cause = cause_of(intervals, offset)
    assert (cause.status.name, None if cause.event is None else cause.event.offset) == expected
    assert cause.status is CauseStatus[expected[0]]


@pytest.mark.spark
def test_causes_over_a_random_history_match_the_replay(spark: Any, tmp_path: Path) -> None:
    """Each principal (zed is named by no binding), two hosts, four resources, three offsets
    (archive and tail): the cause offset is the end of the replay's last ALLOWED stretch at or
    before the offset (the replay asks the decision rules after every record, through
    KIP-290's MATCH filter, not the archive)."""
    from tests.jobs.history_support import NAMED, REQUEST_HOSTS, RESOURCES, allowed_intervals, random_history
    from tests.jobs.history_support import replay as replayed

    records = random_history(seed=12, count=400)
    data_dir, location = tmp_path / "log", str(tmp_path / "archive")
    source = LogSource.embedded(data_dir)
    with EmbeddedChangeLog(data_dir) as log:
        log.append([(r.key, r.value) for r in records[:300]])
        run_archive(spark, source, location, str(tmp_path / "cp"), once=True, max_records_per_batch=100)
        log.append([(r.key, r.value) for r in records[300:]])
    states = list(replayed(records))
    asked = [
        DeniedRequest(principal=p, host=h, operation=READ, resource_type=t, resource_name=n,
                      pattern_type=LITERAL, acl_offset=o)
        for p in (*NAMED, "User:zed") for h in REQUEST_HOSTS for t, n in RESOURCES for o in (150, 320, 399)
    ]  # fmt: skip
    found = causes(HistoryArchive.for_path(spark, location, source=source), asked)
    statuses = set()
    for r in asked:
        action = Action(READ, r.resource_type, r.resource_name)
        stretches = allowed_intervals(states, r.principal, r.host, action)
        ended = [end for start, end in stretches if end is not None and end <= r.acl_offset]
        inside = any(s <= r.acl_offset and (e is None or e > r.acl_offset) for s, e in stretches)
        expected = "ALLOWED_AT_OFFSET" if inside else ("FOUND", max(ended)) if ended else "NEVER_ALLOWED"
        cause = found[r]
        got = ("FOUND", cause.event.offset) if cause.event is not None else cause.status.name
        assert got == expected, r
        statuses.add(cause.status)
    assert statuses == {CauseStatus.FOUND, CauseStatus.NEVER_ALLOWED, CauseStatus.ALLOWED_AT_OFFSET}
