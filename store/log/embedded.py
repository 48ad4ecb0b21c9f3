"""The embedded change log: SQLite in WAL mode in the data directory, for a single machine.

Same contract as the Kafka backend: offsets from 0, dense at write time, a record is returned by
``append`` only after its transaction committed with ``synchronous=FULL`` (durable across a
power loss), and :meth:`EmbeddedChangeLog.compact` does what Kafka's log cleaner does for a
``cleanup.policy=compact`` topic: keep the latest record per key, drop tombstones after
``delete_retention_ms``, touch nothing younger than ``min_compaction_lag_ms``, and never remove
the last record of the log (Kafka never cleans the active segment), so the log end stays
readable.  The low watermark is the log start offset (0); compaction leaves it alone, as in
Kafka.  Several processes may open the same directory: SQLite serializes writers.

Each log has a cleanup policy, as a Kafka topic has ``cleanup.policy``, kept in the file: a
``compact`` log (the change log; every log of earlier versions) keeps an index of its records
by key, which compaction needs and every append pays for; a ``delete`` log (the audit log, as
the audit topic on Kafka) has no such index and is never compacted.  Whoever creates the log
chooses; opening it later without naming a policy keeps the file's, and naming the other one
converts it (dropping the index; or building it over every record).

A ``delete`` log stores each append as one row, as Kafka stores a record batch
(:mod:`store.log.record_batches`); readers get the same records, offsets and timestamps.  A log
converted to ``delete`` keeps its earlier records as they are, one row each: every record
stored one way has a lower offset than every record stored the other way, as converting to
``compact`` turns the batches into records before building the index.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from store.log import record_batches
from store.log.base import (
    LogNotCompactedError,
    LogOffsetOutOfRangeError,
    LogRecord,
    LogUnavailableError,
)

FILE_NAME: Final = "changelog.sqlite3"
DAY_MS: Final = 24 * 3600 * 1000

_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS records (
        offset INTEGER PRIMARY KEY,
        key BLOB NOT NULL,
        value BLOB,
        timestamp_ms INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS record_batches (
        base_offset INTEGER PRIMARY KEY,
        timestamp_ms INTEGER NOT NULL,
        sizes BLOB NOT NULL,
        data BLOB NOT NULL
    )""",
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO meta (name, value) VALUES ('next_offset', 0), ('log_start_offset', 0)",
)
_KEY_INDEX: Final = "records_by_key"
_COMPACTED: Final = "compacted"
"""The ``meta`` row holding the cleanup policy (1: compact, 0: delete); a log of an earlier
version has none, and is compacted (it has the key index)."""
_APPEND_META: Final = f"SELECT name, value FROM meta WHERE name IN ('next_offset', '{_COMPACTED}')"

CleanupPolicy = Literal["compact", "delete"]

DELETE_LOG_PAGE_BYTES: Final = 65536
"""The SQLite page size of a log created as ``delete`` (SQLite's default is 4096): an append's
row is a few hundred kilobytes to a few megabytes, and each page of it is one frame of the
write-ahead log, checksummed and written, then copied into the database at the checkpoint.
A log that exists keeps its page size (SQLite sets it when the file is made)."""

_RECORDS_FROM: Final = (
    "SELECT offset, key, value, timestamp_ms FROM records WHERE offset >= ? ORDER BY offset"
)
_BATCHES_FROM: Final = (
    "SELECT base_offset, timestamp_ms, sizes, data FROM record_batches WHERE base_offset >= "
    "(SELECT coalesce(max(base_offset), 0) FROM record_batches WHERE base_offset <= ?) "
    "ORDER BY base_offset"
)

StoredRecord = tuple[int, bytes, bytes | None, int]
"""A record as stored: ``(offset, key, value, timestamp_ms)``."""


StoredBatch = tuple[int, int, bytes, bytes]
"""A batch as stored: ``(base_offset, timestamp_ms, sizes, data)`` (:mod:`.record_batches`)."""


def records_from(db: sqlite3.Connection, from_offset: int) -> Iterator[StoredRecord]:
    """The records of the log file ``db`` from ``from_offset`` on, in offset order, stored
    either way: those one a row, then those in batches (every batched record has a higher
    offset than every record stored one a row).  Read lazily: the batches are queried only
    once the rows are used up."""
    yield from single_records_from(db, from_offset)
    for row in batches_from(db, from_offset):
        yield from record_batches.unpack(*row, from_offset=from_offset)


def single_records_from(db: sqlite3.Connection, from_offset: int) -> Iterator[StoredRecord]:
    """The records stored one a row from ``from_offset`` on, in offset order (the first half of
    :func:`records_from`): the query's cursor."""
    cursor: Iterator[StoredRecord] = db.execute(_RECORDS_FROM, (from_offset,))
    return cursor


def batches_from(db: sqlite3.Connection, from_offset: int) -> Iterator[StoredBatch]:
    """The stored batches holding records from ``from_offset`` on, in offset order (the
    second half of :func:`records_from`; the first may begin before ``from_offset``).  The
    jobs' embedded source reads them as they are (:mod:`jobs.common.sqlite_source`): the
    query's cursor."""
    cursor: Iterator[StoredBatch] = db.execute(_BATCHES_FROM, (from_offset,))
    return cursor


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddedLogSettings:
    """Compaction settings, named and defaulted as the Kafka topic's (see ``KafkaLogSettings``)."""

    min_compaction_lag_ms: int = 7 * DAY_MS
    delete_retention_ms: int = DAY_MS

    def __post_init__(self) -> None:
        if self.min_compaction_lag_ms < 0 or self.delete_retention_ms < 0:
            raise ValueError("min_compaction_lag_ms and delete_retention_ms must be >= 0")


_FIRST_POLL_S: Final = 0.01
_LAST_POLL_S: Final = 0.02
"""A reader waiting for records polls for another process's appends this often, from the
first to the last pause, doubling (an append through the same instance wakes it at once)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class EmbeddedChangeLog:
    """A :class:`~store.log.base.ChangeLog` in ``<data_dir>/changelog.sqlite3``."""

    def __init__(
        self,
        data_dir: Path | str,
        settings: EmbeddedLogSettings | None = None,
        *,
        cleanup_policy: CleanupPolicy | None = None,
    ) -> None:
        """Open (or create) the log in ``data_dir``.

        ``cleanup_policy``: None keeps the policy of an existing log (a new one is
        ``compact``); ``"delete"`` or ``"compact"`` makes the log so, converting an existing
        log of the other policy (see the module's docstring).
        """
        if cleanup_policy not in (None, "compact", "delete"):
            raise ValueError(f"cleanup_policy must be 'compact' or 'delete', got {cleanup_policy!r}")
        self.data_dir = Path(data_dir)
        self.settings = settings or EmbeddedLogSettings()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / FILE_NAME
        self._lock = threading.Lock()
        self._grown = threading.Condition()
        self._appends = 0
        """Commits made through this instance: a reader in this process waits on
        :attr:`_grown` for the next one instead of polling (another process's appends are
        still found by polling, at most :data:`_LAST_POLL_S` apart)."""
        self._busy_timeout_ms = -1
        """The ``busy_timeout`` last set on the connection (set again only when it changes)."""
        try:
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
            if cleanup_policy == "delete":  # only a new file takes it (before WAL mode is set)
                self._db.execute(f"PRAGMA page_size = {DELETE_LOG_PAGE_BYTES}")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self.cleanup_policy: CleanupPolicy = self._set_up(cleanup_policy)
        except sqlite3.Error as exc:
            raise LogUnavailableError(f"cannot open the embedded log {self.path}: {exc}") from exc

    def _set_up(self, asked: CleanupPolicy | None) -> CleanupPolicy:
        """Create what is missing and settle the cleanup policy, in one transaction (another
        process may be opening the same log)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _TABLES:
                db.execute(statement)
            row = db.execute("SELECT value FROM meta WHERE name = ?", (_COMPACTED,)).fetchone()
            if row is not None:
                stored: CleanupPolicy | None = "compact" if row[0] else "delete"
            else:  # every earlier version made the index: a log without both is new
                indexed = db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (_KEY_INDEX,)
                ).fetchone()
                stored = "compact" if indexed else None
            policy: CleanupPolicy = asked or stored or "compact"
            if policy != stored or row is None:  # a new log, or one to convert
                if policy == "compact":
                    self._unbatch()
                    db.execute(f"CREATE INDEX IF NOT EXISTS {_KEY_INDEX} ON records (key, offset)")
                else:
                    db.execute(f"DROP INDEX IF EXISTS {_KEY_INDEX}")
                db.execute(
                    "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)",
                    (_COMPACTED, int(policy == "compact")),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return policy

    def _unbatch(self) -> None:
        """Store a ``delete`` log's batches one row a record (in the caller's transaction)."""
        db = self._db
        batches = db.execute("SELECT base_offset, timestamp_ms, sizes, data FROM record_batches")
        for row in batches.fetchall():
            db.executemany(
                "INSERT INTO records (offset, key, value, timestamp_ms) VALUES (?, ?, ?, ?)",
                record_batches.unpack(*row),
            )
        db.execute("DELETE FROM record_batches")

    def __enter__(self) -> EmbeddedChangeLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EmbeddedChangeLog({str(self.data_dir)!r})"

    def _meta(self, name: str) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return int(row[0])

    def append(
        self, records: Sequence[tuple[bytes, bytes | None]], *, timeout: float = 10.0
    ) -> list[int]:
        """Append in one transaction; the offsets are returned after the durable commit."""
        if not records:
            return []
        now = _now_ms()
        with self._lock:
            busy_ms = max(1, int(timeout * 1000))
            if busy_ms > 1000:  # to 0.1 s: a caller's remaining time seldom sets it anew
                busy_ms -= busy_ms % 100
            if busy_ms != self._busy_timeout_ms:
                self._db.execute(f"PRAGMA busy_timeout = {busy_ms}")
                self._busy_timeout_ms = busy_ms
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    # The policy is read in the transaction: another process may have converted
                    # the log since this one opened it.
                    meta = dict(self._db.execute(_APPEND_META).fetchall())
                    first = int(meta["next_offset"])
                    if meta[_COMPACTED]:
                        self._db.executemany(
                            "INSERT INTO records (offset, key, value, timestamp_ms) "
                            "VALUES (?, ?, ?, ?)",
                            [(first + i, bytes(k), v, now) for i, (k, v) in enumerate(records)],
                        )
                    else:
                        sizes, data = record_batches.pack(records)
                        self._db.execute(
                            "INSERT INTO record_batches (base_offset, timestamp_ms, sizes, data) "
                            "VALUES (?, ?, ?, ?)",
                            (first, now, sizes, data),
                        )
                    self._db.execute(
                        "UPDATE meta SET value = ? WHERE name = 'next_offset'",
                        (first + len(records),),
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise LogUnavailableError(
                    f"the embedded log {self.path} did not commit {len(records)} records: {exc}"
                ) from exc
        with self._grown:
            self._appends += 1
            self._grown.notify_all()
        return list(range(first, first + len(records)))

    def read(
        self, from_offset: int, *, max_records: int = 10_000, timeout: float = 1.0
    ) -> list[LogRecord]:
        """Committed records from ``from_offset``; waits up to ``timeout`` for one to appear."""
        if from_offset < 0:
            raise ValueError(f"from_offset must be >= 0, got {from_offset}")
        deadline = time.monotonic() + timeout
        pause = _FIRST_POLL_S
        checked_end = False
        while True:
            appends = self._appends  # read before the query: a commit after it wakes us
            with self._lock:
                rows = list(itertools.islice(records_from(self._db, from_offset), max_records))
                if not rows and not checked_end:
                    # Records found mean the offset is within the log; none found may mean
                    # the log was replaced by a shorter one: checked once per call.
                    high = self._meta("next_offset")
                    if from_offset > high:
                        raise LogOffsetOutOfRangeError(
                            f"offset {from_offset} is beyond the end of {self} (next offset "
                            f"{high}): the log was replaced; rebuild from the start of the log"
                        )
                    checked_end = True
            if rows or time.monotonic() >= deadline:
                return [LogRecord(int(o), bytes(k), v, int(t)) for o, k, v, t in rows]
            with self._grown:
                if self._appends == appends:
                    self._grown.wait(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, _LAST_POLL_S)

    def watermarks(self, *, timeout: float = 10.0) -> tuple[int, int]:
        with self._lock:
            found = dict(self._db.execute("SELECT name, value FROM meta").fetchall())
        return int(found["log_start_offset"]), int(found["next_offset"])

    def compact(
        self,
        *,
        now_ms: int | None = None,
        min_compaction_lag_ms: int | None = None,
        delete_retention_ms: int | None = None,
    ) -> int:
        """Remove superseded records and expired tombstones, as Kafka's cleaner; return how many.

        A record is removed when a later record has the same key and it is older than the
        compaction lag; a tombstone that is the latest for its key is removed once older than
        the lag plus ``delete_retention_ms``.  The last record of the log is always kept.
        Raises :class:`~store.log.base.LogNotCompactedError` for a ``delete`` log.
        """
        now = _now_ms() if now_ms is None else now_ms
        lag = (
            self.settings.min_compaction_lag_ms
            if min_compaction_lag_ms is None
            else min_compaction_lag_ms
        )
        retention = (
            self.settings.delete_retention_ms
            if delete_retention_ms is None
            else delete_retention_ms
        )
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if not self._meta(_COMPACTED):  # read in the transaction: another opener may convert
                    raise LogNotCompactedError(
                        f"{self} has cleanup.policy=delete (it keeps no index of its records "
                        "by key, as the audit log does not): it is never compacted. To compact "
                        f"it, open it with cleanup_policy='compact' (which builds that index "
                        "over every record) and compact again"
                    )
                last = self._meta("next_offset") - 1
                cursor = self._db.execute(
                    """
                    DELETE FROM records
                    WHERE offset < :last AND timestamp_ms <= :lag_cut AND (
                        EXISTS (SELECT 1 FROM records AS later
                                WHERE later.key = records.key AND later.offset > records.offset)
                        OR (value IS NULL AND timestamp_ms <= :tombstone_cut))
                    """,
                    {"last": last, "lag_cut": now - lag, "tombstone_cut": now - lag - retention},
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return int(cursor.rowcount)

    def close(self) -> None:
        with self._lock:
            self._db.close()
