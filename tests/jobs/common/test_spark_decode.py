"""The fold's fast path in Spark against the one fold in the Python workers, on real Spark.

Every record goes through both: :func:`jobs.common.spark_decode.decode_records` (Spark's Avro
reader for the common event, the fold in Python for the rest: on the driver or in the workers)
and :func:`jobs.common.worker.decode_rows`
(the workers' reading of every record, itself tested against ``history_event``).  The rows must
be equal, the common events must take the fast path, and each record the fast path must leave
alone (it would read it differently, or it is refused) must be left to the fold.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

import schemas
from jobs.common.worker import decode_rows
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import AvroEventCodec, JsonEventCodec, binding_key
from store.codec.avro_codec import HEADER_SIZE
from store.events import LATEST_FORMAT_VERSION, AclCreated, AclDeleted
from tests.jobs.history_support import random_history

pytestmark = pytest.mark.spark

RECORDS_SCHEMA = "key BINARY, value BINARY, offset BIGINT, timestampMs BIGINT"
T0 = 1_700_000_000_000
LATEST_HEADER = AvroEventCodec().header(LATEST_FORMAT_VERSION)

Row = tuple[bytes, bytes | None, int, int]


def binding(name: str = "orders", principal: str = "User:bob", host: str = "*") -> AclBinding:
    return AclBinding.of(
        ResourceType.TOPIC, name, PatternType.LITERAL, principal, host, AclOperation.READ,
        AclPermissionType.ALLOW,
    )  # fmt: skip


def created(b: AclBinding, actor: str = "User:admin") -> AclCreated:
    return AclCreated(binding=b, actor=actor, request_id="r1", time_ms=T0)


def raw_latest(record: dict[str, Any], tail: bytes = b"") -> bytes:
    """A latest-format Avro value of ``record`` as given (fields the store's writer would not
    write), plus ``tail``."""
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schemas.avro_schema(LATEST_FORMAT_VERSION)), record)
    return LATEST_HEADER + out.getvalue() + tail


def plain_record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schemaVersion": LATEST_FORMAT_VERSION, "minReaderVersion": 1, "eventType": "ACL_CREATED",
        "actor": "User:admin", "requestId": "r1", "timeMs": T0, "resourceType": "TOPIC",
        "name": "orders", "patternType": "LITERAL", "principal": "User:bob", "host": "*",
        "operation": "READ", "permissionType": "ALLOW", "config": None,
    }  # fmt: skip
    return {**record, **changes}


Rows = list[tuple[Any, ...]]


def both_paths(spark: Any, records: list[Row], driver_decodes_up_to: int) -> tuple[Rows, Rows, set[int]]:
    """The rows of ``records`` through decode_records and through decode_rows, and the offsets
    the fast path read."""
    from jobs.common.spark_decode import decode_records, read_fast

    frame = spark.createDataFrame(records, RECORDS_SCHEMA)
    table = decode_records(frame, driver_decodes_up_to=driver_decodes_up_to)
    spark_rows = list(zip(*(column.to_pylist() for column in table.columns), strict=True))
    assert [row[0] for row in spark_rows] == sorted(row[0] for row in spark_rows)
    fast = {r.offset for r in read_fast(frame).filter("fast").select("offset").collect()}
    return sorted(spark_rows), list(decode_rows(records)), fast


# The records the fast path leaves are read by the driver (up to 20,000 of them) or, forced
# here with 0, by the executors' Python workers.
WHERE_THE_REST_IS_READ = pytest.mark.parametrize(
    "driver_decodes_up_to", [20_000, 0], ids=["driver", "workers"]
)


@WHERE_THE_REST_IS_READ
def test_every_record_reads_as_the_fold_reads_it_and_the_common_ones_take_the_fast_path(
    spark: Any, driver_decodes_up_to: int
) -> None:
    history = random_history(seed=5, count=400)
    records: list[Row] = [(r.key, r.value, i, T0 + 3_600_000 * i) for i, r in enumerate(history)]
    n = len(records)
    odd = [
        created(binding(name="τopic")),  # not ASCII
        created(binding(name='or"ders\\x')),  # escaped in the key
        created(binding(principal="User:\x7fdel")),  # escaped too
        created(binding(), actor="User:ünï"),  # not ASCII, outside the key
    ]
    for i, event in enumerate(odd):
        records.append((binding_key(event.binding), AvroEventCodec().encode(event), n + i, T0))
    plain = created(binding())
    value = AvroEventCodec().encode(plain)
    key = binding_key(plain.binding)
    overlong = value[:HEADER_SIZE] + bytes([value[HEADER_SIZE] | 0x80, 0]) + value[HEADER_SIZE + 1 :]
    records += [
        (key, overlong, n + 10, T0),  # schemaVersion as a two-byte varint: fastavro reads it
        (key, AvroEventCodec(writer_version=2).encode(plain), n + 11, T0),  # an older format
        (key, JsonEventCodec().encode(plain), n + 12, T0),
        (key, value, n + 13, -5),  # a log time before 1970
        (key, raw_latest(plain_record(eventType="ACL_DELETED", minReaderVersion=3)), n + 14, T0),
        (key, value, n + 15, T0 + 1),  # the plain event itself
    ]
    spark_rows, fold_rows, fast = both_paths(spark, records, driver_decodes_up_to)

    assert spark_rows == fold_rows
    assert all(row[-1] is None for row in fold_rows)  # nothing here is refused
    expected_fast = {
        o for k, v, o, _ in records[:n]
        if v is not None and v[:HEADER_SIZE] == LATEST_HEADER and k.startswith(b'["acl"')
    }  # fmt: skip
    assert len(expected_fast) > 50
    assert fast == expected_fast | {n + 14, n + 15}


@pytest.mark.parametrize(
    "value, refusal",
    [
        (raw_latest(plain_record(), tail=b"\x00"), "trailing bytes"),
        (raw_latest(plain_record(minReaderVersion=LATEST_FORMAT_VERSION + 1)), "format"),
        (raw_latest(plain_record(name="payments")), "is not the key"),
        (LATEST_HEADER + b"\x06\x02\x02\x08", "Avro body"),
        (raw_latest(plain_record(actor="User:XX")).replace(b"User:XX", b"User:\xff\xfe"), "Avro body"),
    ],
    ids=["trailing-byte", "newer-reader", "other-key", "truncated", "not-utf-8"],
)
@WHERE_THE_REST_IS_READ
def test_a_record_the_fold_refuses_is_left_to_the_fold(
    spark: Any, value: bytes, refusal: str, driver_decodes_up_to: int
) -> None:
    plain = AclDeleted(binding=binding(), actor="User:admin", request_id="r1", time_ms=T0)
    key, good = binding_key(plain.binding), AvroEventCodec().encode(plain)
    records: list[Row] = [(key, good, 0, T0), (key, value, 1, T0), (key, good, 2, T0)]
    spark_rows, fold_rows, fast = both_paths(spark, records, driver_decodes_up_to)

    [error] = [row for row in spark_rows if row[-1] is not None]
    assert error == fold_rows[-1] and error[0] == 1
    assert refusal in error[-1]
    assert [row for row in spark_rows if row[0] < 1] == fold_rows[:-1]
    assert fast == {0, 2}
