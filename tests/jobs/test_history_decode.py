"""Records to history events and events to validity intervals, with hand-worked values."""

from __future__ import annotations

import itertools

import pytest

from jobs.history.answers import ACL_CREATED, ACL_DELETED, CONFIG_ALTERED, HistoryEvent
from jobs.history.decode import Validity, fold_validity, history_event
from jobs.history.tables import event_of_row, event_row, validity_of_row, validity_row
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import AvroEventCodec, RecordDecodeError, binding_key, config_key
from store.events import AclCreated

READ_ORDERS = AclBinding.of(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "*", AclOperation.READ,
    AclPermissionType.ALLOW,
)  # fmt: skip


def created(offset: int) -> HistoryEvent:
    return HistoryEvent(
        offset=offset, time_ms=1000 + offset, type=ACL_CREATED, binding=READ_ORDERS, actor="a"
    )


def test_records_read_as_events_through_the_fold() -> None:
    value = AvroEventCodec().encode(
        AclCreated(binding=READ_ORDERS, actor="User:admin", request_id="r1", time_ms=5)
    )
    event = history_event(binding_key(READ_ORDERS), value, 7, 1234)
    assert event == HistoryEvent(
        offset=7, time_ms=1234, type=ACL_CREATED, binding=READ_ORDERS, actor="User:admin", request_id="r1"
    )
    assert history_event(binding_key(READ_ORDERS), None, 8, 1235) == HistoryEvent(
        offset=8, time_ms=1235, type=ACL_DELETED, binding=READ_ORDERS
    )
    reset = history_event(config_key("super.users"), None, 9, 1236)
    assert reset is not None and (reset.type, reset.config_name, reset.config_value) == (
        CONFIG_ALTERED, "super.users", None,
    )  # fmt: skip
    with pytest.raises(RecordDecodeError, match="offset 10"):
        history_event(binding_key(READ_ORDERS), b"\xc3\x01garbage", 10, 1237)


def test_intervals_open_and_close_as_the_live_set_does() -> None:
    deleted = HistoryEvent(offset=5, time_ms=1005, type=ACL_DELETED, binding=READ_ORDERS)
    set_true = HistoryEvent(offset=2, time_ms=1002, type=CONFIG_ALTERED, config_name="x", config_value="true")
    set_false = HistoryEvent(
        offset=6, time_ms=1006, type=CONFIG_ALTERED, config_name="x", config_value="false"
    )
    changed, still_open = fold_validity([created(1), set_true, created(3), deleted, set_false], {})
    spans = sorted((v.id.split("|")[0], v.from_offset, v.to_offset) for v in changed)
    # The second create of a live binding changes nothing; the new value closes the old one.
    assert spans == [("binding", 1, 5), ("setting", 2, 6), ("setting", 6, None)]
    assert list(still_open) == ["setting|x"]
    again, _ = fold_validity([created(9)], still_open)
    assert [(v.from_offset, v.to_offset) for v in again] == [(9, None)]


def _replay(
    events: list[tuple[str, str, str | None]], live: dict[str, int], first: int
) -> list[tuple[int, int | None]]:
    """The intervals a batch opens or closes, by walking it one event at a time against the
    live set (``live``: each live id's opening label, updated), rows labelled from ``first``;
    each interval once, in its latest form, in the order the batch first touched it."""
    touched: dict[int, int | None] = {}
    for row, (key, kind, value) in enumerate(events, start=first):
        if kind == ACL_CREATED and key in live:
            continue
        if key in live:
            touched[live.pop(key)] = row
        if kind == ACL_CREATED or (kind == CONFIG_ALTERED and value is not None):
            live[key] = row
            touched[row] = None
    return list(touched.items())


def test_the_columnar_fold_opens_and_closes_what_a_walk_over_the_live_set_does() -> None:
    """fold_positions (whole columns: a sort by id, no walk) against a walk event by event,
    over random batches of creates and deletes of a few bindings and changes of a few
    settings (to a value or back to the default), the live set carried from batch to batch."""
    import random

    from jobs.history.decode import fold_positions

    rng = random.Random(7)
    for _ in range(400):
        live: dict[str, int] = {}
        folded: dict[str, int] = {}
        first = 0
        for _ in range(rng.randint(1, 4)):
            batch = [
                (f"setting|{rng.randint(0, 2)}", CONFIG_ALTERED, rng.choice([None, "a", "b"]))
                if rng.random() < 0.3
                else (f"binding|{rng.randint(0, 4)}", rng.choice([ACL_CREATED, ACL_DELETED]), None)
                for _ in range(rng.randint(0, 30))
            ]
            labels = list(range(first, first + len(batch)))
            expected = _replay(batch, live, first)
            ids, types, values = [e[0] for e in batch], [e[1] for e in batch], [e[2] for e in batch]
            got = fold_positions(ids, types, values, folded, labels)
            assert got == expected, batch
            assert folded == live
            first += len(batch)


def test_rows_round_trip() -> None:
    deleted = HistoryEvent(offset=5, time_ms=1005, type=ACL_DELETED, binding=READ_ORDERS, actor="b")
    assert event_of_row(event_row(deleted)) == deleted
    [interval], _ = fold_validity([created(1), deleted], {})
    assert validity_of_row(validity_row(interval)) == interval


def test_the_workers_rows_equal_the_folds_events_and_stop_at_a_refused_record() -> None:
    """The workers' fast path against the one fold (``history_event``) on every record of a
    random history in both encodings (tombstones and settings included), then a corrupt one."""
    from jobs.history.worker import decode_rows
    from tests.jobs.history_support import random_history

    records = [(r.key, r.value, i, 1_700_000_000_000 + 3_600_000 * i) for i, r in
               enumerate(random_history(seed=21, count=600))]  # fmt: skip
    expected = [(*event_row(e), None) for k, v, o, t in records if (e := history_event(k, v, o, t))]
    assert list(decode_rows(records)) == expected
    bad = (binding_key(READ_ORDERS), b"\xc3\x01\x00\x01garbage", 600, 1)
    rows = list(decode_rows([*records[:5], bad, *records[5:]]))
    assert [r[0] for r in rows[:-1]] == [r[0] for r in expected if r[0] < 5]
    assert rows[-1][0] == 600 and rows[-1][1:15] == (None,) * 14
    assert "at offset 600" in rows[-1][15]
    key_swapped = (config_key("super.users"), records[0][1], 601, 1)
    assert records[0][1] is not None and "is not the key" in next(decode_rows([key_swapped]))[15]


def test_presence_merges_overlapping_spans_and_an_open_one_absorbs_the_rest() -> None:
    from jobs.history.queries import presence_of

    assert presence_of([(5, 9), (1, 3), (2, 4), (12, 14)]) == [(1, 4), (5, 9), (12, 14)]
    assert presence_of([(5, 9), (8, None), (20, 30), (1, 2)]) == [(1, 2), (5, None)]
    assert presence_of([]) == []


def test_the_driver_fold_over_arrow_builds_the_rows_the_event_fold_builds() -> None:
    """fold_batch (Arrow columns, intervals carried between batches) against fold_validity
    (HistoryEvent objects) over a random history cut into batches at uneven places."""
    import pyarrow as pa

    from jobs.history.intervals import VALIDITY_ARROW_SCHEMA, fold_batch, no_intervals
    from jobs.history.worker import DECODED_ARROW_SCHEMA
    from tests.jobs.history_support import random_history

    history = random_history(seed=11, count=1500)
    events = [e for i, r in enumerate(history) if (e := history_event(r.key, r.value, i, 1000 + i))]
    schema = DECODED_ARROW_SCHEMA.remove(DECODED_ARROW_SCHEMA.get_field_index("error"))
    carried, still_open = no_intervals(), dict[str, Validity]()
    cuts = [0, 1, 2, 400, 401, 977, len(events)]
    for start, end in itertools.pairwise(cuts):
        batch = events[start:end]
        table = pa.Table.from_pylist(
            [dict(zip(schema.names, event_row(e), strict=True)) for e in batch], schema
        )
        rows, carried = fold_batch(carried, table)
        changed, still_open = fold_validity(batch, still_open)
        assert rows.schema == VALIDITY_ARROW_SCHEMA
        got = sorted(tuple(row.values()) for row in rows.to_pylist())
        assert got == sorted(map(validity_row, changed))
        by_opening = sorted(still_open.values(), key=lambda v: v.opened.offset)
        assert carried.column("id").to_pylist() == [v.id for v in by_opening]
        assert carried.column("fromOffset").to_pylist() == [v.opened.offset for v in by_opening]
    assert len(still_open) > 10  # the history leaves some bindings and settings live
