"""The index's listing: Kafka's DescribeAcls order and filters, read from one snapshot as consumed.

Every expectation is independent of the ``K`` table: ``sorted()`` (``AclBinding.sort_key``, Java's
``String.compareTo`` on UTF-16 code units) of the bindings Kafka's filter semantics
(``AclBindingFilter.matches``) accept, over a plain dict replay of the same changes.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rocksdict import WriteBatch
from test_index import PRINCIPALS, RESOURCE_TYPES, random_history

from replicator.encoding import BY_ORDER, ascending, descending, encode_binding, order_key
from replicator.index import AclIndex, IndexView, listing
from replicator.index import meta as index_meta
from replicator.index.listing import ListedResource
from store.acl import (
    ANY_FILTER,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    java_string_key,
)

pytestmark = pytest.mark.unit

# Strings where UTF-8 (code point) order and Java's UTF-16 order differ: a supplementary
# character (a surrogate pair, below U+E000 in UTF-16) against U+E000..U+FFFF; NUL bytes and
# code units whose high byte is 0 (the escape of the encoding); a lone surrogate.
TRICKY = ["", "\x00", "\x00\x01", "a", "a\x00", "a\x00b", "ab", "b", "*", "\ue000", "\uffff",
          "\U0001f600", "\ud800", "é", "\u0100"]  # fmt: skip
texts = st.lists(st.sampled_from(TRICKY), max_size=4).map("".join) | st.text(max_size=6)


@settings(max_examples=400, deadline=None)
@given(a=texts, b=texts)
def test_ascending_and_descending_compare_as_java_strings(a: str, b: str) -> None:
    java = (java_string_key(a) > java_string_key(b)) - (java_string_key(a) < java_string_key(b))
    asc = (ascending(a) > ascending(b)) - (ascending(a) < ascending(b))
    desc = (descending(a) > descending(b)) - (descending(a) < descending(b))
    assert asc == java and desc == -java
    if a != b:  # prefix-free: a following field never decides between two different texts
        assert not ascending(b).startswith(ascending(a)) and not descending(b).startswith(descending(a))


def bindings_of(rng: random.Random, count: int) -> list[AclBinding]:
    """Bindings with the tricky names and principals, every resource and pattern type."""
    return [
        AclBinding.of(
            rng.choice(RESOURCE_TYPES), rng.choice(TRICKY) + rng.choice(["", "x", "\ue000"]),
            rng.choice([PatternType.LITERAL, PatternType.PREFIXED]),
            rng.choice([*PRINCIPALS, "User:\U0001f600", "User:\ue000"]),
            rng.choice(["*", "10.0.0.1", "\x00"]),
            rng.choice([AclOperation.READ, AclOperation.ALL, AclOperation.WRITE]),
            rng.choice([AclPermissionType.ALLOW, AclPermissionType.DENY]),
        )
        for _ in range(count)
    ]


def test_order_keys_sort_as_describe_acls() -> None:
    bindings = list(dict.fromkeys(bindings_of(random.Random(3), 3000)))
    by_key = sorted(bindings, key=lambda b: order_key(encode_binding(b)))
    assert by_key == sorted(bindings)


def flat(resources: Iterable[ListedResource]) -> list[AclBinding]:
    return [
        AclBinding.of(
            ResourceType.from_code(r.resource_type), r.name, PatternType.from_code(r.pattern_type),
            principal, host, AclOperation.from_code(op), AclPermissionType.from_code(perm),
        )
        for r in resources
        for principal, host, op, perm in r.acls
    ]


@pytest.fixture
def index(tmp_path: Path) -> Iterable[AclIndex]:
    idx = AclIndex(tmp_path / "index", reader_version=3)
    yield idx
    idx.close()


def log_key(binding: AclBinding) -> bytes:
    """A stand-in for the write path's key (test_index's, taking lone surrogates too)."""
    return "\x1f".join(binding.fields()).encode("utf-8", "surrogatepass")


def load(index: AclIndex, bindings: Iterable[AclBinding], offset: int = 0) -> None:
    batch = index.batch()
    for b in bindings:
        batch.create(log_key(b), b)
    batch.commit(offset=offset, timestamp_ms=offset)


def random_filter(rng: random.Random, names: list[str]) -> AclBindingFilter:
    return AclBindingFilter.of(
        rng.choice([ResourceType.ANY, *RESOURCE_TYPES]),
        rng.choice([None, None, *names]),
        rng.choice([PatternType.ANY, PatternType.MATCH, PatternType.LITERAL, PatternType.PREFIXED]),
        rng.choice([None, None, *PRINCIPALS]),
        rng.choice([None, None, "*"]),
        rng.choice([AclOperation.ANY, AclOperation.ANY, AclOperation.READ]),
        rng.choice([AclPermissionType.ANY, AclPermissionType.ANY, AclPermissionType.DENY]),
    )


def test_a_listing_is_the_union_of_its_filters_in_kafka_order(index: AclIndex) -> None:
    rng = random.Random(11)
    live = random_history(index, rng, 1500, 100)
    load(index, bindings_of(rng, 400), offset=index.position.offset + 1)
    bindings = list(index.view().bindings())
    names = sorted({b.name for b in bindings} | {b.name[:2] for b in bindings} | {"x", "*"})
    assert flat(index.view().listing([ANY_FILTER])) == sorted(bindings)
    assert len(bindings) >= len(live)
    for _ in range(400):
        filters = [random_filter(rng, names) for _ in range(rng.choice([1, 1, 2, 3]))]
        expected = sorted(b for b in bindings if any(f.matches(b) for f in filters))
        assert flat(index.view().listing(filters)) == expected, filters


def test_each_listed_resource_is_one_pattern_and_big_patterns_come_in_pieces(
    index: AclIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "MAX_ACLS_PER_RESOURCE", 3)
    bindings = list(dict.fromkeys(bindings_of(random.Random(5), 600)))
    load(index, bindings)
    resources = list(index.view().listing([ANY_FILTER]))
    assert flat(resources) == sorted(bindings)
    assert all(1 <= len(r.acls) <= 3 for r in resources)
    patterns = [(r.resource_type, r.name, r.pattern_type) for r in resources]
    # a pattern's pieces come in a row: once another pattern starts, it never comes back
    assert len(set(patterns)) == len([p for i, p in enumerate(patterns) if i == 0 or p != patterns[i - 1]])
    assert len(patterns) > len(set(patterns))  # some pattern did come in pieces


def test_a_listing_reads_the_snapshot_of_its_view_while_writes_go_on(index: AclIndex) -> None:
    rng = random.Random(2)
    before = list(dict.fromkeys(bindings_of(rng, 300)))
    load(index, before, offset=1)
    view: IndexView = index.view()
    stream = view.listing([ANY_FILTER])
    first = next(stream)
    batch = index.batch()
    for b in before:
        batch.remove(log_key(b))
    for b in bindings_of(rng, 50):
        batch.create(log_key(b), b)
    batch.commit(offset=2, timestamp_ms=2)
    assert flat([first, *stream]) == sorted(before)
    assert view.position.offset == 1


def test_an_index_of_layout_1_gains_the_order_table_when_opened(tmp_path: Path) -> None:
    bindings = list(dict.fromkeys(bindings_of(random.Random(8), 500)))
    index = AclIndex(tmp_path / "index", reader_version=3)
    load(index, bindings, offset=41)
    # Make it what layout 1 wrote: no K keys, layout 1.
    wb = WriteBatch(raw_mode=True)
    for b in bindings:
        wb.delete(order_key(encode_binding(b)), index.tables.acl_cf)
    wb.put(index_meta.M_LAYOUT, index_meta.pack_i64(1), index.tables.meta_cf)
    index._db.write(wb)
    assert list(index.view().listing([ANY_FILTER])) == []
    index.close()

    upgraded = AclIndex(tmp_path / "index", reader_version=3)
    try:
        assert flat(upgraded.view().listing([ANY_FILTER])) == sorted(bindings)
        assert upgraded.position.offset == 41 and upgraded.counters.bindings == len(bindings)
        stored = index_meta.decode_meta(dict(upgraded.tables.meta.items()))
        assert stored.layout == index_meta.INDEX_LAYOUT_VERSION == 2
        keys = upgraded.tables.acl.iter()
        keys.seek(BY_ORDER)
        count = 0
        while keys.valid() and keys.key().startswith(BY_ORDER):
            count += 1
            keys.next()
        del keys
        assert count == len(bindings)
    finally:
        upgraded.close()
