"""Records to events through the one fold, in Python (:mod:`jobs.common.decode`) and over the
workers' batches (:mod:`jobs.common.worker`), with hand-worked values."""

from __future__ import annotations

import pytest

from jobs.common.decode import history_event
from jobs.common.events import ACL_CREATED, ACL_DELETED, CONFIG_ALTERED, HistoryEvent
from jobs.common.rows import event_row
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import AvroEventCodec, RecordDecodeError, binding_key, config_key
from store.events import AclCreated

READ_ORDERS = AclBinding.of(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "*", AclOperation.READ,
    AclPermissionType.ALLOW,
)  # fmt: skip


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


def test_the_workers_rows_equal_the_folds_events_and_stop_at_a_refused_record() -> None:
    """The workers' fast path against the one fold (``history_event``) on every record of a
    random history in both encodings (tombstones and settings included), then a corrupt one."""
    from jobs.common.worker import decode_rows
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
