"""The index's memtables, the node's and a decision worker's, stay within a bound while writes
keep coming: a process that reads the index does not grow for as long as RocksDB waits to
write a memtable out."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator.index import AclIndex
from replicator.index.follower import FollowerIndex
from replicator.index.tables import ACL_WRITE_BUFFER_BYTES, META_WRITE_BUFFER_BYTES
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from tests.replicator.test_index import log_key

pytestmark = pytest.mark.unit

BOUND = 48 << 20
"""Two memtables of each column family (the one written and the one being written out, past
which RocksDB stalls writes), a batch over, with room to spare: 40 MiB and 3 MiB."""


def _memtables(family_of: object) -> int:
    tables = family_of.tables  # type: ignore[attr-defined]
    return sum(
        family.property_int_value("rocksdb.cur-size-all-mem-tables") or 0
        for family in (tables.acl, tables.meta)
    )


def test_memtables_stay_bounded_in_the_writer_and_in_a_follower(tmp_path: Path) -> None:
    """About 100 MB of bindings (names of a kilobyte, each binding written to three tables)
    in commits of 500: with RocksDB's defaults (64 MiB a column family) the writer's memtables
    held more than the bound before the first was written out."""
    assert 2 * (ACL_WRITE_BUFFER_BYTES + META_WRITE_BUFFER_BYTES) + (3 << 20) < BOUND
    index = AclIndex(tmp_path / "index", reader_version=3, cache_size=0)
    follower = FollowerIndex(tmp_path / "index", tmp_path / "secondary", cache_size=0)
    try:
        writer_peak = follower_peak = 0
        for commit in range(60):
            batch = index.batch()
            for i in range(500):
                binding = AclBinding.of(
                    ResourceType.TOPIC, f"{commit}-{i}-" + "n" * 1000, PatternType.LITERAL,
                    "User:a", "*", AclOperation.READ, AclPermissionType.ALLOW,
                )  # fmt: skip
                batch.create(log_key(binding), binding)
            batch.commit(offset=commit, timestamp_ms=commit)
            follower.catch_up()
            writer_peak = max(writer_peak, _memtables(index))
            follower_peak = max(follower_peak, _memtables(follower))
        assert follower.counters.bindings == 30_000
        assert writer_peak <= BOUND, writer_peak
        assert follower_peak <= BOUND, follower_peak
    finally:
        follower.close()
        index.close()
