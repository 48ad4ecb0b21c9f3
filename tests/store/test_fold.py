"""The one fold of the log: each record kind, each policy, against hand-worked expectations."""

from __future__ import annotations

import pytest

from store.acl import PatternType
from store.codec import (
    NewerFormatRequiredError,
    UndecodableRecordError,
    binding_key,
    codec_named,
    config_key,
)
from store.events import AclDeleted, ConfigAltered
from store.fold import ChangeKind, FoldPolicy, TooNewEvents, fold_record, fold_records
from store.log.base import LogRecord
from tests.store.samples import SAMPLE_TIME_MS, binding, created

PREFIXED = binding(pt=PatternType.PREFIXED, name="ord")


def _record(offset: int, key: bytes, value: bytes | None, ts: int = 5) -> LogRecord:
    return LogRecord(offset=offset, key=key, value=value, timestamp_ms=ts)


@pytest.mark.parametrize("codec", ["avro", "json"])
def test_created_deleted_and_config_events(codec: str) -> None:
    c = codec_named(codec)
    b = binding()
    deleted = AclDeleted(binding=b, actor="User:ops", request_id="r2", time_ms=SAMPLE_TIME_MS)
    alter = ConfigAltered(
        name="super.users", value="User:root", actor="User:ops", request_id="r3", time_ms=1
    )
    records = [
        _record(0, binding_key(b), c.encode(created(b)), ts=10),
        _record(1, binding_key(b), c.encode(deleted), ts=11),
        _record(2, config_key("super.users"), c.encode(alter), ts=12),
    ]
    changes = list(fold_records(records))
    assert [ch.kind for ch in changes] == [ChangeKind.CREATED, ChangeKind.DELETED, ChangeKind.CONFIG]
    assert [ch.offset for ch in changes] == [0, 1, 2]
    assert [ch.timestamp_ms for ch in changes] == [10, 11, 12]
    assert changes[0].binding == b and changes[1].binding == b
    assert changes[0].event is not None and changes[0].event.actor == "User:admin"
    assert changes[1].event == deleted
    assert (changes[2].config_name, changes[2].config_value) == ("super.users", "User:root")
    assert not any(ch.is_tombstone for ch in changes)


def test_tombstones_name_their_binding_or_setting_from_the_key() -> None:
    b = binding(name="payments")
    gone = fold_record(_record(7, binding_key(b), None))
    assert (gone.kind, gone.binding, gone.event, gone.is_tombstone) == (
        ChangeKind.DELETED, b, None, True,
    )
    reset = fold_record(_record(8, config_key("allow.everyone.if.no.acl.found"), None))
    assert (reset.kind, reset.config_name, reset.config_value) == (
        ChangeKind.CONFIG, "allow.everyone.if.no.acl.found", None,
    )


def test_corrupt_value_and_malformed_key_raise_with_their_offset() -> None:
    with pytest.raises(UndecodableRecordError) as bad_value:
        fold_record(_record(41, binding_key(binding()), b"\x00garbage"))
    assert bad_value.value.offset == 41
    with pytest.raises(UndecodableRecordError) as bad_key:
        fold_record(_record(42, b"not json", None))
    assert bad_key.value.offset == 42


def test_key_that_disagrees_with_its_event_raises() -> None:
    value = codec_named("json").encode(created(binding(name="a")))
    with pytest.raises(UndecodableRecordError, match="not the key of the event") as err:
        fold_record(_record(3, binding_key(binding(name="b")), value))
    assert err.value.offset == 3


def test_too_new_event_stops_by_default_and_is_absent_under_ignore() -> None:
    record = _record(9, binding_key(PREFIXED), codec_named("avro").encode(created(PREFIXED)))
    with pytest.raises(NewerFormatRequiredError) as err:
        fold_record(record, FoldPolicy(reader_version=1))
    assert (err.value.offset, err.value.needed) == (9, 2)
    ignored = fold_record(record, FoldPolicy(reader_version=1, too_new_events=TooNewEvents.IGNORE))
    # The key still names the binding, so a newer DELETE of it still deletes.
    assert (ignored.kind, ignored.binding, ignored.event) == (ChangeKind.IGNORED, PREFIXED, None)
    assert fold_record(record, FoldPolicy(reader_version=2)).kind is ChangeKind.CREATED


def test_only_an_explicit_skip_passes_a_corrupt_record() -> None:
    record = _record(5, b"junk", b"junk")
    skipped = fold_record(record, FoldPolicy(skip_offsets=frozenset({5})))
    assert (skipped.kind, skipped.offset, skipped.binding) == (ChangeKind.SKIPPED, 5, None)
    with pytest.raises(UndecodableRecordError):
        fold_record(record, FoldPolicy(skip_offsets=frozenset({4})))


def test_policy_rejects_an_unsupported_reader_version() -> None:
    with pytest.raises(ValueError, match="reader_version 9"):
        FoldPolicy(reader_version=9)
