"""The access diff on Spark: the same engine (:mod:`store.access_diff`), distributed over the
state partitioned by resource type and name prefix.

A region's decision needs only the bindings whose patterns apply to its names, and its name
set only the patterns under its key.  So with a partition key of (resource type, the first
``depth`` characters of the pattern name):

* every pattern at least ``depth`` long goes to the partition of its first ``depth``
  characters, which decides the regions keyed there (their carved-out patterns share the key);
* the *short* patterns (LITERAL ``*`` and names shorter than ``depth``) apply across
  partitions: they are broadcast to every partition of their type;
* the regions keyed by a short name (and the rest of each type, key ``""``) are decided on
  the driver from the short patterns' bindings and the names of all patterns (to carve).

Each partition runs :func:`store.access_diff.partial_diff`; the union of the rows is
:func:`store.access_diff.access_diff`'s answer (``tests/jobs/test_access_diff_job.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from store.access_diff import AccessDelta, AccessDiff, AclState, Change, compact, partial_diff
from store.acl import WILDCARD_RESOURCE, AclBinding, PatternType, ResourceType, parse_fields

Fields = tuple[str, str, str, str, str, str, str]
Keyed = tuple[tuple[int, str], tuple[int, Fields]]

CONCRETE_TYPES = tuple(t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN))


def is_short(binding: AclBinding, depth: int) -> bool:
    """Applies across partitions: the LITERAL ``*`` or a name shorter than ``depth``."""
    if binding.pattern_type is PatternType.LITERAL and binding.name == WILDCARD_RESOURCE:
        return True
    return len(binding.name) < depth


def _binding(fields: Fields) -> AclBinding:
    return AclBinding.of(*parse_fields(fields))


def _states(
    sides: Iterable[tuple[int, Fields]], settings: tuple[AclState, AclState]
) -> tuple[AclState, AclState]:
    bindings: tuple[set[AclBinding], set[AclBinding]] = (set(), set())
    for side, fields in sides:
        bindings[side].add(_binding(fields))
    before, after = settings
    return (
        AclState(frozenset(bindings[0]), before.super_users, before.allow_everyone_if_no_acl_found),
        AclState(frozenset(bindings[1]), after.super_users, after.allow_everyone_if_no_acl_found),
    )


def decide_partition(
    key: tuple[int, str],
    sides: Iterable[tuple[int, Fields]],
    short: dict[int, list[tuple[int, Fields]]],
    settings: tuple[AclState, AclState],
    folded: bool = False,
) -> list[AccessDelta]:
    """The rows of the regions keyed under ``key`` (resource type code, name prefix)."""
    code, stem = key
    before, after = _states([*sides, *short.get(code, [])], settings)
    depth = len(stem)
    diff = partial_diff(
        before,
        after,
        ResourceType(code),
        lambda k: len(k) >= depth and k.startswith(stem) and k != WILDCARD_RESOURCE,
    )
    if folded:
        diff = compact(diff)
    return [*diff.widened, *diff.narrowed]


def keyed(bindings: Iterable[AclBinding], side: int, depth: int) -> Iterator[Keyed]:
    for b in bindings:
        if not is_short(b, depth):
            yield (int(b.resource_type), b.name[:depth]), (side, b.fields())


def changed_keys(before: AclState, after: AclState, depth: int) -> set[tuple[int, str]] | None:
    """The partition keys whose regions can differ, or None for every key.

    With the same settings, a region's decisions change only if a binding that applies to it
    changed: one keyed in its partition, or a short one (which applies across its type).  So
    only the partitions of the changed bindings' keys are decided, and every partition of a
    type with a changed short binding; the others hold no row (a downgrade: only partitions
    with a binding the older reader ignores).
    """
    if (before.super_users, before.allow_everyone_if_no_acl_found) != (
        after.super_users, after.allow_everyone_if_no_acl_found
    ):  # fmt: skip
        return None
    changed = before.bindings ^ after.bindings
    every_type = {int(b.resource_type) for b in changed if is_short(b, depth)}
    keys = {(int(b.resource_type), b.name[:depth]) for b in changed if not is_short(b, depth)}
    for state in (before, after):
        keys.update(k for k, _ in keyed(
            (b for b in state.bindings if int(b.resource_type) in every_type), 0, depth))  # fmt: skip
    return keys


def distributed_access_diff(
    spark: Any,
    before: AclState,
    after: AclState,
    *,
    depth: int = 2,
    partitions: int = 8,
    folded: bool = False,
) -> AccessDiff:
    """:func:`store.access_diff.access_diff` of ``before`` and ``after`` on ``spark``;
    ``folded``: :func:`store.access_diff.compact` of it, each partition's rows folded before
    they leave it (far fewer rows to collect), then their union."""
    sc = spark.sparkContext
    settings = (AclState(frozenset(), before.super_users, before.allow_everyone_if_no_acl_found),
                AclState(frozenset(), after.super_users, after.allow_everyone_if_no_acl_found))  # fmt: skip
    short: dict[int, list[tuple[int, Fields]]] = {}
    for side, state in enumerate((before, after)):
        for b in state.bindings:
            if is_short(b, depth):
                short.setdefault(int(b.resource_type), []).append((side, b.fields()))
    shared = sc.broadcast(short)
    records = [*keyed(before.bindings, 0, depth), *keyed(after.bindings, 1, depth)]
    wanted = changed_keys(before, after, depth)
    if wanted is not None:
        records = [r for r in records if r[0] in wanted]
    rows: list[AccessDelta] = (
        sc.parallelize(records, partitions)
        .groupByKey(partitions)
        .flatMap(lambda kv: decide_partition(kv[0], kv[1], shared.value, settings, folded))
        .collect()
    )
    # the driver: regions keyed by a short name, and the rest of each type
    carved = {
        (b.resource_type, b.pattern_type, b.name)
        for state in (before, after)
        for b in state.bindings
        if not is_short(b, depth)
    }
    for rt in CONCRETE_TYPES:
        sides = short.get(int(rt), [])
        b_state, a_state = _states(sides, settings)
        diff = partial_diff(
            b_state, a_state, rt, lambda k: len(k) < depth or k == WILDCARD_RESOURCE,
            carved=[(pt, name) for t, pt, name in carved if t is rt],
        )  # fmt: skip
        rows.extend([*diff.widened, *diff.narrowed])
    shared.unpersist()
    diff = AccessDiff(
        widened=tuple(r for r in rows if r.change is Change.WIDENED),
        narrowed=tuple(r for r in rows if r.change is Change.NARROWED),
    )
    return compact(diff) if folded else diff
