"""An embedded log as an earlier version of aclstore left it, made with SQL alone.

Up to the cleanup policies, every embedded log had one table row per record and an index of
them by key (``records_by_key``), and no policy in ``meta``: the tables below are that
version's, written out here so that a test does not make them through the code it tests.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

EARLIER_SCHEMA = """
CREATE TABLE records (
    offset INTEGER PRIMARY KEY,
    key BLOB NOT NULL,
    value BLOB,
    timestamp_ms INTEGER NOT NULL
);
CREATE INDEX records_by_key ON records (key, offset);
CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO meta (name, value) VALUES ('next_offset', 0), ('log_start_offset', 0);
"""


def earlier_embedded_log(data_dir: Path, records: Sequence[tuple[bytes, bytes | None, int]]) -> Path:
    """``<data_dir>/changelog.sqlite3`` holding ``records`` (key, value, timestamp) at offsets
    0, 1, 2...; its path."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "changelog.sqlite3"
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(EARLIER_SCHEMA)
        db.executemany(
            "INSERT INTO records (offset, key, value, timestamp_ms) VALUES (?, ?, ?, ?)",
            [(i, k, v, t) for i, (k, v, t) in enumerate(records)],
        )
        db.execute("UPDATE meta SET value = ? WHERE name = 'next_offset'", (len(records),))
        db.commit()
    finally:
        db.close()
    return path


def indexes(path: Path) -> set[str]:
    """The names of the indexes the SQLite file at ``path`` holds."""
    db = sqlite3.connect(path)
    try:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
                if not row[0].startswith("sqlite_autoindex")}  # fmt: skip
    finally:
        db.close()


def row_counts(path: Path) -> tuple[int, int]:
    """(rows of ``records``, rows of ``record_batches``) in the SQLite file at ``path``."""
    db = sqlite3.connect(path)
    try:
        records = db.execute("SELECT count(*) FROM records").fetchone()[0]
        batches = db.execute("SELECT count(*) FROM record_batches").fetchone()[0]
        return int(records), int(batches)
    finally:
        db.close()
