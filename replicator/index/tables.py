"""The RocksDB database of an index and its two column families, opened.

``acl`` holds the bindings in the three tables of :mod:`replicator.encoding`, with a bloom
filter for the point lookups by log key (deletes and bootstrap); ``meta`` holds the index's
own state (:mod:`replicator.index.meta`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rocksdict import BlockBasedOptions, ColumnFamily, Options, Rdict

from replicator.errors import IndexOpenError

_ACL_CF = "acl"
_META_CF = "meta"


@dataclass(frozen=True, slots=True)
class Tables:
    """The open column families: ``acl`` (for reads and its handle for writes) and ``meta``."""

    acl: Rdict
    acl_cf: ColumnFamily
    meta: Rdict
    meta_cf: ColumnFamily


def open_tables(path: Path) -> tuple[Rdict, Tables]:
    """Open (or create) the database in ``path``; :class:`IndexOpenError` names the fix."""

    def options() -> Options:
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)
        opts.set_block_based_table_factory(table)
        return opts

    path.mkdir(parents=True, exist_ok=True)
    try:
        db = Rdict(
            str(path),
            options=options(),
            column_families={_ACL_CF: options(), _META_CF: options()},
        )
    except Exception as exc:  # rocksdict raises plain Exception with RocksDB's status text
        raise IndexOpenError(
            f"cannot open the RocksDB index in {path}: {exc}. If another replica process uses "
            "this directory stop it; if the directory is damaged delete it so the replica "
            "rebuilds from the compacted log"
        ) from exc
    tables = Tables(
        acl=db.get_column_family(_ACL_CF),
        acl_cf=db.get_column_family_handle(_ACL_CF),
        meta=db.get_column_family(_META_CF),
        meta_cf=db.get_column_family_handle(_META_CF),
    )
    return db, tables
