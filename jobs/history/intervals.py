"""The validity intervals a batch of events opens and closes: one DataFrame transformation.

The same rules as :func:`jobs.history.decode.fold_validity`, over a whole micro-batch on the
executors instead of a loop on the driver.  Per binding or setting (its ``id``), the batch's
events and the interval still open in the table (if any) are ordered by offset; with ``lag``,
an event is *effective* when it changes the state (creating a live binding or deleting an
absent one changes nothing; every ``ConfigAltered`` of a set setting or to a value does); with
``lead`` over the effective rows, the row after an opening is the event that closes it.
"""

from __future__ import annotations

from typing import Any, Final

from jobs.history.answers import ACL_CREATED, CONFIG_ALTERED
from jobs.history.decode import BINDING_KIND, SETTING_KIND

_BINDING_FIELDS: Final = (
    "resourceType", "name", "patternType", "principal", "host", "operation", "permission",
)  # fmt: skip
_OPENED: Final = (
    "id", "kind", *_BINDING_FIELDS, "configName", "configValue",
    "fromOffset", "fromMs", "fromActor", "fromRequestId",
)  # fmt: skip


def with_identity(events: Any) -> Any:
    """``events`` rows with their ``id`` (``binding|<fields>`` or ``setting|<name>``) and kind."""
    from pyspark.sql import functions as f

    is_binding = f.col("resourceType").isNotNull()
    binding_id = f.concat(f.lit(BINDING_KIND + "|"), f.concat_ws("\x1f", *_BINDING_FIELDS))
    return events.withColumns({
        "id": f.when(is_binding, binding_id).otherwise(f.concat(f.lit(SETTING_KIND + "|"), "configName")),
        "kind": f.when(is_binding, f.lit(BINDING_KIND)).otherwise(f.lit(SETTING_KIND)),
    })  # fmt: skip


def changed_intervals(events: Any, still_open: Any) -> Any:
    """The validity rows (table schema) that ``events`` open or close.

    ``events``: the batch's rows of the events table; ``still_open``: the table's rows with a
    null ``toOffset`` (only those of the batch's ids are needed).  An interval opened before
    the batch and untouched by it is not returned.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as f

    batch = with_identity(events).select(
        "id", "kind", *_BINDING_FIELDS, "configName", "configValue",
        f.col("offset").alias("fromOffset"), f.col("timeMs").alias("fromMs"),
        f.col("actor").alias("fromActor"), f.col("requestId").alias("fromRequestId"),
        f.when(f.col("kind") == BINDING_KIND, f.col("type") == ACL_CREATED)
        .otherwise((f.col("type") == CONFIG_ALTERED) & f.col("configValue").isNotNull())
        .alias("liveAfter"),
        f.lit(False).alias("inTable"),
    )  # fmt: skip
    opened = still_open.select(*_OPENED, f.lit(True).alias("liveAfter"), f.lit(True).alias("inTable"))
    rows = batch.unionByName(opened.join(batch.select("id").distinct(), "id", "left_semi"))
    by_id = Window.partitionBy("id").orderBy("fromOffset")
    before = f.coalesce(f.lag("liveAfter").over(by_id), f.lit(False))
    effective = rows.withColumn("liveBefore", before).filter(
        f.col("inTable")
        | ((f.col("kind") == BINDING_KIND) & (f.col("liveAfter") != f.col("liveBefore")))
        | ((f.col("kind") == SETTING_KIND) & (f.col("liveAfter") | f.col("liveBefore")))
    )
    closer = f.lead(
        f.struct(
            f.col("fromOffset").alias("offset"), f.col("fromMs").alias("ms"),
            f.col("fromActor").alias("actor"), f.col("fromRequestId").alias("requestId"),
            f.col("configValue").alias("value"),
        )
    ).over(by_id)  # fmt: skip
    return (
        effective.withColumn("closer", closer)
        .filter(f.col("liveAfter") & ~(f.col("inTable") & f.col("closer").isNull()))
        .select(
            *_OPENED,
            f.col("closer.offset").alias("toOffset"), f.col("closer.ms").alias("toMs"),
            f.col("closer.actor").alias("toActor"), f.col("closer.requestId").alias("toRequestId"),
            f.when(f.col("kind") == SETTING_KIND, f.col("closer.value")).alias("toConfigValue"),
        )
    )  # fmt: skip
