"""``python -m bench soak [--quick] [--minutes M]``: one node under steady load for a long time.

An embedded node (``aclstore serve``, a process of its own, its defaults: audit on, every
denial and a sample of the allows written to the spool and shipped to the embedded audit log
by the node's sender process) starts on a log of N synthetic bindings (1,000,000; 100,000 with
``--quick``; the ``bench downgrade`` bindings and its cached log, :func:`bench.downgrade.
prefilled_log`).  Then, each a process of its own (:mod:`bench._soak_load`):

* three decision clients, 100 requests a second each, every tenth a batch of 100 actions,
  the others single decisions, over a sample of the principals (80 % of requests from a hot
  twentieth of them) and what they were granted, 10 % of actions about any topic: the
  replica's cache answers some, not all;
* one writer, 100 changes a second through the admin API, creates and deletes in pairs.

After a warm-up (30 s; ``--quick`` 10 s), for M minutes (30; ``--quick`` 3) it prints one line
a minute: the RSS, open files (and descriptors) and threads of the node's whole process tree
(the sender is a child), the audit spool's size on disk, the decisions with the p50, p99 and
p999 of single decisions and of batches, the writes, the errors, the node's CPU per decision,
the cache hit rate and the load average.  At the end the clients and the writer stop, the
spool drains, the node stops, and the audit log is read back: every denial the clients were
answered must be in it (denials are always audited; allows are sampled, so only their counts
are printed), and the node's count of dropped events must be 0.

TARGET lines: ``soak_rss_growth`` (%, the tree's RSS growth over the last 20 minutes, or the
last 2/3 of a shorter run, <= 5), ``soak_p99_drift`` (single decisions' p99 in the last minute
÷ the first, <= 1.2), ``soak_errors`` (<= 0) and ``soak_audit_dropped`` (<= 0).

``ACLSTORE_BENCH_SOAK_BINDINGS=N`` sets the store's size (for trying the bench out); a
fractional ``--minutes`` measures that many minutes in intervals of equal length.
"""

from __future__ import annotations

import http.client
import json
import math
import multiprocessing
import os
import queue
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import psutil

from bench import _soak_load as load
from bench._soak_figures import (
    Latencies,
    Minute,
    audit_missing,
    growth_window,
    interval_of,
    p99_drift,
    rss_growth_pct,
)
from bench.downgrade import _admin_loaded, _wait_ready, prefilled_log
from bench.process import load_average
from bench.report import Target, figure, median
from bench.sidecar import _node_cpu, _Server
from replicator.server.audit import SPOOL_DIR
from store.log.embedded import EmbeddedChangeLog

CLIENTS: Final = 3
CLIENT_RATE: Final = 100.0
"""Requests a second per client (every tenth a batch)."""
WRITE_RATE: Final = 100.0
ASKED_PRINCIPALS: Final = 10_000
DRAIN_S: Final = 300.0


@dataclass(slots=True)
class _Tally:
    """What the clients and the writer reported, filed by interval (0: before the first)."""

    start: float
    interval_s: float
    singles: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    batches: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    decisions: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    writes: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    errors: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    messages: list[str] = field(default_factory=list)
    denied: int = 0
    answered: int = 0
    ended: set[str] = field(default_factory=set)

    def interval(self, at: float) -> int:
        return interval_of(at, self.start, self.interval_s)

    def add(self, report: load.Report) -> None:
        for s in report.samples:
            k = self.interval(s.at)
            if s.decisions == 0:
                self.writes[k] += 1
                continue
            (self.batches if s.decisions > 1 else self.singles)[k].append(s.ms)
            self.decisions[k] += s.decisions
            self.answered += s.decisions
            self.denied += s.denied
        for f in report.failures:
            self.errors[self.interval(f.at)] += 1
            if len(self.messages) < 20:
                self.messages.append(f"{report.source}: {f.what}")
        if report.last:
            self.ended.add(report.source)

    def drain(self, reports: Any, until: float) -> None:
        while (left := until - time.time()) > 0:
            try:
                self.add(reports.get(timeout=min(left, 0.5)))
            except queue.Empty:
                continue


@dataclass(frozen=True, slots=True)
class _Tree:
    rss: int
    open_files: int
    fds: int
    threads: int
    cpu_s: float


def _tree(node: psutil.Process) -> _Tree:
    """The node's process tree now: summed over the node and every process below it."""
    rss = files = fds = threads = 0
    for p in (node, *node.children(recursive=True)):
        try:
            with p.oneshot():
                rss += p.memory_info().rss
                fds += p.num_fds()
                threads += p.num_threads()
            files += len(p.open_files())
        except psutil.NoSuchProcess:
            continue
    return _Tree(rss, files, fds, threads, _node_cpu(node))


def _paced(seconds: float) -> int:
    """Decisions the clients ask in ``seconds`` when they keep their pace."""
    per_request = (9 * 1 + load.BATCH) / 10
    return round(CLIENTS * CLIENT_RATE * seconds * per_request)


def _count(label: str, value: int, note: str = "") -> None:
    print(f"  {label}: {value:,}" + (f" ({note})" if note else ""), flush=True)


def _dir_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _metrics(port: int) -> dict[str, float]:
    """The node's ``/metrics`` samples without labels, by name."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#") and "{" not in parts[0]:
            out[parts[0]] = float(parts[1])
    return out


def _hits(m: dict[str, float]) -> tuple[float, float]:
    return m.get("aclstore_replica_cache_hits_total", 0.0), m.get("aclstore_replica_cache_misses_total", 0.0)


@dataclass(frozen=True, slots=True)
class _AuditLog:
    records: int
    events: int
    """Distinct event ids (delivery is at least once: a resent event has the same id)."""
    denied: int
    allowed: int


def _read_audit_log(folder: Path) -> _AuditLog:
    """Every event in the embedded audit log, counted by result (once per id)."""
    log = EmbeddedChangeLog(folder)
    seen: set[bytes] = set()
    records = denied = allowed = 0
    try:
        offset, end = log.watermarks()
        while offset < end:
            batch = log.read(offset, max_records=10_000, timeout=0)
            if not batch:
                raise RuntimeError(f"the audit log {folder} ended at {offset}, before its end {end}")
            for record in batch:
                records += 1
                if record.key in seen:
                    continue
                seen.add(record.key)
                result = json.loads(record.value or b"null")["data"]["result"]
                denied += result == "DENIED"
                allowed += result == "ALLOWED"
            offset = batch[-1].offset + 1
    finally:
        log.close()
    return _AuditLog(records, len(seen), denied, allowed)


def run(quick: bool, minutes: float | None = None) -> list[Target]:
    size = int(os.environ.get("ACLSTORE_BENCH_SOAK_BINDINGS") or (100_000 if quick else 1_000_000))
    span = minutes if minutes is not None else (3.0 if quick else 30.0)
    if span <= 0 or size < 1000:
        raise ValueError(f"a soak needs minutes > 0 and at least 1000 bindings, got {span} and {size}")
    tmp = Path(tempfile.mkdtemp(prefix="aclstore-bench-soak-"))
    try:
        return _run(size, span, 10.0 if quick else 30.0, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(size: int, span: float, warmup_s: float, tmp: Path) -> list[Target]:
    intervals = max(1, math.ceil(span))
    interval_s = span * 60 / intervals
    started = time.perf_counter()
    data_dir = tmp / "node"
    bindings, last = prefilled_log(size, data_dir / "log")
    _count("bindings", len(bindings), f"log of {last + 1:,} records, {time.perf_counter() - started:.1f} s")
    table = load.grants(bindings, ASKED_PRINCIPALS, seed=17)
    teams = max(10, size // 200)
    del bindings
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    reports: Any = context.Queue()
    processes: list[Any] = []
    server = _Server(data_dir)
    try:
        figure("node ready after", _wait_ready(server.port, 3600), "s")
        where = ["--store", server.url, "--command-config", str(data_dir / "admin.properties")]
        figure("the admin's first read of the log", _admin_loaded(where), "s")
        processes = [
            context.Process(
                target=load.ask,
                args=(f"client{i}", server.port, table, teams, 100 + i, CLIENT_RATE, stop, reports),
            )
            for i in range(CLIENTS)
        ]
        writer_args = (server.port, server.token, table, WRITE_RATE, stop, reports)
        processes.append(context.Process(target=load.write, args=writer_args))
        for process in processes:
            process.start()
        print(f"load average at start: {load_average()}; {CLIENTS} clients at {CLIENT_RATE:g} "
              f"requests/s (every tenth a batch of {load.BATCH}), {WRITE_RATE:g} changes/s; a warm-up "
              f"of {warmup_s:g} s, then {intervals} intervals of {interval_s:g} s; at full pace "
              f"{_paced(interval_s):,} decisions an interval", flush=True)  # fmt: skip
        tally = _Tally(time.time() + warmup_s, interval_s)
        tally.drain(reports, tally.start)
        watch = _Watch(psutil.Process(server.process.pid), server.port, data_dir / SPOOL_DIR)
        lines = [watch.minute(k, tally, reports) for k in range(1, intervals + 1)]
        stop.set()
        deadline = time.time() + 60
        while len(tally.ended) < len(processes) and time.time() < deadline:
            tally.drain(reports, time.time() + 0.5)
        for process in processes:
            process.join(10)
        decided = sum(line.decisions for line in lines)
        cpu = sum(line.node_cpu_s for line in lines)
        figure("node CPU per decision (the measured minutes; writes and audit included)",
               cpu / decided * 1e6 if decided else math.nan, "us")  # fmt: skip
        end = _drained(server.port)
    finally:
        stop.set()
        for process in processes:
            if process.is_alive():
                process.terminate()
        server.stop()
    print(f"load average at the end: {load_average()}", flush=True)
    for message in tally.messages:
        print(f"  error: {message}", flush=True)
    errors = sum(tally.errors.values()) + sum(1 for p in processes if p.exitcode != 0)
    missing = _audit_check(tally, end, _read_audit_log(data_dir / "audit"))
    window = growth_window(len(lines))
    print(f"  RSS growth over the last {window} intervals: {watch.rss[-window - 1] / 1e6:.1f} MB "
          f"to {watch.rss[-1] / 1e6:.1f} MB", flush=True)  # fmt: skip
    p99s = sorted(line.singles.p99 for line in lines)
    print(f"  single decisions' p99 over the intervals: min {p99s[0]:.2f}, median {median(p99s):.2f}, "
          f"max {p99s[-1]:.2f} ms", flush=True)  # fmt: skip
    return [
        Target("soak_rss_growth", rss_growth_pct(watch.rss), "%", 5.0, higher_is_better=False),
        Target("soak_p99_drift", p99_drift(lines), "ratio", 1.2, higher_is_better=False),
        Target("soak_errors", errors, "errors", 0, higher_is_better=False),
        Target("soak_audit_dropped", missing, "events", 0, higher_is_better=False),
    ]


class _Watch:
    """The node's figures, read at the end of each interval, and the RSS at each end."""

    def __init__(self, node: psutil.Process, port: int, spool_dir: Path) -> None:
        self.node, self.port, self.spool_dir = node, port, spool_dir
        tree = _tree(node)
        self.rss = [tree.rss]
        self.cpu_s = tree.cpu_s
        self.hits = _hits(_metrics(port))

    def minute(self, k: int, tally: _Tally, reports: Any) -> Minute:
        """Interval ``k``'s line, printed once it ended and its requests were reported."""
        tally.drain(reports, tally.start + k * tally.interval_s)
        tree, m = _tree(self.node), _metrics(self.port)
        spool = _dir_bytes(self.spool_dir)
        tally.drain(reports, time.time() + 1.5)  # the reports of requests sent before the end
        hits = _hits(m)
        looked_up = hits[0] - self.hits[0] + hits[1] - self.hits[1]
        line = Minute(
            number=k, rss_bytes=tree.rss, open_files=tree.open_files, fds=tree.fds,
            threads=tree.threads, spool_bytes=spool, backlog=int(m["aclstore_audit_buffered_events"]),
            decisions=tally.decisions[k], singles=Latencies.of(tally.singles[k]),
            batches=Latencies.of(tally.batches[k]), writes=tally.writes[k], errors=tally.errors[k],
            node_cpu_s=tree.cpu_s - self.cpu_s,
            cache_hit_rate=(hits[0] - self.hits[0]) / looked_up if looked_up else 0.0,
            load=load_average(),
        )  # fmt: skip
        print(line.line(), flush=True)
        self.rss.append(tree.rss)
        self.cpu_s, self.hits = tree.cpu_s, hits
        return line


def _drained(port: int) -> dict[str, float]:
    """The node's metrics once its spool has no backlog (or after :data:`DRAIN_S`)."""
    deadline = time.monotonic() + DRAIN_S
    while (m := _metrics(port))["aclstore_audit_buffered_events"] and time.monotonic() < deadline:
        time.sleep(0.5)
    return m


def _audit_check(tally: _Tally, m: dict[str, float], audit: _AuditLog) -> int:
    """Print what the clients were answered against what the node counted and the audit log
    holds; the events lost."""
    _count("decisions answered (warm-up and the end included)", tally.answered)
    _count("  of which DENIED (each audited)", tally.denied)
    for label, name in (
        ("events written to the spool and not shipped at the end", "aclstore_audit_buffered_events"),
        ("events the node counted as dropped", "aclstore_audit_dropped_events_total"),
        ("events the sink acknowledged (the node's count)", "aclstore_audit_sent_events_total"),
        ("spool lines unreadable", "aclstore_audit_spool_corrupt_lines_total"),
        ("sender restarts", "aclstore_audit_sender_restarts_total"),
    ):
        _count(f"audit: {label}", int(m[name]))
    _count("audit log: records", audit.records, f"{audit.events:,} distinct ids")
    _count("audit log: DENIED events", audit.denied, f"the clients were answered {tally.denied:,}")
    allowed = tally.answered - tally.denied
    _count("audit log: ALLOWED events", audit.allowed,
           f"of {allowed:,} allowed: the 1 % sample and each binding's first use")  # fmt: skip
    unshipped = m["aclstore_audit_dropped_events_total"] + m["aclstore_audit_buffered_events"]
    return audit_missing(denials_answered=tally.denied, denials_logged=audit.denied, unshipped=int(unshipped))
