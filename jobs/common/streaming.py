"""What every streaming job of aclstore shares: one micro-batch query until stopped (or, with
``once``, until the source's end as it starts), and writes that a batch replayed after a crash
does not repeat.

A job's table id is stable across restarts (a hash of its location).  Appends and overwrites go
through :class:`BatchWrites`: each commit is marked with the id and the batch id, and a batch
the table already holds is skipped.  A MERGE carries Delta's idempotent-write pair
(``txnAppId`` = the id, ``txnVersion`` = the batch id), read from the session, set only for
the duration of the write (:func:`idempotent_merge`).  Writes to different tables are
independent commits, so a batch may run them side by side (:func:`in_thread`,
:func:`wait_all`)."""

from __future__ import annotations

import gc
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Final

_TXN_APP_ID: Final = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION: Final = "spark.databricks.delta.write.txnVersion"


def table_app_id(kind: str, location: str) -> str:
    """The Delta ``txnAppId`` of the ``kind`` table at ``location`` (stable across restarts)."""
    return f"aclstore-{kind}-" + hashlib.sha256(location.rstrip("/").encode()).hexdigest()[:16]


@contextmanager
def session_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """The session's ``settings`` for the duration of the block, then back as they were."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


ROWS_PER_SLICE: Final = 10_000
"""The fewest rows of a slice of :func:`arrow_frame`, but for the last."""


def arrow_frame(spark: Any, table: Any) -> Any:
    """The Arrow ``table`` (on the driver) as a DataFrame of about one slice per core, each of
    at least :data:`ROWS_PER_SLICE` rows.

    Spark ships each slice inside its task, so one slice of a large table would make one huge
    task (a 500,000-event batch's table, about 80 MB, coalesced into one task ran a 2 GB local
    driver out of heap while serializing it); a slice per core keeps the tasks a core's share
    and writes as many files as a coalesced write in parallel would.

    PySpark cuts the table into slices at its chunks' boundaries as well as every
    ``rows_per_slice`` rows (``Table.to_batches``), so the table's columns are made one chunk
    each first: a batch's table arrives in chunks of some thousand rows (the source's record
    batches, the parser's passes), and cut there a 1,000,000-row batch became about a hundred
    tasks, each with its file, its task and writer set-up and, on a local file system,
    processes of Hadoop's to set the file's permissions.

    The slices are always an RDD's partitions, read in the tasks: below
    ``spark.sql.execution.arrow.localRelationThreshold`` (48 MB) Spark would instead make
    every row in the driver's thread, keep them in the plan (a ``LocalRelation``, which each
    analyzer and optimizer rule walks row by row) and ship them inside the tasks; an audit
    batch of 100,000 events cost seconds of the driver's CPU so."""
    slices = max(1, min(spark.sparkContext.defaultParallelism, table.num_rows // ROWS_PER_SLICE))
    rows_per_slice = max(1, -(-table.num_rows // slices))
    settings = {"spark.sql.execution.arrow.maxRecordsPerBatch": str(rows_per_slice),
                "spark.sql.execution.arrow.localRelationThreshold": "0"}  # fmt: skip
    with session_conf(spark, settings):
        return spark.createDataFrame(table.combine_chunks())


def idempotent_write(frame: Any, path: str, app_id: str, batch_id: int, *, mode: str = "append") -> None:
    """Write ``frame`` to the Delta table at ``path`` (``mode``: append or overwrite) with the
    pair (``app_id``, ``batch_id``): a replayed batch's write is skipped."""
    (frame.write.format("delta").mode(mode).option("txnAppId", app_id)
     .option("txnVersion", batch_id).save(path))  # fmt: skip


BATCH_MARK: Final = re.compile(r"(?P<app>\S+) batch (?P<batch>\d+)")
"""A commit's ``userMetadata`` as :class:`BatchWrites` marks it: the job's table id and the
micro-batch's id."""


def batch_mark(app_id: str, batch_id: int) -> str:
    """The ``userMetadata`` of ``app_id``'s commit of micro-batch ``batch_id``."""
    return f"{app_id} batch {batch_id}"


def last_marked_batch(app_id: str, marks: Iterable[str | None]) -> int | None:
    """The batch id in the first of ``marks`` (commits' ``userMetadata``, newest first) that
    ``app_id`` made, or None when none is its."""
    for mark in marks:
        found = BATCH_MARK.fullmatch(mark or "")
        if found is not None and found["app"] == app_id:
            return int(found["batch"])
    return None


class BatchWrites:
    """Writes a streaming job's micro-batches to Delta tables, each table at most once per
    batch id, and after the first write of a run at the cost of a blind append.

    Delta's own idempotent write (``txnAppId``/``txnVersion``) looks the pair up in the
    table's state, and Delta 4.0 computes that state afresh for the lookup at every commit
    (``Snapshot.transactions`` comes from the whole log, not from the commit's checksum file):
    three Spark jobs over the log before each write.  On two slow cores an audit batch's three
    appends took 1.5 to 2 s each so, and 0.5 to 0.6 s as blind appends.

    So a table is looked at until the run has written to it (and again after a write to it
    failed): its newest commit this job marked (``userMetadata``, :func:`batch_mark`) says the
    last batch it holds, and a batch at or before that is skipped.  The run's first commit to
    the table also carries Delta's pair, so a table whose commits a job before this one made
    with the pair alone is still written exactly once.  Later writes in the run are blind
    appends (or overwrites) with the mark: the query runs its batches in order, and only a
    run's first batch can be one a crash left half written.  A batch asked again in the same
    run is skipped.

    One instance per run and job; its writes to different tables may run side by side."""

    HISTORY_PAGES: Final = (16, 256)
    """How many of a table's newest commits are read for its mark, page after page, before
    the whole history."""

    def __init__(self, spark: Any, app_id: str) -> None:
        self.spark = spark
        self.app_id = app_id
        self._written: dict[str, int] = {}

    def write(self, frame: Any, path: str, batch_id: int, *, mode: str = "append") -> None:
        """Write ``frame`` to the Delta table at ``path`` (``mode``: append or overwrite) as
        micro-batch ``batch_id``, unless the table holds that batch already."""
        written = self._written.get(path)
        if written is None:
            held = self.last_written(path)
            if held is None or batch_id > held:
                self._write(frame, path, batch_id, mode, checked_by_delta=True)
        elif batch_id > written:
            self._write(frame, path, batch_id, mode, checked_by_delta=False)

    def _write(self, frame: Any, path: str, batch_id: int, mode: str, *, checked_by_delta: bool) -> None:
        self._written.pop(path, None)  # looked at again if this write fails
        mark = batch_mark(self.app_id, batch_id)
        writer = frame.write.format("delta").mode(mode).option("userMetadata", mark)
        if checked_by_delta:
            writer = writer.option("txnAppId", self.app_id).option("txnVersion", batch_id)
        writer.save(path)
        self._written[path] = batch_id

    def last_written(self, path: str) -> int | None:
        """The last batch the table at ``path`` holds by this job's marks (None: no commit of
        its own is marked, or no table is there yet)."""
        from delta.tables import DeltaTable

        if not DeltaTable.isDeltaTable(self.spark, path):
            return None
        table = DeltaTable.forPath(self.spark, path)
        for limit in (*self.HISTORY_PAGES, None):
            history = table.history(limit) if limit is not None else table.history()
            marks = [row[0] for row in history.select("userMetadata").collect()]
            found = last_marked_batch(self.app_id, marks)
            if found is not None or limit is None or len(marks) < limit:
                return found
        return None


def idempotent_merge(spark: Any, app_id: str, batch_id: int) -> AbstractContextManager[None]:
    """Delta writes inside carry (``app_id``, ``batch_id``): a replayed batch is skipped."""
    return session_conf(spark, {_TXN_APP_ID: app_id, _TXN_VERSION: str(batch_id)})


def hadoop_path(spark: Any, uri: str) -> tuple[Any, Any]:
    """``uri``'s Hadoop file system and path (JVM objects): a checkpoint's files, on any URI."""
    path = spark._jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


class HadoopFolder:
    """One folder's files (any Hadoop URI: a checkpoint's), each read whole."""

    def __init__(self, spark: Any, uri: str) -> None:
        self.fs, self.folder = hadoop_path(spark, uri)
        self._new_path = spark._jvm.org.apache.hadoop.fs.Path
        self._read_all = spark._jvm.org.apache.commons.io.IOUtils.toByteArray

    def path(self, name: str) -> Any:
        return self._new_path(self.folder, name)

    def read(self, name: str) -> bytes | None:
        """The file ``name``'s bytes, or None when there is none."""
        path = self.path(name)
        if not self.fs.exists(path):
            return None
        stream = self.fs.open(path)
        try:
            return bytes(self._read_all(stream))
        finally:
            stream.close()


class BatchStates:
    """A small JSON document per micro-batch in a folder (beside a query's checkpoint), read
    and written through Hadoop's file systems, so any checkpoint URI serves.

    :meth:`save` writes ``<batch id>.json`` whole (a temporary file renamed over it) and
    removes the one :data:`KEEP` batches older; :meth:`before` reads the latest one saved
    before a batch, which is what a batch replayed after a crash starts from."""

    KEEP: Final = 10

    def __init__(self, spark: Any, folder: str) -> None:
        self._files = HadoopFolder(spark, folder)

    def before(self, batch_id: int) -> Any:
        """The document saved by the latest batch before ``batch_id``, or None."""
        fs, folder = self._files.fs, self._files.folder
        if not fs.exists(folder):
            return None
        names = [status.getPath().getName() for status in fs.listStatus(folder)]
        saved = [int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()]
        earlier = [one for one in saved if one < batch_id]
        if not earlier:
            return None
        document = self._files.read(f"{max(earlier)}.json")
        return None if document is None else json.loads(document)

    def save(self, batch_id: int, document: Any) -> None:
        """``document`` as ``batch_id``'s (over a copy saved by an earlier try of the batch)."""
        fs, path = self._files.fs, self._files.path
        final, temporary = path(f"{batch_id}.json"), path(f".{batch_id}.json.tmp")
        out = fs.create(temporary, True)
        try:
            out.write(bytearray(json.dumps(document).encode()))
        finally:
            out.close()
        fs.delete(final, False)
        if not fs.rename(temporary, final):
            raise OSError(f"could not rename {temporary} to {final}")
        fs.delete(path(f"{batch_id - self.KEEP}.json"), False)


class OffsetLogError(ValueError):
    """A query's offset log holds no entry, or one this reading does not know, for a batch."""


def source_offsets(entry: str) -> list[str | None]:
    """Each source's end offset (its JSON text; None where ``-``: no offset yet) in one entry
    of a query's offset log (``<checkpoint>/offsets/<batch id>``): a version line (``v1``), a
    line of the batch's metadata, then a line per source.  OffsetLogError for other text."""
    lines = entry.splitlines()
    if len(lines) < 3 or not lines[0].startswith("v") or not lines[1].startswith("{"):
        raise OffsetLogError(f"not an offset log entry: {entry[:80]!r}")
    return [None if line == "-" else line for line in lines[2:]]


class OffsetLog:
    """The offset log of the query whose checkpoint is ``checkpoint`` (any Hadoop URI), where
    Spark writes each micro-batch's end offsets before it runs the batch: a batch reads from
    the previous batch's ends to its own."""

    def __init__(self, spark: Any, checkpoint: str) -> None:
        self._files = HadoopFolder(spark, f"{checkpoint.rstrip('/')}/offsets")

    def ends(self, batch_id: int) -> list[str | None]:
        """The sources' end offsets of ``batch_id`` (:func:`source_offsets`)."""
        entry = self._files.read(str(batch_id))
        if entry is None:
            raise OffsetLogError(f"the offset log has no batch {batch_id} under {self._files.folder}")
        return source_offsets(entry.decode())


@dataclass(frozen=True, slots=True)
class StreamProgress:
    """How far a streaming query has got: the records its finished batches read, where its
    source stands after them and the source's end as the query last saw it (positions: a log
    offset, summed over a Kafka topic's partitions; None before the first batch)."""

    records: int
    position: int | None
    end: int | None

    @property
    def remaining(self) -> int | None:
        if self.position is None or self.end is None:
            return None
        return max(0, self.end - self.position)


def _position(offset: Any) -> int | None:
    """A source offset as one number: the embedded log's ``{"offset": n}``, or Kafka's
    ``{"topic": {"partition": n}}`` summed (JSON text or parsed, as Spark reports it)."""
    if isinstance(offset, str):
        try:
            offset = json.loads(offset)
        except ValueError:
            return None
    if isinstance(offset, bool):
        return None
    if isinstance(offset, int):
        return offset
    if isinstance(offset, dict):
        found = [_position(v) for v in offset.values()]
        return None if not found or None in found else sum(v for v in found if v is not None)
    return None


def embedded_offset(offset: Any) -> int | None:
    """The embedded log's offset ``{"offset": n}`` (JSON text, as Spark reports it) as n; None
    for any other source's, or none."""
    try:
        parsed = json.loads(offset) if isinstance(offset, str) else offset
    except ValueError:
        return None
    if isinstance(parsed, dict) and list(parsed) == ["offset"] and type(parsed["offset"]) is int:
        return int(parsed["offset"])
    return None


def progress_of(reports: Iterable[Mapping[str, Any]]) -> StreamProgress:
    """The progress in a query's batch reports (``StreamingQuery.lastProgress`` documents,
    oldest first, each batch counted once by its id): the records read, and the one source's
    position and end as of the latest report that names them.

    A batch's records are its ``numInputRows``, but for a batch of the embedded log of which
    Spark counted none: a job that reads a batch's range from the log itself never runs the
    batch's DataFrame (:meth:`jobs.common.source.LogSource.batch_records`), so its records are
    the offsets between the batch's start (a query's first batch, whose start Spark reports
    as none, starts at the log's offset 0) and its end."""
    rows: dict[int, int] = {}
    position = end = None
    for report in reports:
        sources = report.get("sources") or []
        counted = int(report.get("numInputRows") or 0)
        if len(sources) == 1:
            if not counted and (ended := embedded_offset(sources[0].get("endOffset"))) is not None:
                counted = max(0, ended - (embedded_offset(sources[0].get("startOffset")) or 0))
            position = _position(sources[0].get("endOffset")) or position
            end = _position(sources[0].get("latestOffset")) or end
        rows[int(report.get("batchId", -1))] = counted
    return StreamProgress(records=sum(rows.values()), position=position, end=end)


def run_micro_batches(
    frame: Any,
    each_batch: Callable[[Any, int], None],
    *,
    checkpoint: str,
    name: str,
    once: bool,
    on_progress: Callable[[StreamProgress], None] | None = None,
) -> None:
    """Run ``each_batch`` over the streaming ``frame`` until stopped, or (``once``) until the
    source's end as the query starts (trigger ``availableNow``).  A failing batch ends it with
    the batch's own exception (a job's typed stop, say), raised from Spark's report of the
    failed query.  Python's cyclic collector runs after each batch.

    ``on_progress`` is told the query's :class:`StreamProgress` about once a second while it
    runs (from Spark's own batch reports, so it costs no query)."""
    raised: list[BaseException] = []

    def batch_reporting_failure(batch: Any, batch_id: int) -> None:
        try:
            each_batch(batch, batch_id)
        except BaseException as exc:
            raised.append(exc)
            raise
        finally:
            # A batch's DataFrames hold its rows in the driver's JVM until Python frees them, and
            # PySpark's objects sit in reference cycles: unless collected now, batches of rows
            # pile up there (a 10,000,000-event archive ran a 2 GB local driver out of heap).
            gc.collect()

    writer = (
        frame.writeStream.foreachBatch(batch_reporting_failure)
        .option("checkpointLocation", checkpoint)
        .queryName(name)
    )
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime="1 second")
    query = writer.start()
    seen: dict[int, Mapping[str, Any]] = {}

    def report(*, final: bool = False) -> None:
        if on_progress is None:
            return
        # Each report is copied out of the JVM field by field: the latest alone while batches
        # come one per look, this run's recent ones when some were passed over, and at the end.
        latest = query.lastProgress
        if latest is None and not final:
            return
        passed_over = latest is not None and (not seen or int(latest["batchId"]) > max(seen) + 1)
        for one in query.recentProgress if final or passed_over else [latest]:
            seen[int(one.get("batchId", -1))] = one
        on_progress(progress_of(seen[k] for k in sorted(seen)))

    try:
        while not query.awaitTermination(1.0):
            report()
        report(final=True)
    except Exception as failed:
        if raised:
            raise raised[0] from failed
        raise
    finally:
        query.stop()


class Running:
    """A call running on a :class:`pyspark.InheritableThread` (so its Spark jobs carry the
    caller's local properties); :meth:`error` waits and hands over its exception."""

    def __init__(self, call: Callable[[], None]) -> None:
        from pyspark import InheritableThread

        self._errors: list[BaseException] = []

        def run() -> None:
            try:
                call()
            except BaseException as exc:  # handed to the caller by error()
                self._errors.append(exc)

        self._thread = InheritableThread(target=run, daemon=True)
        self._thread.start()

    def error(self) -> BaseException | None:
        """Wait for the call to end; the exception it raised, if any."""
        self._thread.join()
        return self._errors[0] if self._errors else None


def in_thread(func: Callable[..., None], *args: Any) -> Running:
    """``func(*args)`` running beside the caller."""
    return Running(lambda: func(*args))


def wait_all(running: list[Running]) -> None:
    """Wait for every call in ``running`` to end, then raise the first one's exception (in
    list order), if any: no call is left running behind an error."""
    errors = [error for call in running if (error := call.error()) is not None]
    if errors:
        raise errors[0]
