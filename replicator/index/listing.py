"""A listing of the index in Kafka's DescribeAcls order, read as it is sent.

The ``K`` table (:func:`replicator.encoding.order_key`) keeps the bindings in the order of
Kafka's ``StandardAcl.compareTo``, so a listing is a forward scan of one consistent view:
of the whole table (every binding, or a filter that names no resource), of one resource
type, or of the few patterns a filter can match (an exact name, or MATCH's applicable
patterns), each range scanned in key order.  Nothing is sorted and nothing is gathered but
the ACLs of one pattern, at most :data:`MAX_ACLS_PER_RESOURCE` at a time: a pattern with more
comes as several :class:`ListedResource` in a row.

Several filters list their union (what ``kafka-acls.sh --list --topic a --topic b`` prints),
each binding once: the ranges of all filters are merged before the scan.

A listing may resume after a binding (``after``: the ``K`` key of the last binding a reader
has, a cursor): each range is entered at the first key past it, so a page deep in the listing
costs its own rows.  A listing whose every filter names a principal and no resource reads the
by-principal table instead of the whole ``K`` table (:func:`scan_principals`): those
principals' bindings, put in DescribeAcls order by their ``K`` keys, so such a page costs the
principals' bindings, not the state's.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from replicator.encoding import BY_ORDER, BY_PRINCIPAL, lp, order_key, order_prefix
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.authorizer.applicable import applicable_patterns

MAX_ACLS_PER_RESOURCE: Final = 1024
"""ACLs of one pattern held at a time; a pattern with more is listed in several pieces."""

ListedAcl = tuple[str, str, int, int]
"""One ACL of a listed pattern: principal, host, operation code, permission type code."""


@dataclass(frozen=True, slots=True)
class ListedResource:
    """A resource pattern (its Kafka codes and name) and ACLs of it, in DescribeAcls order."""

    resource_type: int
    name: str
    pattern_type: int
    acls: list[ListedAcl]


Accept = Callable[[int, str, int, ListedAcl], bool]
"""Whether a binding (resource type, name, pattern type, ACL) is listed."""

def _binding(resource_type: int, name: str, pattern_type: int, acl: ListedAcl) -> AclBinding:
    principal, host, operation, permission = acl
    return AclBinding.of(
        ResourceType.from_code(resource_type), name, PatternType.from_code(pattern_type),
        principal, host, AclOperation.from_code(operation),
        AclPermissionType.from_code(permission),
    )  # fmt: skip


def _entry_check(acl_filter: AclBindingFilter) -> Accept | None:
    """A filter that names no resource as a check of the raw values (it reads every binding
    of its type); None when it matches every binding."""
    pf, ef = acl_filter.pattern_filter, acl_filter.entry_filter
    rt = None if pf.resource_type is ResourceType.ANY else int(pf.resource_type)
    pt = None if pf.pattern_type in (PatternType.ANY, PatternType.MATCH) else int(pf.pattern_type)
    op = None if ef.operation is AclOperation.ANY else int(ef.operation)
    perm = None if ef.permission_type is AclPermissionType.ANY else int(ef.permission_type)
    principal, host = ef.principal, ef.host
    if rt is None and pt is None and op is None and perm is None and principal is None and host is None:
        return None

    def accept(resource_type: int, name: str, pattern_type: int, acl: ListedAcl) -> bool:
        return (
            (rt is None or resource_type == rt)
            and (pt is None or pattern_type == pt)
            and (principal is None or acl[0] == principal)
            and (host is None or acl[1] == host)
            and (op is None or acl[2] == op)
            and (perm is None or acl[3] == perm)
        )

    return accept


def _matches(acl_filter: AclBindingFilter) -> Accept:
    """The filter's own ``matches`` (KIP-290's rules, written once in :mod:`store.acl`), for
    the bindings of the few patterns a named filter reads."""

    def accept(resource_type: int, name: str, pattern_type: int, acl: ListedAcl) -> bool:
        return acl_filter.matches(_binding(resource_type, name, pattern_type, acl))

    return accept


@dataclass(frozen=True, slots=True)
class ListingPlan:
    """The key ranges to scan, in key order and disjoint, and the check of each binding
    (None: every binding in the ranges is listed)."""

    ranges: tuple[bytes, ...]
    accept: Accept | None
    principals: tuple[str, ...] = ()
    """When every filter names a principal and no resource: those principals (the listing
    reads the by-principal table, :func:`scan_principals`)."""


def plan(
    filters: Sequence[AclBindingFilter], prefix_lengths: Mapping[int, tuple[int, ...]]
) -> ListingPlan:
    """What to scan for the union of ``filters``.

    A filter that names no resource (or no resource type) reads every binding of its type (or
    all); a named one reads its patterns: the name's LITERAL and PREFIXED patterns (or the one
    its pattern type names), or for MATCH the patterns that apply to the name, at the PREFIXED
    lengths the index holds.  A range inside another is dropped, so each binding is read once.
    """
    prefixes: set[bytes] = set()
    checks: list[Accept | None] = []
    principals = sorted({f.entry_filter.principal or "" for f in filters})
    by_principal = all(
        f.pattern_filter.name is None and f.entry_filter.principal is not None for f in filters
    )
    for acl_filter in filters:
        pf = acl_filter.pattern_filter
        if pf.name is None:
            rt = pf.resource_type
            prefixes.add(BY_ORDER if rt is ResourceType.ANY else order_prefix(int(rt)))
            checks.append(_entry_check(acl_filter))
            continue
        checks.append(_matches(acl_filter))
        if pf.resource_type is ResourceType.ANY:
            prefixes.add(BY_ORDER)
            continue
        rt_code = int(pf.resource_type)
        if pf.pattern_type is PatternType.MATCH:
            for pattern_type, name in applicable_patterns(pf.name, prefix_lengths.get(rt_code, ())):
                prefixes.add(order_prefix(rt_code, name, int(pattern_type)))
        elif pf.pattern_type is PatternType.ANY:
            prefixes.add(order_prefix(rt_code, pf.name))
        else:
            prefixes.add(order_prefix(rt_code, pf.name, int(pf.pattern_type)))
    ranges: list[bytes] = []
    for prefix in sorted(prefixes):  # a range inside another sorts right after it
        if not ranges or not prefix.startswith(ranges[-1]):
            ranges.append(prefix)
    named = tuple(principals) if by_principal and filters else ()
    if any(check is None for check in checks):
        return ListingPlan(tuple(ranges), None, named)
    found = tuple(c for c in checks if c is not None)
    if len(found) == 1:
        return ListingPlan(tuple(ranges), found[0], named)

    def accept(resource_type: int, name: str, pattern_type: int, acl: ListedAcl) -> bool:
        return any(check(resource_type, name, pattern_type, acl) for check in found)

    return ListingPlan(tuple(ranges), accept, named)


_U32: Final = struct.Struct(">I")


def entry_key(after: bytes, prefix: bytes) -> bytes | None:
    """Where a scan of the range ``prefix`` resumes after the key ``after``: the range's first
    key past it (``after + 0x00``, the least key greater), the range's start when ``after``
    comes before it, None when the whole range comes before ``after``."""
    if after.startswith(prefix):
        return after + b"\x00"
    return prefix if after < prefix else None


def scan(iterator: Any, listing: ListingPlan, after: bytes | None = None) -> Iterator[ListedResource]:
    """The bindings of ``listing``'s ranges that it accepts, read from ``iterator`` (a RocksDB
    iterator over the ``K`` table: key ``K...``, value ``E``), grouped by pattern; with
    ``after`` (a ``K`` key), only those past it."""
    if listing.principals:
        yield from scan_principals(iterator, listing, after)
        return
    for prefix in listing.ranges:
        start = prefix if after is None else entry_key(after, prefix)
        if start is not None:
            yield from grouped(_range_values(iterator, prefix, start), listing.accept)


def _range_values(iterator: Any, prefix: bytes, start: bytes) -> Iterator[bytes]:
    """The values ``E`` of the keys under ``prefix`` from ``start`` on."""
    iterator.seek(start)
    while iterator.valid():
        key: bytes = iterator.key()
        if not key.startswith(prefix):
            return
        yield iterator.value()
        iterator.next()


def grouped(encoded: Iterable[bytes], accept: Accept | None) -> Iterator[ListedResource]:
    """Bindings ``E`` (:func:`replicator.encoding.encode_binding`) in DescribeAcls order, the
    ones ``accept`` takes, grouped by pattern (at most :data:`MAX_ACLS_PER_RESOURCE` a group).

    ``E`` starts with the pattern (``rt | pt | lp(name)``): consecutive bindings of one
    pattern share that head, which is decoded once."""
    unpack = _U32.unpack_from
    head = b""
    resource_type = pattern_type = 0
    name = ""
    acls: list[ListedAcl] = []
    for enc in encoded:
        if not head or not enc.startswith(head):
            if acls:
                yield ListedResource(resource_type, name, pattern_type, acls)
                acls = []
            (size,) = unpack(enc, 2)
            head = enc[: 6 + size]
            resource_type, pattern_type = enc[0], enc[1]
            name = enc[6 : 6 + size].decode("utf-8", "surrogatepass")
        pos = len(head)
        (size,) = unpack(enc, pos)
        principal = enc[pos + 4 : pos + 4 + size].decode("utf-8", "surrogatepass")
        pos += 4 + size
        (size,) = unpack(enc, pos)
        host = enc[pos + 4 : pos + 4 + size].decode("utf-8", "surrogatepass")
        pos += 4 + size
        acl = (principal, host, enc[pos], enc[pos + 1])
        if accept is None or accept(resource_type, name, pattern_type, acl):
            acls.append(acl)
            if len(acls) == MAX_ACLS_PER_RESOURCE:
                yield ListedResource(resource_type, name, pattern_type, acls)
                acls = []
    if acls:
        yield ListedResource(resource_type, name, pattern_type, acls)


def _principal_rows(iterator: Any, principal: str, after: bytes | None) -> list[tuple[bytes, bytes]]:
    """``(K key, E)`` of each binding of ``principal`` past ``after``, from the by-principal
    table (``U | lp(principal) | rt | E``)."""
    prefix = BY_PRINCIPAL + lp(principal)
    skip = len(prefix) + 1
    out: list[tuple[bytes, bytes]] = []
    iterator.seek(prefix)
    while iterator.valid():
        key: bytes = iterator.key()
        if not key.startswith(prefix):
            break
        enc = key[skip:]
        order = order_key(enc)
        if after is None or order > after:
            out.append((order, enc))
        iterator.next()
    return out


def scan_principals(
    iterator: Any, listing: ListingPlan, after: bytes | None = None
) -> Iterator[ListedResource]:
    """:func:`scan` of a listing by principals: their bindings from the by-principal table,
    sorted by ``K`` key (DescribeAcls order), the listing's check applied, grouped by pattern.
    Costs the principals' bindings (read and sorted), whatever the state's size."""
    rows = [row for principal in listing.principals for row in _principal_rows(iterator, principal, after)]
    rows.sort()
    yield from grouped((enc for _, enc in rows), listing.accept)
