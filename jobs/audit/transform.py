"""Pure transformations of the audit log's records: each micro-batch as Arrow columns on the
driver, and the per-minute table as its readers sum it (Spark).  No sources, no sinks.

The records are the log sources' ``key, value, offset, timestampMs``; each value is one
CloudEvent of ``schemas/audit_event_v1.json``.  A batch becomes:

* its decisions, one row per event (:func:`decision_rows`), each sent event once
  (:func:`first_sendings`: an event's id is its spool's id and its sequence number there, and
  a sender ships a spool in sequence order, so an event is a resend exactly when its spool
  already reached its number);
* per minute of event time (tumbling windows), the decisions of each principal, resource,
  operation and result (:func:`minute_rows`);
* *new denials*: a denial of a principal on a resource with no denial of the same principal
  on the same resource in the ``window_days`` before it (:func:`new_denials`, given the last
  denial recorded before the batch);
* the last denial of each principal on each resource (:func:`merged_last_denied`), which the
  next batch's new denials are measured against.

The per-minute counts are stored as each batch's partial counts; :func:`summed_minutes` adds
them up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

RESOURCE_KEY: Final = ("principal", "resourceType", "resourceName")
"""Whom a new denial is about: a principal on a resource."""
MINUTE_KEY: Final = ("minute", "principal", "resourceType", "resourceName", "operation", "result")
DEFAULT_WINDOW_DAYS: Final = 7
"""A denial is new when the principal had no denial on the resource in this many days before."""
DECISION_TYPE_PREFIX: Final = "io.aclstore.authorization.decision."

DECISION_COLUMNS: Final = (
    "id", "time", "source", "principal", "host", "operation", "resourceType", "resourceName",
    "patternType", "result", "rule", "binding", "aclOffset", "auditOffset",
)  # fmt: skip
_DATA_FIELDS: Final = (
    "principal", "host", "operation", "resourceType", "resourceName", "patternType", "result",
)  # fmt: skip
_BINDING_FIELDS: Final = (
    "resourceType", "resourceName", "patternType", "principal", "host", "operation", "permissionType",
)  # fmt: skip
TIME_TYPE: Final = pa.timestamp("us", tz="UTC")
EVENT_ARROW_SCHEMA: Final = pa.schema([
    ("id", pa.string()), ("time", pa.string()), ("source", pa.string()), ("type", pa.string()),
    ("data", pa.struct([
        *((name, pa.string()) for name in _DATA_FIELDS),
        ("reason", pa.struct([
            ("rule", pa.string()),
            ("binding", pa.struct([(name, pa.string()) for name in _BINDING_FIELDS])),
        ])),
        ("offset", pa.int64()),
    ])),
])  # fmt: skip
"""What the job reads of an event (other fields are ignored)."""
DECISION_ARROW_SCHEMA: Final = pa.schema([
    ("id", pa.string()), ("time", TIME_TYPE), ("source", pa.string()),
    *((name, pa.string()) for name in _DATA_FIELDS),
    ("rule", pa.string()), ("binding", pa.string()), ("aclOffset", pa.int64()), ("auditOffset", pa.int64()),
])  # fmt: skip
LAST_DENIED_SCHEMA: Final = pa.schema(
    [(name, pa.string()) for name in RESOURCE_KEY] + [("lastDenied", TIME_TYPE)]
)
_MICROS_PER_DAY: Final = 86_400_000_000
_SPOOL_EVENT_ID: Final = "^[0-9a-f]{32}$"
SPOOL_ID_LENGTH: Final = 16


def _nibble_table() -> Any:
    table = np.zeros(256, np.uint8)
    for value, digit in enumerate(b"0123456789abcdef"):
        table[digit] = value
    return table


_NIBBLES: Final = _nibble_table()
_SHIFTS: Final = np.arange(60, -1, -4, dtype=np.uint64)


_JSON_BLOCK: Final = 4 << 20
"""Bytes of newline-delimited JSON per block of the parser (blocks are parsed in parallel)."""
_VALUES_PER_PASS: Final = 65_536


def _events(values: pa.Array) -> pa.Table:
    """``values`` (binary, one JSON object each) as :data:`EVENT_ARROW_SCHEMA` rows, one per
    value: parsed as newline-delimited JSON, some thousands of values a pass, or each alone
    where that fails."""
    passes = range(0, len(values), _VALUES_PER_PASS)
    parts = [_events_of(values.slice(start, _VALUES_PER_PASS)) for start in passes]
    return pa.concat_tables(parts) if parts else EVENT_ARROW_SCHEMA.empty_table()


def _events_of(values: pa.Array) -> pa.Table:
    options = pj.ParseOptions(explicit_schema=EVENT_ARROW_SCHEMA, unexpected_field_behavior="ignore")
    whole = pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values.cast(pa.binary()))
    body = pc.binary_join(whole, b"\n")[0].as_buffer()
    try:
        parsed = pj.read_json(pa.BufferReader(body), parse_options=options,
                              read_options=pj.ReadOptions(block_size=_JSON_BLOCK))  # fmt: skip
        if parsed.num_rows == len(values):
            return parsed
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    # Some value is not one line of JSON of these types: each value alone, and one that does
    # not parse is no event (a null row, left out with the other types' records).
    rows = []
    for value in values.to_pylist():
        try:
            one = pj.read_json(pa.BufferReader(value.replace(b"\n", b" ")), parse_options=options)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            one = None
        rows.append(one if one is not None and one.num_rows == 1 else EVENT_ARROW_SCHEMA.empty_table().take(
            pa.array([None], pa.int64())))  # fmt: skip
    return pa.concat_tables(rows)


def _times(text: pa.ChunkedArray) -> pa.Array:
    """ISO-8601 times as UTC timestamps; a time that does not parse is null."""
    try:
        return pc.cast(text, TIME_TYPE)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        out = []
        for one in text.to_pylist():
            try:
                out.append(pc.cast(pa.array([one]), TIME_TYPE)[0].as_py())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                out.append(None)
        return pa.array(out, TIME_TYPE)


def _binding_text(bindings: pa.Array) -> pa.Array:
    """Each deciding binding as compact JSON (its fields in the schema's order, nulls left
    out), or null: the decisions table's ``binding`` column."""
    named = bindings.is_valid()
    if bindings.null_count == len(bindings):  # no decision of the batch names a binding
        return pa.nulls(len(bindings), pa.string())
    texts = []
    for one in bindings.filter(named).to_pylist():
        present = {k: one[k] for k in _BINDING_FIELDS if one[k] is not None}
        texts.append(json.dumps(present, ensure_ascii=False, separators=(",", ":")))
    return pc.replace_with_mask(pa.nulls(len(bindings), pa.string()), named, pa.array(texts, pa.string()))


def decision_rows(records: pa.Table) -> pa.Table:
    """One row per decision event among ``records`` (Arrow ``key, value, offset,
    timestampMs``, in offset order), :data:`DECISION_ARROW_SCHEMA`: its id, event time, what
    was decided and why, ``aclOffset`` (the change-log offset the decision reflects) and
    ``auditOffset`` (the record's offset in the audit log).  Records of another event type,
    tombstones and values that are not JSON events are left out."""
    values = records["value"]
    present = records if values.null_count == 0 else records.filter(pc.is_valid(values))
    events = _events(present["value"].combine_chunks())
    data = events["data"].combine_chunks()
    reason = data.field("reason")
    rows = pa.table({
        "id": events["id"], "time": _times(events["time"]), "source": events["source"],
        **{name: data.field(name) for name in _DATA_FIELDS},
        "rule": reason.field("rule"), "binding": _binding_text(reason.field("binding")),
        "aclOffset": data.field("offset"), "auditOffset": present["offset"],
    }, schema=DECISION_ARROW_SCHEMA)  # fmt: skip
    wanted = pc.fill_null(pc.starts_with(events["type"], DECISION_TYPE_PREFIX), False)
    # Nearly every batch is decisions only: then the rows are kept without a copy.
    return rows if pc.all(wanted).as_py() else rows.filter(wanted)


def _hex_values(ids: pa.Array) -> Any:
    """The numbers written in 16 lowercase hex digits (``ids``, each exactly that)."""
    digits = np.frombuffer(ids.cast(pa.binary()).cast(pa.binary(16)).buffers()[1], np.uint8)
    nibbles = _NIBBLES[digits].reshape(-1, 16).astype(np.uint64)
    return (nibbles << _SHIFTS).sum(axis=1, dtype=np.uint64)


def first_sendings(rows: pa.Table, reached: Mapping[str, int]) -> tuple[pa.Table, dict[str, int]]:
    """The rows of ``rows`` (decisions in audit-log order) sent for the first time, and how far
    each spool got after them.

    ``reached`` maps a spool's id to the highest sequence number of it in the log before the
    rows.  An id ``<spool id: 16 hex digits><sequence number: 16 hex digits>`` (what a node's
    sender gives each event) is a first sending when its number is past every earlier one of
    its spool: a sender ships its spool in sequence order, one at a time, and sends again only
    what it sent and did not commit, so every resend is behind.  An id of another form (no node
    writes one) is kept once per batch: nothing says how far its writer got."""
    ids = rows["id"].combine_chunks()
    keep = np.zeros(len(ids), dtype=bool)
    after = dict(reached)
    matched = pc.fill_null(pc.match_substring_regex(ids, _SPOOL_EVENT_ID), False)
    numbered = matched.to_numpy(zero_copy_only=False)
    where = np.flatnonzero(numbered)
    if len(where):
        chosen = ids.take(pa.array(where))
        spools = pc.utf8_slice_codeunits(chosen, 0, SPOOL_ID_LENGTH).dictionary_encode()
        sequences = _hex_values(pc.utf8_slice_codeunits(chosen, SPOOL_ID_LENGTH))
        which = spools.indices.to_numpy()
        order = np.argsort(which, kind="stable")  # each spool's rows together, in log order
        bounds = np.flatnonzero(np.diff(which[order])) + 1
        for part in np.split(order, bounds):
            spool = spools.dictionary[int(which[part[0]])].as_py()
            numbers = sequences[part]
            running = np.maximum.accumulate(numbers)
            first = np.ones(len(numbers), dtype=bool)
            first[1:] = numbers[1:] > running[:-1]
            before = after.get(spool, -1)
            if before >= 0:
                first &= numbers > np.uint64(before)
            keep[where[part]] = first
            after[spool] = max(before, int(running[-1]))
    seen: set[str] = set()
    for position in np.flatnonzero(~numbered):
        event_id = ids[int(position)].as_py()
        keep[position] = event_id not in seen
        seen.add(event_id)
    return rows.filter(pa.array(keep)), after


def reached_in(decisions: Any, before: int) -> dict[str, int]:
    """How far each spool got among the rows of the ``decisions`` table (a DataFrame) before
    the audit offset ``before``: the highest sequence number of each spool's ids there, as
    :func:`first_sendings` would have carried it."""
    from pyspark.sql import functions as f

    numbered = decisions.filter((f.col("auditOffset") < before) & f.col("id").rlike(_SPOOL_EVENT_ID))
    spool = f.substring("id", 1, SPOOL_ID_LENGTH)
    number = f.conv(f.substring("id", SPOOL_ID_LENGTH + 1, SPOOL_ID_LENGTH), 16, 10).cast("decimal(20,0)")
    rows = numbered.groupBy(spool.alias("spool")).agg(f.max(number).alias("number")).collect()
    return {str(r["spool"]): int(r["number"]) for r in rows}


def minute_rows(rows: pa.Table) -> pa.Table:
    """Decisions per minute of event time (tumbling one-minute windows from the epoch,
    ``minute`` the window's start), principal, resource, operation and result."""
    minute = pc.floor_temporal(rows["time"].cast(pa.timestamp("us")), unit="minute")
    keyed = pa.table({"minute": minute.cast(TIME_TYPE), **{name: rows[name] for name in MINUTE_KEY[1:]}})
    counted = keyed.group_by(list(MINUTE_KEY), use_threads=False).aggregate([([], "count_all")])
    return counted.rename_columns([*MINUTE_KEY, "decisions"])


def _same_key_as_previous(rows: pa.Table) -> pa.Array:
    """For each row of ``rows`` (sorted by :data:`RESOURCE_KEY`), whether the row before it
    has the same key (nulls equal to nulls, as a grouping takes them)."""
    count = rows.num_rows
    if count == 0:
        return pa.array([], pa.bool_())
    same: Any = pa.array([True] * (count - 1), pa.bool_())
    for name in RESOURCE_KEY:
        column = rows[name].combine_chunks()
        this, before = column.slice(1), column.slice(0, count - 1)
        equal = pc.fill_null(pc.equal(this, before), False)
        same = pc.and_(same, pc.or_(equal, pc.and_(pc.is_null(this), pc.is_null(before))))
    return pa.concat_arrays([pa.array([False]), same])


def new_denials(rows: pa.Table, last_denied: pa.Table, window_days: int) -> pa.Table:
    """The new denials among a batch's decisions ``rows``, given ``last_denied`` (the last
    denial of each pair recorded before the batch, :data:`LAST_DENIED_SCHEMA`).

    A denial is new when the denial before it of the same principal on the same resource (the
    one before it in the batch by time and audit offset, else ``lastDenied``) is absent or
    more than ``window_days`` older.  A denial at or before ``lastDenied`` (an event that
    arrived late) is never new: a later denial of the pair was recorded already.  Columns:
    the decision's, and ``previousDenied`` (the denial it is measured against, or null)."""
    denied = rows.filter(pc.equal(rows["result"], "DENIED"))
    keys = list(RESOURCE_KEY)
    joined = denied.join(last_denied.cast(LAST_DENIED_SCHEMA), keys=keys, join_type="left outer",
                         use_threads=False)  # fmt: skip
    order = [(name, "ascending", "at_start") for name in (*keys, "time", "auditOffset")]
    measured = joined.take(pc.sort_indices(joined, sort_keys=order))
    count = measured.num_rows
    time = measured["time"].cast(pa.int64()).combine_chunks()
    last = measured["lastDenied"].cast(pa.int64()).combine_chunks()
    shifted = pa.concat_arrays([pa.nulls(min(count, 1), pa.int64()), time.slice(0, max(count - 1, 0))])
    previous = pc.if_else(_same_key_as_previous(measured), shifted, last)
    # Three-valued, as SQL: an unknown (null) condition selects no row.
    gap = pc.subtract(time, window_days * _MICROS_PER_DAY)
    far = pc.or_kleene(pc.is_null(previous), pc.less(previous, gap))
    late = pc.and_kleene(pc.is_valid(last), pc.less_equal(time, last))
    fresh = pc.and_kleene(far, pc.invert(late))
    chosen = measured.select(list(DECISION_COLUMNS)).append_column("previousDenied", previous.cast(TIME_TYPE))
    return chosen.filter(fresh)


def merged_last_denied(last_denied: pa.Table, rows: pa.Table) -> pa.Table:
    """``last_denied`` moved past a batch's decisions ``rows``: one row per principal and
    resource ever denied, the later of its ``lastDenied`` and its last denial in ``rows``."""
    denied = rows.filter(pc.equal(rows["result"], "DENIED"))
    latest = denied.select(list(RESOURCE_KEY)).append_column("lastDenied", denied["time"].cast(TIME_TYPE))
    both = pa.concat_tables([last_denied.cast(LAST_DENIED_SCHEMA), latest.cast(LAST_DENIED_SCHEMA)])
    merged = both.group_by(list(RESOURCE_KEY), use_threads=False).aggregate([("lastDenied", "max")])
    return merged.rename_columns([*RESOURCE_KEY, "lastDenied"]).cast(LAST_DENIED_SCHEMA)


def summed_minutes(partials: Any) -> Any:
    """Rows of the minutes table (each batch's partial counts, a DataFrame) as one count per
    key: the sum of the partials' ``decisions``."""
    from pyspark.sql import functions as f

    return partials.groupBy(*MINUTE_KEY).agg(f.sum("decisions").alias("decisions"))
