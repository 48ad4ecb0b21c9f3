"""Decision workers' Prometheus figures, summed into the node's ``/metrics``.

Each worker counts its own decisions, latencies, answers, cache lookups and audit events in a
registry of its own, and writes a snapshot of it to a file beside the node's published state
every second (and when it stops).  The node's scrape reads the snapshots and adds them to its
own figures sample by sample: counters and histograms add up, and so do the gauges a worker
exports (cache entries, spooled events and bytes), except ``aclstore_audit_sink_up``, which is
1 only when every sender's sink is up.  Each worker's applied offset is exported apart, with a
``worker`` label, so a worker that falls behind shows.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

_LOWEST: Final = frozenset({"aclstore_audit_sink_up"})
"""Gauges whose sum means nothing: the node exports the lowest value."""
STALE_AFTER_S: Final = 10.0
"""A snapshot older than this belongs to a worker that stopped: it is left out."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One worker's figures at one time."""

    worker: int
    pid: int
    applied_offset: int
    written_at: float
    families: list[dict[str, Any]]
    storage_problem: str | None = None
    """Why the worker cannot write its audit spool, if it cannot."""


def snapshot_of(
    registry: CollectorRegistry, *, worker: int, applied_offset: int, storage_problem: str | None = None
) -> Snapshot:
    """The registry's samples, without the ``_created`` timestamps (which do not add up)."""
    families = [
        {
            "name": family.name,
            "type": family.type,
            "doc": family.documentation,
            "samples": [
                [s.name, s.labels, s.value] for s in family.samples if not s.name.endswith("_created")
            ],
        }
        for family in registry.collect()
    ]
    return Snapshot(worker, os.getpid(), applied_offset, time.time(), families, storage_problem)


def write_snapshot(path: Path, snapshot: Snapshot) -> None:
    """Replace ``path`` with ``snapshot`` in one rename (a reader never sees half of it)."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({
        "worker": snapshot.worker, "pid": snapshot.pid, "appliedOffset": snapshot.applied_offset,
        "writtenAt": snapshot.written_at, "families": snapshot.families,
        "storageProblem": snapshot.storage_problem,
    }), encoding="utf-8")  # fmt: skip
    os.replace(temporary, path)


def read_snapshots(paths: Iterable[Path], *, now: float | None = None) -> list[Snapshot]:
    """The fresh snapshots among ``paths`` (missing, unreadable or stale ones left out)."""
    now = time.time() if now is None else now
    found = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if now - float(data["writtenAt"]) > STALE_AFTER_S:
            continue
        found.append(Snapshot(
            int(data["worker"]), int(data["pid"]), int(data["appliedOffset"]),
            float(data["writtenAt"]), list(data["families"]), data.get("storageProblem"),
        ))  # fmt: skip
    return found


def merged(own: Iterable[Metric], snapshots: Sequence[Snapshot]) -> Iterator[Metric]:
    """``own`` families with every snapshot's samples added (or the lowest taken, for
    :data:`_LOWEST`), then one gauge of each worker's applied offset."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}

    def add(name: str, typ: str, doc: str, samples: Iterable[tuple[str, dict[str, str], float]]) -> None:
        if name not in families:
            families[name] = Metric(name, doc, typ)
            values[name] = {}
        table = values[name]
        for sample_name, labels, value in samples:
            key = (sample_name, tuple(sorted(labels.items())))
            if key not in table:
                table[key] = value
            elif name in _LOWEST:
                table[key] = min(table[key], value)
            else:
                table[key] += value

    for family in own:
        kept = [(s.name, s.labels, s.value) for s in family.samples if not s.name.endswith("_created")]
        add(family.name, family.type, family.documentation, kept)
    for snapshot in snapshots:
        for listed in snapshot.families:
            samples = [(str(n), dict(labels), float(v)) for n, labels, v in listed["samples"]]
            add(listed["name"], listed["type"], listed["doc"], samples)
    for name, family in families.items():
        for (sample_name, labels), value in values[name].items():
            family.add_sample(sample_name, dict(labels), value)
        yield family
    offsets = GaugeMetricFamily(
        "aclstore_decision_worker_applied_offset",
        "Log offset each decision worker answers from (it catches up with the replica's)",
        labels=["worker"],
    )
    for snapshot in sorted(snapshots, key=lambda s: s.worker):
        offsets.add_metric([str(snapshot.worker)], snapshot.applied_offset)
    yield offsets
    yield GaugeMetricFamily(
        "aclstore_decision_workers", "Decision workers that reported in the last 10 s",
        value=len(snapshots),
    )


class MergedRegistry(CollectorRegistry):
    """The node's registry plus its workers' snapshots in ``paths()``: what ``/metrics`` renders."""

    def __init__(self, own: CollectorRegistry, paths: Callable[[], Iterable[Path]]) -> None:
        super().__init__(auto_describe=False)
        self._own = own
        self._paths = paths

    def collect(self) -> Iterator[Metric]:
        return merged(self._own.collect(), read_snapshots(self._paths()))
