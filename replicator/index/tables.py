"""The RocksDB database of an index and its two column families, opened.

``acl`` holds the bindings in the three tables of :mod:`replicator.encoding`, with a bloom
filter for the point lookups by log key (deletes and bootstrap); ``meta`` holds the index's
own state (:mod:`replicator.index.meta`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocksdict import AccessType, BlockBasedOptions, ColumnFamily, Options, Rdict, ReadOptions

from replicator.errors import IndexCorruptError, IndexOpenError

_ACL_CF = "acl"
_META_CF = "meta"
REBUILD_HINT = "rebuild it from the log with `aclstore serve --rebuild-index`, which deletes it first"


@dataclass(frozen=True, slots=True)
class Tables:
    """The open column families: ``acl`` (for reads and its handle for writes) and ``meta``."""

    acl: Rdict
    acl_cf: ColumnFamily
    meta: Rdict
    meta_cf: ColumnFamily


ACL_WRITE_BUFFER_BYTES: Final = 16 << 20
META_WRITE_BUFFER_BYTES: Final = 4 << 20
WRITE_BUFFERS_BYTES: Final = 32 << 20
"""The memtables of the index, all column families together, at most (RocksDB's
``db_write_buffer_size``; each column family's memtable is written out at its own size
above).  A decision worker's secondary instance replays the node's log of writes into
memtables of its own, which it drops when the node writes them out: so each process that
reads the index holds about as much.  With RocksDB's default (64 MiB a column family,
written out only when full) the node and each worker grew by about 6 MB a minute under the
soak's 100 changes a second, for up to 64 MiB a column family before the first was written
out: ten to twenty minutes of steady growth at that rate."""


WRITE_BUFFERS_PER_FAMILY: Final = 2
"""Memtables a column family holds at most (one filling, one being written out; RocksDB's
default, set explicitly because :data:`UNFLUSHED_BOUND_BYTES` relies on it)."""

UNFLUSHED_BOUND_BYTES: Final = WRITE_BUFFERS_PER_FAMILY * (
    2 * ACL_WRITE_BUFFER_BYTES + META_WRITE_BUFFER_BYTES
)
"""The most the memtables of an index's three column families (default, ``acl`` at the acl
size, ``meta``) can hold not yet written out as table files."""


def _options(*, secondary: bool = False, write_buffer: int = ACL_WRITE_BUFFER_BYTES) -> Options:
    opts = Options(raw_mode=True)
    opts.set_write_buffer_size(write_buffer)
    opts.set_db_write_buffer_size(WRITE_BUFFERS_BYTES)
    opts.set_max_write_buffer_number(WRITE_BUFFERS_PER_FAMILY)
    if not secondary:
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
    else:
        opts.set_max_open_files(-1)  # RocksDB's requirement for a secondary instance
        # With every file open, each catch-up loads the new version's table handlers with this
        # many threads per column family, started and joined every time (16 by default: about
        # 2 ms a catch-up even when nothing changed, which a decision worker pays per write).
        opts.set_max_file_opening_threads(1)
    table = BlockBasedOptions()
    table.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(table)
    return opts


def open_tables(path: Path) -> tuple[Rdict, Tables]:
    """Open (or create) the database in ``path``; :class:`IndexOpenError` names the fix."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        db = Rdict(
            str(path),
            options=_options(),
            column_families={_ACL_CF: _options(), _META_CF: _options(write_buffer=META_WRITE_BUFFER_BYTES)},
        )
    except Exception as exc:  # rocksdict raises plain Exception with RocksDB's status text
        raise IndexOpenError(
            f"cannot open the RocksDB index in {path}: {exc}. If another replica process uses "
            f"this directory stop it; if the directory is damaged, {REBUILD_HINT}"
        ) from exc
    return db, _tables(db)


def open_secondary(path: Path, secondary_path: Path) -> tuple[Rdict, Tables]:
    """A RocksDB secondary instance of the index in ``path`` (its own files in
    ``secondary_path``): a read-only follower that sees the primary's writes when it calls
    ``try_catch_up_with_primary()``, and nothing in between, so every iterator over it reads
    the same state.  What a process reads the index with while the node writes it."""
    secondary_path.mkdir(parents=True, exist_ok=True)
    try:
        db = Rdict(
            str(path),
            options=_options(secondary=True),
            column_families={
                _ACL_CF: _options(secondary=True),
                _META_CF: _options(secondary=True, write_buffer=META_WRITE_BUFFER_BYTES),
            },
            access_type=AccessType.secondary(str(secondary_path)),
        )
    except Exception as exc:  # rocksdict raises plain Exception with RocksDB's status text
        raise IndexOpenError(
            f"cannot open the RocksDB index in {path} as a secondary instance: {exc}"
        ) from exc
    return db, _tables(db)


def _tables(db: Rdict) -> Tables:
    tables = Tables(
        acl=db.get_column_family(_ACL_CF),
        acl_cf=db.get_column_family_handle(_ACL_CF),
        meta=db.get_column_family(_META_CF),
        meta_cf=db.get_column_family_handle(_META_CF),
    )
    return tables


def verify_tables(db: Rdict, tables: Tables, path: Path) -> int:
    """Read every entry of every column family with RocksDB's block checksums checked, and
    return how many there are; a damaged file raises :class:`IndexCorruptError`.

    RocksDB checks a table file's size and footer when it opens the database, but a block
    whose bytes were overwritten is only found when it is read, and its iterator then just
    stops (``valid()`` is false) with the corruption in ``status()``: without this walk a
    replica would answer as if the bindings in that block did not exist.  Run once at open;
    it reads the whole index (its cost grows with the index, as a bootstrap's does).
    """
    read = ReadOptions()
    read.set_verify_checksums(True)
    read.set_readahead_size(4 << 20)
    entries = 0
    for name, family in (("default", db), (_ACL_CF, tables.acl), (_META_CF, tables.meta)):
        iterator = family.iter(read)
        try:
            iterator.seek_to_first()
            while iterator.valid():
                entries += 1
                iterator.next()
            iterator.status()
        except Exception as exc:  # rocksdict raises plain Exception with RocksDB's status text
            raise IndexCorruptError(
                f"the RocksDB index in {path} is damaged (column family {name!r}: {exc}) and "
                f"cannot be served from: {REBUILD_HINT}",
                path=str(path),
            ) from exc
        finally:
            del iterator
    return entries
