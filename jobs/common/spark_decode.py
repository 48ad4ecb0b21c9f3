"""The fold's fast path in Spark: the common ACL event read by the executors' JVM, or left to
the one fold in Python.

Most of a log is ``AclCreated`` and ``AclDeleted`` events in the latest Avro format.  Read in
the Python workers (:mod:`jobs.common.worker`) each costs a round trip through Arrow and
the fold's Python; Spark's own Avro reader (``from_avro``, the ``spark-avro`` module the
session's jars include) reads it where the record already is.  :func:`read_fast` takes a
record only when its answer is provably the one :class:`store.fold_fast.FastAclDecoder`
gives, and leaves every other record (null) for :func:`jobs.common.worker.decode_batches`:

* the value is the latest format's Avro single-object encoding (its ``C3 01`` marker and
  fingerprint), and Spark's reading of the body, encoded again (``to_avro``), is the body
  byte for byte: Avro's encoding of a value is unique, so fastavro reads the same fields,
  with no trailing bytes and no out-of-range enum index;
* an ``ACL_CREATED`` or ``ACL_DELETED`` that this release may apply (``minReaderVersion``
  and ``schemaVersion`` the latest format), no enum field ``UNKNOWN``;
* its five strings printable ASCII without ``"`` or ``\\``, so that the log key is their
  plain concatenation (:func:`store.codec.binding_key_of_fields` escapes nothing in them)
  and no question of UTF-8 validity arises; the record's key is that key;
* its log time within the years 1970-9999, whose day :func:`jobs.common.rows.day_of`
  and Spark write alike.

Anything else, including every record the fold refuses, reaches the one fold as before, so
the archive's rows and its stopping point do not depend on which path read a record
(``tests/jobs/common/test_spark_decode.py`` compares the two on the same records).
"""

from __future__ import annotations

from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

import schemas
from jobs.common.events import ACL_CREATED, ACL_DELETED
from jobs.common.rows import BINDING_FIELDS
from jobs.common.worker import DECODED_ARROW_SCHEMA, DECODED_SCHEMA, decode_batches
from store.codec import AvroEventCodec
from store.codec.avro_codec import HEADER_SIZE
from store.codec.keys import ACL_KEY_TAG
from store.events import LATEST_FORMAT_VERSION

KEY_FIELDS: Final = (
    "resourceType", "name", "patternType", "principal", "host", "operation", "permissionType",
)  # fmt: skip
"""The event's fields in the log key's order (:func:`store.codec.binding_key_of_fields`), the
order of their columns (:data:`jobs.common.rows.BINDING_FIELDS`)."""
ENUM_FIELDS: Final = ("resourceType", "patternType", "operation", "permissionType")
STRING_FIELDS: Final = ("name", "principal", "host", "actor", "requestId")
PLAIN_ASCII: Final = r"^[ !#-\[\]-~]*$"
"""Printable ASCII but ``"`` and ``\\``: what ``encode_basestring_ascii`` copies unescaped."""
LAST_DAY_MS: Final = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z, the last log time whose day both sides write alike."""
_DAY_MS: Final = 86_400_000
RECORD_COLUMNS: Final = ("key", "value", "offset", "timestampMs")


def read_fast(records: Any) -> Any:
    """``records`` (:data:`RECORD_COLUMNS`) as :data:`~jobs.common.worker.DECODED_SCHEMA`
    rows plus ``fast``: true for a record read here; false for one left to the fold, whose
    ``key`` and ``value`` are kept (null for the records read here) and whose columns but
    ``offset``, ``timeMs`` and ``day`` are null."""
    from pyspark.sql import functions as f
    from pyspark.sql.avro.functions import from_avro, to_avro

    version = LATEST_FORMAT_VERSION
    schema = schemas.avro_schema_text(version)
    body = f.substring(f.col("value"), HEADER_SIZE + 1, 1 << 30)
    read = records.select(*RECORD_COLUMNS, from_avro(body, schema, {"mode": "PERMISSIVE"}).alias("e"))

    def field(name: str) -> Any:
        return f.col("e").getField(name)

    key = f.concat(
        f.lit(f'["{ACL_KEY_TAG}","'), f.concat_ws('","', *map(field, KEY_FIELDS)), f.lit('"]')
    ).cast("binary")
    checks = [
        f.substring(f.col("value"), 1, HEADER_SIZE) == f.lit(AvroEventCodec().header(version)),
        field("eventType").isin(ACL_CREATED, ACL_DELETED),
        field("schemaVersion") == version,
        field("minReaderVersion") <= version,
        *(field(name) != "UNKNOWN" for name in ENUM_FIELDS),
        *(field(name).rlike(PLAIN_ASCII) for name in STRING_FIELDS),
        f.col("timestampMs").between(0, LAST_DAY_MS),
        f.col("key") == key,
        to_avro(f.col("e"), schema) == body,
    ]
    accepted = checks[0]
    for check in checks[1:]:
        accepted = accepted & check
    checked = read.select(*RECORD_COLUMNS, f.when(accepted, f.col("e")).alias("e"))
    fast = f.col("e").isNotNull()
    day = f.date_from_unix_date(f.floor(f.col("timestampMs") / _DAY_MS).cast("int")).cast("string")
    none = f.lit(None).cast("string")
    return checked.select(
        "offset", f.col("timestampMs").alias("timeMs"), day.alias("day"), field("eventType").alias("type"),
        *(field(name).alias(column) for name, column in zip(KEY_FIELDS, BINDING_FIELDS, strict=True)),
        none.alias("configName"), none.alias("configValue"), field("actor").alias("actor"),
        field("requestId").alias("requestId"), none.alias("error"), fast.alias("fast"),
        f.when(~fast, f.col("key")).alias("key"), f.when(~fast, f.col("value")).alias("value"),
    )  # fmt: skip


DRIVER_DECODES_UP_TO: Final = 20_000
"""The most records a batch leaves to the fold that the driver reads itself (a fraction of a
second of Python); more go back to the executors' Python workers, where every core decodes."""


def decode_records(records: Any, *, driver_decodes_up_to: int = DRIVER_DECODES_UP_TO) -> pa.Table:
    """The decoded rows (:data:`~jobs.common.worker.DECODED_ARROW_SCHEMA`, in offset order) of
    ``records`` (:data:`RECORD_COLUMNS`), on the driver.

    Spark reads them once (:func:`read_fast`) and sends every row to the driver.  The records
    left to the fold are read by :func:`jobs.common.worker.decode_batches`, the one fold in
    Python: on the driver when there are at most ``driver_decodes_up_to`` of them (a log in
    the latest Avro format leaves only its settings changes and tombstones), else in the
    executors' Python workers.  Each reading stops at the first record it refuses, whose row
    carries the fold's message; rows the fast path read after it are still here, and the
    caller stops at the first error's offset."""
    read = read_fast(records.select(*RECORD_COLUMNS)).toArrow()
    fast = read.column("fast")
    taken = read.filter(fast).select(DECODED_ARROW_SCHEMA.names).cast(DECODED_ARROW_SCHEMA)
    left = read.filter(pc.invert(fast)).select(["key", "value", "offset", "timeMs"]).sort_by("offset")
    if left.num_rows <= driver_decodes_up_to:
        folded = pa.Table.from_batches(list(decode_batches(left.to_batches())), DECODED_ARROW_SCHEMA)
    else:
        spark = records.sparkSession
        frame = spark.createDataFrame(left.rename_columns(list(RECORD_COLUMNS)))
        folded = frame.mapInArrow(decode_batches, DECODED_SCHEMA).toArrow().cast(DECODED_ARROW_SCHEMA)
    return pa.concat_tables([taken, folded]).sort_by("offset")
