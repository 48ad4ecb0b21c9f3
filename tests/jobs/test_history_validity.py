"""History events to validity intervals, with hand-worked values."""

from __future__ import annotations

import itertools

from jobs.common.decode import history_event
from jobs.common.events import ACL_CREATED, ACL_DELETED, CONFIG_ALTERED, HistoryEvent
from jobs.common.rows import event_of_row, event_row
from jobs.history.tables import validity_of_row, validity_row
from jobs.history.validity import Validity, fold_validity
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

READ_ORDERS = AclBinding.of(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "*", AclOperation.READ,
    AclPermissionType.ALLOW,
)  # fmt: skip


def created(offset: int) -> HistoryEvent:
    return HistoryEvent(
        offset=offset, time_ms=1000 + offset, type=ACL_CREATED, binding=READ_ORDERS, actor="a"
    )


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

    from jobs.history.validity import fold_positions

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


def test_presence_merges_overlapping_spans_and_an_open_one_absorbs_the_rest() -> None:
    from jobs.history.questions import presence_of

    assert presence_of([(5, 9), (1, 3), (2, 4), (12, 14)]) == [(1, 4), (5, 9), (12, 14)]
    assert presence_of([(5, 9), (8, None), (20, 30), (1, 2)]) == [(1, 2), (5, None)]
    assert presence_of([]) == []


def test_the_driver_fold_over_arrow_builds_the_rows_the_event_fold_builds() -> None:
    """fold_batch (Arrow columns, intervals carried between batches) against fold_validity
    (HistoryEvent objects) over a random history cut into batches at uneven places."""
    import pyarrow as pa

    from jobs.common.worker import DECODED_ARROW_SCHEMA
    from jobs.history.intervals import VALIDITY_ARROW_SCHEMA, fold_batch, no_intervals
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
