"""A node's replica refuses to resume from an index older than the log keeps deletes for."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator.replica import ReplicaSettings
from replicator.server.node import _resume_age_bound
from store.log import EmbeddedChangeLog
from store.log.embedded import EmbeddedLogSettings

pytestmark = pytest.mark.unit


def test_default_bound_is_compaction_lag_plus_tombstone_retention(tmp_path: Path) -> None:
    settings = EmbeddedLogSettings(min_compaction_lag_ms=5_000, delete_retention_ms=700)
    log = EmbeddedChangeLog(tmp_path / "log", settings)
    try:
        assert _resume_age_bound(ReplicaSettings(), log) == 5_700
        assert _resume_age_bound(ReplicaSettings(max_resume_age_ms=10), log) == 10
    finally:
        log.close()
