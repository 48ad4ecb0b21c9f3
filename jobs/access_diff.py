"""The access diff on Spark: the same engine (:mod:`store.access_diff`), distributed over the
state partitioned by resource type and name prefix.

A region's decision needs only the bindings whose patterns apply to its names, and its name
set only the patterns under its key.  So with a partition key of (resource type, the first
``depth`` characters of the pattern name):

* every pattern at least ``depth`` long goes to the partition of its first ``depth``
  characters, which decides the regions keyed there (their carved-out patterns share the key);
* the *short* patterns (LITERAL ``*`` and names shorter than ``depth``) apply across
  partitions: they are shipped with the job to every partition of their type;
* the regions keyed by a short name (and the rest of each type, key ``""``) are decided on
  the driver from the short patterns' bindings and the names of all patterns (to carve).

Only the keys whose regions can differ are shipped (:func:`changed_keys`): for a downgrade,
those holding a binding the older reader ignores.  Each binding travels once, with the
states it is in (:data:`BEFORE`, :data:`AFTER`), as Arrow columns: the driver builds one
table, Spark repartitions it by key in the JVM, and each Python worker
(``DataFrame.mapInArrow``) groups its batches by key and runs
:func:`store.access_diff.partial_diff` per key; its rows come back pickled, one cell per
partition.  The union of the rows is :func:`store.access_diff.access_diff`'s answer
(``tests/jobs/test_access_diff_job.py``).
"""

from __future__ import annotations

import contextlib
import gc
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from store.access_diff import (
    AccessDelta,
    AccessDiff,
    AclState,
    Change,
    NameSet,
    Request,
    compact,
    partial_diff,
)
from store.acl import (
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_fields,
)

Fields = tuple[str, str, str, str, str, str, str]
Sided = tuple[int, Fields]
"""A binding's fields and the states it is in (:data:`BEFORE` | :data:`AFTER`)."""

BEFORE: Final = 1
AFTER: Final = 2

CONCRETE_TYPES = tuple(t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN))

BINDING_COLUMNS: Final = ("resourceType", "stem", "states", "name", "patternType", "principal",
                          "host", "operation", "permissionType")  # fmt: skip
ROWS_SCHEMA: Final = "rows BINARY"
"""One cell per partition: its rows, pickled as plain tuples (:func:`row_tuple`)."""

RowTuple = tuple[Any, ...]


def row_tuple(row: AccessDelta) -> RowTuple:
    """A row as plain values: unpickling a frozen slotted dataclass costs a ``fields()``
    walk per object, tens of times a tuple's cost, and a partition sends back thousands."""
    names, witness = row.names, row.witness
    return (
        row.change is Change.WIDENED, int(row.resource_type), int(names.pattern_type), names.name,
        names.except_names, names.except_prefixes, int(row.operation), row.principal, row.host,
        witness.principal, witness.host, int(witness.operation), int(witness.resource_type),
        witness.resource_name, row.principal_except, row.host_except, row.principal_type,
    )  # fmt: skip


class _Rows:
    """:func:`row_tuple`'s tuples back to rows, each distinct name set built once."""

    def __init__(self) -> None:
        self.names: dict[tuple[Any, ...], NameSet] = {}
        self.types = {int(t): t for t in ResourceType}
        self.patterns = {int(t): t for t in PatternType}
        self.operations = {int(o): o for o in AclOperation}

    def row(self, t: RowTuple) -> AccessDelta:
        (widened, rt, pt, name, except_names, except_prefixes, op, principal, host, w_principal,
         w_host, w_op, w_rt, w_name, p_except, h_except, kind) = t  # fmt: skip
        key = (rt, pt, name, except_names, except_prefixes)
        names = self.names.get(key)
        if names is None:
            names = self.names[key] = NameSet(self.patterns[pt], name, except_names, except_prefixes)
        witness = Request(w_principal, w_host, self.operations[w_op], self.types[w_rt], w_name)
        return AccessDelta(
            change=Change.WIDENED if widened else Change.NARROWED, resource_type=self.types[rt],
            names=names, operation=self.operations[op], principal=principal, host=host,
            witness=witness, principal_except=p_except, host_except=h_except, principal_type=kind,
        )  # fmt: skip


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """The cyclic collector paused (and resumed as it was).

    The engine and the rows' decoding allocate millions of small acyclic objects, each freed
    by its count, while the states' millions of bindings stay alive: every full pass of the
    collector walks them all and finds nothing."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def is_short(binding: AclBinding, depth: int) -> bool:
    """Applies across partitions: the LITERAL ``*`` or a name shorter than ``depth``."""
    if binding.pattern_type is PatternType.LITERAL and binding.name == WILDCARD_RESOURCE:
        return True
    return len(binding.name) < depth


class _Parser:
    """Fields to bindings, each distinct pattern and entry built (and hashed) once: a
    partition's bindings share a few thousand patterns, and each key's group is parsed again
    with the short bindings of its type."""

    def __init__(self) -> None:
        self.patterns: dict[tuple[str, str, str], ResourcePattern] = {}
        self.entries: dict[tuple[str, str, str, str], AccessControlEntry] = {}

    def binding(self, fields: Fields) -> AclBinding:
        rt, name, pt, principal, host, op, perm = fields
        pattern = self.patterns.get((rt, name, pt))
        if pattern is None:
            parsed = parse_fields(fields)
            pattern = self.patterns[rt, name, pt] = ResourcePattern(
                resource_type=parsed[0], name=name, pattern_type=parsed[2]
            )
        entry = self.entries.get((principal, host, op, perm))
        if entry is None:
            parsed = parse_fields(fields)
            entry = self.entries[principal, host, op, perm] = AccessControlEntry(
                principal=principal, host=host, operation=parsed[5], permission_type=parsed[6]
            )
        return AclBinding(pattern=pattern, entry=entry)


def _states(
    sided: Iterable[Sided], settings: tuple[AclState, AclState], parser: _Parser
) -> tuple[AclState, AclState]:
    bindings: tuple[list[AclBinding], list[AclBinding]] = ([], [])
    for states, fields in sided:
        binding = parser.binding(fields)
        if states & BEFORE:
            bindings[0].append(binding)
        if states & AFTER:
            bindings[1].append(binding)
    before, after = settings
    return (
        AclState(frozenset(bindings[0]), before.super_users, before.allow_everyone_if_no_acl_found),
        AclState(frozenset(bindings[1]), after.super_users, after.allow_everyone_if_no_acl_found),
    )


def decide_partition(
    key: tuple[int, str],
    sided: Iterable[Sided],
    short: dict[int, list[Sided]],
    settings: tuple[AclState, AclState],
    folded: bool = False,
    parser: _Parser | None = None,
) -> list[AccessDelta]:
    """The rows of the regions keyed under ``key`` (resource type code, name prefix)."""
    code, stem = key
    before, after = _states([*sided, *short.get(code, [])], settings, parser or _Parser())
    depth = len(stem)
    diff = partial_diff(
        before,
        after,
        ResourceType(code),
        lambda k: len(k) >= depth and k.startswith(stem) and k != WILDCARD_RESOURCE,
        folded=folded,
    )
    return [*diff.widened, *diff.narrowed]


def decide_batches(
    short: dict[int, list[Sided]], settings: tuple[AclState, AclState], folded: bool
) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: one partition's binding batches (:data:`BINDING_COLUMNS`)
    in, grouped by key and decided, one batch of one pickled cell of rows out."""

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        type_names = {int(t): t.name for t in ResourceType}
        groups: dict[tuple[int, str], list[Sided]] = {}
        for batch in batches:
            columns = [batch.column(name).to_pylist() for name in BINDING_COLUMNS]
            for code, stem, states, *fields in zip(*columns, strict=True):
                entry: Any = (states, (type_names[code], *fields))
                groups.setdefault((code, stem), []).append(entry)
        parser = _Parser()
        rows: list[AccessDelta] = []
        with _no_cyclic_gc():  # a third of the engine's time otherwise, finding nothing
            for key, group in groups.items():
                rows.extend(decide_partition(key, group, short, settings, folded, parser))
        cell = pickle.dumps([row_tuple(row) for row in rows])
        yield pa.RecordBatch.from_pydict({"rows": [cell]}, pa.schema([("rows", pa.binary())]))

    return run


def changed_keys(
    before: AclState, after: AclState, depth: int, changed: frozenset[AclBinding] | None = None
) -> tuple[set[tuple[int, str]], set[int]] | None:
    """The partition keys whose regions can differ, and the types whose short-keyed regions
    can; None for every key and type.

    With the same settings, a region's decisions change only if a binding that applies to it
    changed: one keyed in its partition, or a short one (which applies across its type).  So
    only the partitions of the changed bindings' keys are decided, and every partition of a
    type with a changed short binding; the others hold no row (a downgrade: only partitions
    with a binding the older reader ignores).  ``changed``: ``before ^ after``, if known.
    """
    if (before.super_users, before.allow_everyone_if_no_acl_found) != (
        after.super_users, after.allow_everyone_if_no_acl_found
    ):  # fmt: skip
        return None
    if changed is None:
        changed = before.bindings ^ after.bindings
    every_type = {int(b.resource_type) for b in changed if is_short(b, depth)}
    keys = {(int(b.resource_type), b.name[:depth]) for b in changed if not is_short(b, depth)}
    for state in (before, after) if every_type else ():
        keys.update(
            (int(b.resource_type), b.name[:depth])
            for b in state.bindings
            if int(b.resource_type) in every_type and not is_short(b, depth)
        )
    return keys, every_type


def binding_columns(
    before: AclState,
    after: AclState,
    depth: int,
    wanted: set[tuple[int, str]] | None,
    short: dict[int, list[Sided]] | None = None,
) -> dict[str, list[Any]]:
    """The keyed bindings of both states as :data:`BINDING_COLUMNS`, each binding once with
    the states it is in; only the keys in ``wanted`` (None: every key).  ``short``: collects
    the short bindings (:func:`is_short`) by type code, with their states, on the same walk."""
    columns: dict[str, list[Any]] = {name: [] for name in BINDING_COLUMNS}
    appends = [columns[name].append for name in BINDING_COLUMNS]
    rt_code, stem_of, states_of, name_of, pattern_of, principal_of, host_of, op_of, perm_of = appends
    codes = {t: int(t) for t in ResourceType}
    wildcard, literal = WILDCARD_RESOURCE, PatternType.LITERAL
    # set algebra on the states (each binding's hash is stored in the set, not computed again)
    for states, bindings in (
        (BEFORE | AFTER, before.bindings & after.bindings),
        (BEFORE, before.bindings - after.bindings),
        (AFTER, after.bindings - before.bindings),
    ):
        for b in bindings:
            pattern, entry = b.pattern, b.entry
            name = pattern.name
            if len(name) < depth or (name == wildcard and pattern.pattern_type is literal):
                if short is not None:  # short (:func:`is_short`): shipped with the job
                    short.setdefault(codes[pattern.resource_type], []).append((states, b.fields()))
                continue
            code, stem = codes[pattern.resource_type], name[:depth]
            if wanted is not None and (code, stem) not in wanted:
                continue
            rt_code(code)
            stem_of(stem)
            states_of(states)
            name_of(name)
            pattern_of(pattern.pattern_type._name_)
            principal_of(entry.principal)
            host_of(entry.host)
            op_of(entry.operation._name_)
            perm_of(entry.permission_type._name_)
    return columns


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
    ``folded``: :func:`store.access_diff.compact` of it, each partition's rows folded as they
    are decided (far fewer rows to build and collect), then their union."""
    with _no_cyclic_gc():
        return _distributed(spark, before, after, depth, partitions, folded)


def _distributed(
    spark: Any, before: AclState, after: AclState, depth: int, partitions: int, folded: bool
) -> AccessDiff:
    import pyarrow as pa

    settings = (AclState(frozenset(), before.super_users, before.allow_everyone_if_no_acl_found),
                AclState(frozenset(), after.super_users, after.allow_everyone_if_no_acl_found))  # fmt: skip
    short: dict[int, list[Sided]] = {}
    changed = changed_keys(before, after, depth, before.bindings ^ after.bindings)
    wanted, short_types = (None, None) if changed is None else changed
    columns = binding_columns(before, after, depth, wanted, short)
    rows: list[AccessDelta] = []
    if columns["stem"]:
        types = pa.array(columns.pop("resourceType"), pa.int32())
        states = pa.array(columns.pop("states"), pa.int8())
        table = pa.table({"resourceType": types, "states": states, **columns}).select(list(BINDING_COLUMNS))
        frame = spark.createDataFrame(table).repartition(partitions, "resourceType", "stem")
        cells = frame.mapInArrow(decide_batches(short, settings, folded), ROWS_SCHEMA).collect()
        decoded = _Rows()
        for cell in cells:
            rows.extend(map(decoded.row, pickle.loads(cell["rows"])))
    short_rows = _short_keyed(before, after, depth, short, settings, short_types, folded)
    rows.extend(short_rows)
    diff = AccessDiff(
        widened=tuple(r for r in rows if r.change is Change.WIDENED),
        narrowed=tuple(r for r in rows if r.change is Change.NARROWED),
    )
    # A row folds only into its parent prefix's, which is keyed in the same partition unless
    # it is shorter than ``depth`` (decided here, on the driver): with no such row, the
    # partitions' rows (each partition folded) fold no further.
    return compact(diff) if folded and short_rows else diff


def _short_keyed(
    before: AclState,
    after: AclState,
    depth: int,
    short: dict[int, list[Sided]],
    settings: tuple[AclState, AclState],
    types: set[int] | None,
    folded: bool,
) -> Sequence[AccessDelta]:
    """On the driver: the regions keyed by a short name, and the rest of each type (only of
    the ``types`` with a changed short binding; None: every type)."""
    rows: list[AccessDelta] = []
    parser = _Parser()
    carved: dict[ResourceType, set[tuple[PatternType, str]]] = {}
    for state in (before, after) if types is None or types else ():
        for b in state.bindings:
            if not is_short(b, depth):
                carved.setdefault(b.resource_type, set()).add((b.pattern_type, b.name))
    for rt in CONCRETE_TYPES:
        if types is not None and int(rt) not in types:
            continue  # no binding that applies there changed
        b_state, a_state = _states(short.get(int(rt), []), settings, parser)
        diff = partial_diff(
            b_state, a_state, rt, lambda k: len(k) < depth or k == WILDCARD_RESOURCE,
            carved=carved.get(rt, ()), folded=folded,
        )  # fmt: skip
        rows.extend([*diff.widened, *diff.narrowed])
    return rows
