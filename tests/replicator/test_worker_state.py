"""The state a node publishes to its decision workers, read by other processes while it is
written: a reader sees one whole publication or another, never a mix (with ``pack_into``
writing in place, readers saw records of zeros: a node "not ready" for one decision)."""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from replicator.server.workers.state import READY, PublishedState, SharedState

pytestmark = pytest.mark.unit


def _read_many(path: Path, reads: int, out: Any) -> None:
    state = SharedState.open(path)
    torn = []
    for _ in range(reads):
        seen = state.read()
        # Every publication is ready, with ready offset 7 and a log end one past its offset.
        if not seen.ready or seen.ready_offset != 7 or seen.log_end_offset != seen.offset + 1:
            torn.append(seen)
    out.put((len(torn), torn[:3]))


def test_readers_in_other_processes_never_see_half_a_publication(tmp_path: Path) -> None:
    path = tmp_path / "replica.state"
    writer = SharedState.create(path)
    writer.publish(PublishedState(0, 7, -1, 1, READY, time.monotonic()))
    out: Any = multiprocessing.get_context("spawn").Queue()
    readers = [
        multiprocessing.get_context("spawn").Process(target=_read_many, args=(path, 200_000, out))
        for _ in range(2)
    ]
    for reader in readers:
        reader.start()
    published = 0
    while any(r.is_alive() for r in readers) and published < 5_000_000:
        published += 1
        writer.publish(replace(writer.last, offset=published, log_end_offset=published + 1))
    results = [out.get(timeout=60) for _ in readers]
    for reader in readers:
        reader.join(timeout=10)
    assert published > 1_000, "the writer hardly ran while the readers read"
    assert results == [(0, []), (0, [])]
    writer.close()
