"""A listing resumed after a cursor, and a listing by principal from the by-principal table.

Expectations are independent of the ``K`` and ``U`` tables: the bindings Kafka's filter
semantics accept (``AclBindingFilter.matches``), ``sorted()`` (DescribeAcls order, Java's
string order), those after the cursor kept (``AclBinding`` comparison), over the index's own
plain list of bindings.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from test_index import PRINCIPALS, random_history
from test_listing import bindings_of, flat, load, random_filter

from replicator.index import AclIndex, listing
from store.acl import (
    ANY_FILTER,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    ResourcePatternFilter,
    ResourceType,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def index(tmp_path: Path) -> Iterable[AclIndex]:
    idx = AclIndex(tmp_path / "index", reader_version=3)
    yield idx
    idx.close()


def _by_principal(principal: str, resource_type: ResourceType = ResourceType.ANY) -> AclBindingFilter:
    return AclBindingFilter(
        pattern_filter=ResourcePatternFilter(resource_type=resource_type),
        entry_filter=AccessControlEntryFilter(principal=principal),
    )


def test_a_listing_after_a_cursor_is_the_rest_of_the_listing(index: AclIndex) -> None:
    rng = random.Random(17)
    random_history(index, rng, 1500, 100)
    load(index, bindings_of(rng, 400), offset=index.position.offset + 1)
    bindings = list(index.view().bindings())
    names = sorted({b.name for b in bindings} | {b.name[:2] for b in bindings} | {"x", "*"})
    strangers = bindings_of(random.Random(99), 50)  # cursors that were never live
    everyone = sorted({b.entry.principal for b in bindings})
    for round_ in range(400):
        if round_ % 4 == 0:  # principals only: read from the by-principal table
            filters = [_by_principal(p, rng.choice([ResourceType.ANY, ResourceType.TOPIC]))
                       for p in rng.sample(everyone, rng.choice([1, 1, 2]))]  # fmt: skip
        else:
            filters = [random_filter(rng, names) for _ in range(rng.choice([1, 1, 2, 3]))]
        expected = sorted(b for b in bindings if any(f.matches(b) for f in filters))
        after = rng.choice([*bindings, *strangers, *(expected[:3] or bindings[:1])])
        rest = [b for b in expected if b > after]
        assert flat(index.view().listing(filters, after)) == rest, (filters, after)
        assert flat(index.view().listing(filters)) == expected, filters
    # the whole listing walked a page at a time, each page resumed after the last one's end
    pages: list[AclBinding] = []
    cursor: AclBinding | None = None
    while True:
        page = flat(index.view().listing([ANY_FILTER], cursor))[:97]
        if not page:
            break
        pages += page
        cursor = page[-1]
    assert pages == sorted(bindings)


class _Counting:
    """A RocksDB iterator that counts the keys it steps over."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.steps = 0

    def seek(self, key: bytes) -> None:
        self.inner.seek(key)

    def valid(self) -> bool:
        return bool(self.inner.valid())

    def key(self) -> bytes:
        return bytes(self.inner.key())

    def value(self) -> bytes:
        return bytes(self.inner.value())

    def next(self) -> None:
        self.steps += 1
        self.inner.next()


def test_a_page_costs_the_page_not_the_state(index: AclIndex) -> None:
    rng = random.Random(4)
    bindings = list(dict.fromkeys(bindings_of(rng, 3000)))
    load(index, bindings)
    ordered = sorted(bindings)
    view = index.view()
    # resumed deep in the listing: the scan steps over the page's rows and the rest of the
    # last pattern it yields (a resource is yielded once the next pattern starts), not the 2,000
    # rows before the page
    deep = _Counting(view._iter)
    resources = listing.scan(deep, listing.plan([ANY_FILTER], {}), _order(ordered[2000]))
    page = flat(_take(resources, 50))
    assert page == ordered[2001:2051]
    last = ordered[2050]
    rest_of_pattern = sum(1 for b in ordered[2051:] if b.pattern == last.pattern)
    assert deep.steps <= 50 + rest_of_pattern + 1
    # one principal: its bindings are read from the by-principal table, not the whole state
    principal = PRINCIPALS[0]
    own = [b for b in ordered if b.entry.principal == principal]
    assert 0 < len(own) < len(ordered) // 4
    counted = _Counting(view._iter)
    plan = listing.plan([_by_principal(principal)], {})
    assert plan.principals == (principal,)
    assert flat(listing.scan(counted, plan)) == own
    assert counted.steps == len(own)


def _order(binding: AclBinding) -> bytes:
    from replicator.encoding import encode_binding, order_key

    return order_key(encode_binding(binding))


def _take(resources: Iterable[Any], rows: int) -> list[Any]:
    """Resources until ``rows`` ACLs are read (the last one cut), as a page reads a listing."""
    out: list[Any] = []
    seen = 0
    for r in resources:
        out.append(listing.ListedResource(r.resource_type, r.name, r.pattern_type, r.acls[: rows - seen]))
        seen += len(out[-1].acls)
        if seen >= rows:
            break
    return out
