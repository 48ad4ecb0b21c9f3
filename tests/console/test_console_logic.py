"""The console's pure parts: sessions (with a hand-driven clock) and the page's filter and paging."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from replicator.contract.fields import BadRequestError
from replicator.contract.listing import ListedAcls
from replicator.server.console.paging import list_filter, page_bounds, page_of
from replicator.server.console.sessions import Credential, SessionStore
from store.acl import (
    AccessControlEntryFilter,
    AclBindingFilter,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


ALICE = Credential(principal="User:alice", token="t-alice")


def test_a_session_ends_when_idle_or_too_old() -> None:
    clock = Clock()
    store = SessionStore(idle_s=60, lifetime_s=300, clock=clock)
    sid = store.open(ALICE)
    clock.now += 59
    assert store.get(sid) == ALICE  # used now: idle counts from here
    clock.now += 59
    assert store.get(sid) == ALICE
    clock.now += 60
    assert store.get(sid) is None  # idle for 60 s
    assert len(store) == 0

    kept = store.open(ALICE)
    for _ in range(5):
        clock.now += 59
        found = store.get(kept)
    assert found == ALICE  # 295 s old, never idle
    clock.now += 5
    assert store.get(kept) is None  # 300 s old


def test_sessions_are_bounded_and_closed_by_id() -> None:
    clock = Clock()
    store = SessionStore(max_sessions=2, clock=clock)
    first, second = store.open(ALICE), store.open(ALICE)
    assert first != second
    clock.now += 1
    store.get(first)  # second is now the least recently used
    third = store.open(ALICE)
    assert store.get(second) is None
    assert store.get(first) == ALICE and store.get(third) == ALICE
    assert store.close(first) and not store.close(first)
    assert store.get(first) is None
    assert store.get("made-up") is None


def test_a_credential_is_a_token_or_a_certificate() -> None:
    with pytest.raises(ValueError):
        Credential(principal="User:x")
    with pytest.raises(ValueError):
        Credential(principal="User:x", token="t", peer_subject=((("commonName", "x"),),))


def _filter(resource_type: ResourceType, name: str | None, pattern: PatternType,
            principal: str | None = None) -> AclBindingFilter:  # fmt: skip
    return AclBindingFilter(
        pattern_filter=ResourcePatternFilter(resource_type=resource_type, name=name,
                                             pattern_type=pattern),
        entry_filter=AccessControlEntryFilter(principal=principal),
    )  # fmt: skip


def test_the_filter_of_kafka_acls_list() -> None:
    every = AclBindingFilter()
    assert list_filter({}) == every
    assert list_filter({"patternType": "prefixed"}) == every  # no resource: the type is moot
    assert list_filter({"resourceType": "TOPIC", "resourceName": " orders\x01"}) == _filter(
        ResourceType.TOPIC, "orders", PatternType.LITERAL
    )  # Java's trim
    assert list_filter({"resourceType": "transactional_id", "resourceName": " tx "}) == _filter(
        ResourceType.TRANSACTIONAL_ID, " tx ", PatternType.LITERAL
    )  # not trimmed, as Kafka
    assert list_filter({"resourceType": "CLUSTER", "patternType": "MATCH"}) == _filter(
        ResourceType.CLUSTER, "kafka-cluster", PatternType.MATCH
    )
    assert list_filter({"resourceType": "TOPIC", "resourceName": "*", "patternType": "any",
                        "principal": "User:bob"}) == _filter(
        ResourceType.TOPIC, "*", PatternType.ANY, "User:bob"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"patternType": "unknown"}, "'unknown'"),
        ({"resourceType": "TOPICS", "resourceName": "x"}, "'TOPICS'"),
        ({"resourceType": "TOPIC"}, "resourceName is empty"),
        ({"principal": "alice"}, "'alice'"),
        ({"principal": 7}, "7"),
    ],
)
def test_a_bad_filter_names_the_value(fields: dict[str, object], named: str) -> None:
    with pytest.raises(BadRequestError, match=named):
        list_filter(fields)


def test_page_bounds() -> None:
    assert page_bounds({}) == (0, 100)
    assert page_bounds({"skip": 200, "limit": 1000}) == (200, 1000)
    for bad in ({"skip": -1}, {"skip": "1"}, {"limit": 0}, {"limit": 1001}, {"limit": True}):
        with pytest.raises(BadRequestError):
            page_bounds(bad)


class Listing:
    """Resources of 3, 1 and 4 ACLs, counting the resources read."""

    def __init__(self) -> None:
        self.read = 0
        self.resources = [
            ListedAcls("TOPIC", name, "LITERAL",
                       [[f"User:{name}{i}", "*", "READ", "ALLOW"] for i in range(count)])
            for name, count in (("a", 3), ("b", 1), ("c", 4))
        ]  # fmt: skip

    def __iter__(self) -> Iterator[ListedAcls]:
        for resource in self.resources:
            self.read += 1
            yield resource


def _principals(rows: list[dict[str, str]]) -> list[str]:
    return [r["principal"] for r in rows]


def test_a_page_is_read_up_to_the_row_after_it() -> None:
    listing = Listing()
    page = page_of(listing, 0, 3)
    assert _principals(page.rows) == ["User:a0", "User:a1", "User:a2"] and page.more
    assert listing.read == 2  # the row after the page is b's: c is never read

    listing = Listing()
    page = page_of(listing, 2, 3)
    assert _principals(page.rows) == ["User:a2", "User:b0", "User:c0"] and page.more
    assert page.rows[1] == {"resourceType": "TOPIC", "resourceName": "b", "patternType": "LITERAL",
                            "principal": "User:b0", "host": "*", "operation": "READ",
                            "permissionType": "ALLOW"}  # fmt: skip

    page = page_of(Listing(), 4, 4)
    assert _principals(page.rows) == ["User:c0", "User:c1", "User:c2", "User:c3"]
    assert not page.more  # the listing ended with the page
    page = page_of(Listing(), 8, 4)
    assert page.rows == [] and not page.more
