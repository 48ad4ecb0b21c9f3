"""The validity intervals a micro-batch opens and closes, as DataFrame transformations.

A micro-batch comes from one partition of the log, in offset order.  The driver walks its
compact columns (:func:`compact`: offset, id, type, value) once with
:func:`jobs.history.decode.fold_positions`, against the ids of the intervals still open
before it, and names each interval the batch opens or closes by two offsets: the event that
opened it and the one that closed it (null while open).  Those *pairs* are all that goes
back from the driver; Spark builds the validity rows from them (:func:`changed_rows`): the
opening half from the batch's decoded events or from the intervals carried open from earlier
batches, the closing half from the batch.  :func:`still_open` is what the next batch carries.

Every function here is a pure transformation of DataFrames: the decoded batch (the events
table's columns), the carried intervals (:data:`OPEN_COLUMNS`) and the pairs
(:data:`PAIRS_SCHEMA`).
"""

from __future__ import annotations

from typing import Any, Final

from jobs.history.answers import ACL_CREATED
from jobs.history.decode import BINDING_KIND, SETTING_KIND

BINDING_FIELDS: Final = (
    "resourceType", "name", "patternType", "principal", "host", "operation", "permission",
)  # fmt: skip
OPEN_COLUMNS: Final = (
    "id", "kind", *BINDING_FIELDS, "configName", "configValue",
    "fromOffset", "fromMs", "fromActor", "fromRequestId",
)  # fmt: skip
"""An interval's opening half: the validity table's columns up to ``fromRequestId``."""
PAIRS_SCHEMA: Final = "fromOffset BIGINT, toOffset BIGINT"
"""An interval a batch opened or closed: the offsets of its opening and closing events."""
COMPACT_COLUMNS: Final = ("offset", "id", "type", "configValue", "error")


def identity() -> Any:
    """Each event's ``id`` as a column: ``binding|<the seven fields>`` or ``setting|<name>``
    (:func:`jobs.history.decode.identity`, in Spark)."""
    from pyspark.sql import functions as f

    fields = f.concat_ws("\x1f", *(f.col(name) for name in BINDING_FIELDS))
    return f.when(
        f.col("resourceType").isNull(), f.concat(f.lit(SETTING_KIND + "|"), f.col("configName"))
    ).otherwise(f.concat(f.lit(BINDING_KIND + "|"), fields))


def compact(decoded: Any) -> Any:
    """What the driver's fold reads of a decoded batch (:data:`COMPACT_COLUMNS`)."""
    return decoded.select("offset", identity().alias("id"), "type", "configValue", "error")


def openings(decoded: Any) -> Any:
    """Every event of a decoded batch as the opening half of an interval (:data:`OPEN_COLUMNS`)."""
    from pyspark.sql import functions as f

    kind = f.when(f.col("resourceType").isNull(), SETTING_KIND).otherwise(BINDING_KIND)
    return decoded.select(
        identity().alias("id"), kind.alias("kind"), *BINDING_FIELDS, "configName", "configValue",
        f.col("offset").alias("fromOffset"), f.col("timeMs").alias("fromMs"),
        f.col("actor").alias("fromActor"), f.col("requestId").alias("fromRequestId"),
    )  # fmt: skip


def _closings(decoded: Any) -> Any:
    """The events of a decoded batch that can close an interval, as closing halves."""
    from pyspark.sql import functions as f

    return decoded.filter(f.col("type") != ACL_CREATED).select(
        f.col("offset").alias("toOffset"), f.col("timeMs").alias("toMs"),
        f.col("actor").alias("toActor"), f.col("requestId").alias("toRequestId"),
        f.col("configValue").alias("closingValue"),
    )  # fmt: skip


def changed_rows(decoded: Any, carried: Any, pairs: Any) -> Any:
    """The validity rows of the intervals ``pairs`` names, each once in its latest form.

    ``decoded``: the batch's events that the pairs may name (none already reflected, so no
    offset is both carried and in the batch); ``carried``: the intervals open before it.
    The pairs (a few bytes per interval) and the closing halves are broadcast: no shuffle.
    """
    from pyspark.sql import functions as f

    opened = openings(decoded).unionByName(carried).join(f.broadcast(pairs), "fromOffset")
    rows = opened.join(f.broadcast(_closings(decoded)), "toOffset", "left")
    to_value = f.when(f.col("kind") == SETTING_KIND, f.col("closingValue"))
    return rows.select(
        *OPEN_COLUMNS, "toOffset", "toMs", "toActor", "toRequestId", to_value.alias("toConfigValue")
    )


def still_open(decoded: Any, carried: Any, pairs: Any) -> Any:
    """The intervals open after the batch: those carried in, and those it opened, less those
    it closed (:data:`OPEN_COLUMNS`)."""
    from pyspark.sql import functions as f

    opened_here = openings(decoded).join(f.broadcast(pairs.select("fromOffset")), "fromOffset", "left_semi")
    closed = pairs.filter(f.col("toOffset").isNotNull()).select("fromOffset")
    return (
        carried.unionByName(opened_here.select(*OPEN_COLUMNS))
        .join(f.broadcast(closed), "fromOffset", "left_anti")
        .select(*OPEN_COLUMNS)
    )
