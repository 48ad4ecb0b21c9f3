"""Fixtures of the command-line tests.

The commands drive real nodes and logs, with the helpers the replica's tests use
(``tests/replicator/sidecar_support.py`` and ``replica_support.py``): that folder is put on the
import path here, so these tests also run on their own (``pytest tests/cli``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replicator"))

from sidecar_support import start_node

from replicator.server.node import Node


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    """A node on the embedded log, stopped after the test."""
    n = start_node(tmp_path / "node")
    yield n
    n.stop()
