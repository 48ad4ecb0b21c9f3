"""The archive job: the change log, streamed into the history and validity Delta tables.

One Structured Streaming query reads the log (:meth:`jobs.common.source.LogSource.stream`:
Spark's Kafka source for a cluster's topic, :mod:`jobs.common.sqlite_source` for the embedded
log).  Each micro-batch is read once by the executors and its decoded rows come to the driver
as Arrow columns (:func:`jobs.common.spark_decode.decode_records`: the common event by Spark's
Avro reader,
every other record by the one fold in Python).  The log is one partition, a total order, and
the validity intervals are its sequential fold: the driver folds the batch's columns whole
against the intervals still open and builds the intervals' rows with vectorised Arrow
operations (:func:`jobs.history.intervals.fold_batch`), while Spark appends the events to ``events``;
then Spark appends the intervals' rows to ``validity``, whose closed rows supersede the open
rows of the same intervals (:mod:`jobs.history.tables`): two appends, no MERGE, no join.

Exactly once: the query's checkpoint fixes each batch's offsets, and both Delta writes are
marked with this archive's id and the batch id (:class:`~jobs.common.streaming.BatchWrites`),
so a batch replayed after a crash (even a SIGKILL between the two writes) commits each table
at most once.  A record the fold refuses stops the job: the events before it in its
batch are archived, and :class:`~jobs.history.errors.ArchiveStoppedError` names its offset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from jobs.common.rows import EVENTS_SCHEMA
from jobs.common.source import LogSource
from jobs.common.spark_decode import decode_records
from jobs.common.streaming import (
    BatchWrites,
    StreamProgress,
    arrow_frame,
    in_thread,
    run_micro_batches,
    table_app_id,
    wait_all,
)
from jobs.history.errors import ArchiveStoppedError
from jobs.history.intervals import OPEN_ARROW_SCHEMA, OPEN_COLUMNS, OpenIntervals
from jobs.history.tables import (
    EVENTS_DIR,
    EVENTS_PARTITIONING,
    VALIDITY_DIR,
    VALIDITY_PARTITIONING,
    VALIDITY_SCHEMA,
    events_path,
    open_rows,
    table_properties,
    validity_path,
)

ARCHIVE_MAX_RECORDS_PER_BATCH: Final = 1_000_000
"""The archive's: each batch costs a fixed part (two Delta commits, a Spark job per table, the
query's own bookkeeping) besides its rows, so a backlog drains faster in larger batches
(``python -m bench history``).  A batch's rows pass through the driver (:class:`Archiver`) as
Arrow columns, with as much again for their validity rows, which the local sessions' 2 GB
driver (:mod:`jobs.common.session`) holds."""


def archive_id(location: str) -> str:
    """The Delta ``txnAppId`` of the archive at ``location`` (stable across restarts)."""
    return table_app_id("history", location)


def ensure_tables(spark: Any, location: str) -> bool:
    """Create both tables (empty, partitioned) if they are not there yet; True when neither
    was (a new archive, with no interval open)."""
    from delta.tables import DeltaTable

    paths = (events_path(location), validity_path(location))
    fresh = not any(DeltaTable.isDeltaTable(spark, path) for path in paths)
    for table, path, schema, parts in (
        (EVENTS_DIR, paths[0], EVENTS_SCHEMA, EVENTS_PARTITIONING),
        (VALIDITY_DIR, paths[1], VALIDITY_SCHEMA, VALIDITY_PARTITIONING),
    ):
        empty = spark.createDataFrame([], schema)
        create = DeltaTable.createIfNotExists(spark).location(path).addColumns(empty.schema)
        create = create.partitionedBy(*parts)
        for key, value in table_properties(table).items():
            create = create.property(key, value)
        create.execute()
    return fresh


class Archiver:
    """Writes a run's micro-batches, keeping the intervals open between them.

    A batch is read once (:func:`~jobs.common.spark_decode.decode_records`) into Arrow
    columns on the driver, which are both tables' source: Spark appends them to ``events``
    while the driver folds them into the ``validity`` rows.

    The intervals open between batches are carried on the driver
    (:class:`~jobs.history.intervals.OpenIntervals`: their opening halves, about one row per
    live binding and setting), read from ``validity`` at
    the run's first batch unless the archive is new.  ``reflected`` is the last offset the
    validity table holds a change of when they are read: a batch replayed after a crash
    (its writes then skipped as ones the tables hold) folds only the events after
    it, so the carried intervals never count an event twice.
    """

    def __init__(self, spark: Any, location: str, *, fresh: bool = False) -> None:
        self.spark = spark
        self.location = location
        self.app_id = archive_id(location)
        self.writes = BatchWrites(spark, self.app_id)
        self.carried: OpenIntervals | None = OpenIntervals() if fresh else None
        self.reflected = -1

    def __call__(self, batch: Any, batch_id: int) -> None:
        """Decode one micro-batch and write it; raise ArchiveStoppedError (after writing what
        precedes it) when the batch holds a record the fold refuses."""
        import pyarrow.compute as pc

        decoded = decode_records(batch)
        stop: ArchiveStoppedError | None = None
        refused = decoded.filter(pc.is_valid(decoded.column("error")))
        if refused.num_rows:
            first = refused.slice(0, 1).to_pylist()[0]
            at = int(first["offset"])
            stop = ArchiveStoppedError.at(at, first["error"])
            decoded = decoded.filter(pc.less(decoded.column("offset"), at))
        self.write(decoded.drop_columns(["error"]), batch_id)
        if stop is not None:
            raise stop

    def write(self, events: Any, batch_id: int) -> None:
        """Append ``events`` (Arrow, the events table's columns, in offset order) to ``events``
        and the intervals they open and close to ``validity``, each table at most once per
        ``batch_id``.

        The two appends are independent commits (each marked with the batch, and a replay folds
        only what ``validity`` does not reflect yet), so they run at the same time; the driver
        folds the intervals while the events are written.
        """
        import pyarrow.compute as pc

        frame = arrow_frame(self.spark, events)
        events_written = in_thread(self.append, frame, events.num_rows, events_path(self.location), batch_id)
        try:
            if self.carried is None:
                self.carried, self.reflected = read_open_intervals(self.spark, self.location)
            unreflected = events.filter(pc.greater(events.column("offset"), self.reflected))
            rows = self.carried.fold(unreflected)
            if rows.num_rows:
                validity = arrow_frame(self.spark, rows)
                self.append(validity, rows.num_rows, validity_path(self.location), batch_id)
        finally:
            wait_all([events_written])

    def append(self, rows: Any, count: int, path: str, batch_id: int) -> None:
        """Append ``rows`` (``count`` of them) to the Delta table at ``path``."""
        if count:
            self.writes.write(rows, path, batch_id)


def read_open_intervals(spark: Any, location: str) -> tuple[OpenIntervals, int]:
    """The intervals ``validity`` holds open, and the last offset it holds a change of."""
    from pyspark.sql import functions as f

    table = spark.read.format("delta").load(validity_path(location))
    reflected = table.agg(f.greatest(f.max("fromOffset"), f.max("toOffset"))).collect()[0][0]
    if reflected is None:  # a new archive
        return OpenIntervals(), -1
    rows = open_rows(table).select(*OPEN_COLUMNS).toArrow().cast(OPEN_ARROW_SCHEMA).sort_by("fromOffset")
    return OpenIntervals(rows), int(reflected)


def run_archive(
    spark: Any,
    source: LogSource,
    location: str,
    checkpoint: str,
    *,
    once: bool,
    max_records_per_batch: int = ARCHIVE_MAX_RECORDS_PER_BATCH,
    on_progress: Callable[[StreamProgress], None] | None = None,
) -> None:
    """Archive ``source`` into ``location``: until stopped, or (``once``) until the log's end
    as the job starts (trigger ``availableNow``).  Raises ArchiveStoppedError on a bad record.
    ``on_progress``: told how far the job has got, about once a second."""
    archiver = Archiver(spark, location, fresh=ensure_tables(spark, location))
    run_micro_batches(
        source.stream(spark, max_records_per_batch), archiver,
        checkpoint=checkpoint, name="aclstore_history_archive", once=once, on_progress=on_progress,
    )  # fmt: skip
