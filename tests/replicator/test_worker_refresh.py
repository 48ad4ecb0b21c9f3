"""A decision worker's refresh catches up even when nothing new was published, so that its
secondary instance lets go of the table files the node's compactions replaced.

The files part is RocksDB's own behaviour (a real primary and secondary in one directory);
the policy that relies on it is :func:`replicator.server.workers.process.catch_up_due`.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from replicator.index import AclIndex
from replicator.index.follower import FollowerIndex
from replicator.server.workers.process import IDLE_CATCH_UP_S, catch_up_due
from store.acl import AclBinding
from tests.replicator.test_index import commit_random_changes

pytestmark = pytest.mark.unit


def deleted_files_open(under: Path) -> int:
    """Descriptors of this process on files under ``under`` that were deleted."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since the listing
            continue
        if target.startswith(str(under)) and target.endswith(" (deleted)"):
            count += 1
    return count


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_catch_up_with_nothing_new_lets_go_of_files_a_compaction_replaced(tmp_path: Path) -> None:
    index = AclIndex(tmp_path / "index", reader_version=3)
    follower: FollowerIndex | None = None
    try:
        rng, live, offset = random.Random(5), dict[bytes, AclBinding](), -1
        for _ in range(3):  # three table files a column family, as a bulk load leaves them
            for _ in range(200):
                offset += 1
                commit_random_changes(index, rng, live, offset)
            for family in (index._db, index.tables.acl, index.tables.meta):
                family.flush()
        follower = FollowerIndex(tmp_path / "index", tmp_path / "secondary", cache_size=16)
        assert follower.catch_up().offset == offset
        assert deleted_files_open(tmp_path / "index") == 0
        for family in (index._db, index.tables.acl, index.tables.meta):
            family.compact_range(None, None)  # what runs on after a bulk load's last write
        held = deleted_files_open(tmp_path / "index")
        assert held > 0, "the follower should still hold the replaced files open"
        assert follower.catch_up().offset == offset  # nothing new to apply
        assert deleted_files_open(tmp_path / "index") == 0
    finally:
        if follower is not None:
            follower.close()
        index.close()


def test_a_refresh_catches_up_when_behind_or_idle_long_enough() -> None:
    assert catch_up_due(applied=4, published=5, idle_s=0.0)
    assert not catch_up_due(applied=5, published=5, idle_s=IDLE_CATCH_UP_S - 0.01)
    assert catch_up_due(applied=5, published=5, idle_s=IDLE_CATCH_UP_S)
    assert not catch_up_due(applied=6, published=5, idle_s=0.5)  # ahead of a stale read
