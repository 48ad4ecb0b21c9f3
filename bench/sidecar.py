"""Sidecar authorize over HTTP on loopback: latency of single decisions, decisions/s in batches,
with and without concurrent ACL changes, and at a million bindings with a cold cache.

``python -m bench sidecar [--quick]``.  Each node is ``aclstore serve`` on the embedded default
in a child process with its defaults (audit on: denials always, 1% of allows; a replica cache
of 65,536 resources).  The node is NOT pinned to a core unless ``ACLSTORE_BENCH_PIN=1`` (on a
shared machine a pinned node competes with whatever else runs on its CPU); decisions/s are
divided by the node's measured CPU use when it exceeds one core, so the figures are "on one
core" either way.  Nodes are loaded with generated bindings (literal, ``*`` and prefixed
patterns, several principals, 5 % DENY) through the admin API, then asked from this process
over one keep-alive HTTP/1.1 connection, with request bodies encoded beforehand.

Two nodes, in this order:

1. **Warm**: 20,000 bindings (``--quick``: 2,000), requests about resources the principals have
   ACLs for (most fit the cache).  Single-decision p50/p99 (ms, one action per request, one
   request at a time); decisions/s with batches of 1, 10 and 100 actions; then batches of 100
   without writes and, right after, while a separate process applies 100 changes/s through
   the admin API (creates and deletes of literal and prefixed topic ACLs of the same
   principals, each acknowledged by the log).  The cache hit rate of each phase is read from
   the node's ``/metrics``.
2. **Cold**: 1,000,000 bindings (``--quick``: 100,000), single decisions about names spread
   over every granted topic, so that the cache cannot hold them; the hit rate is reported.

TARGET lines: ``single_p99`` (ms, <= 2) and ``decisions_batch100`` (decisions/s, >= 50000) on
the warm node; ``batch100_under_writes`` (decisions/s with 100 changes/s applied ÷ the same
without, >= 0.8; the same ratio per node CPU-second is printed beside it); ``cold_p99`` (ms,
single decisions at the cold node, <= 2).
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from bench.report import Target, figure, percentile

PRINCIPALS = [f"User:svc-{i}" for i in range(20)]
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def _pin(pid: int, cpu: int) -> int | None:
    """Pin ``pid`` to one CPU if the machine has it; return the CPU or None."""
    try:
        available = sorted(os.sched_getaffinity(0))
        chosen = available[cpu % len(available)]
        os.sched_setaffinity(pid, {chosen})
        return chosen
    except (AttributeError, OSError):
        return None


class _Server:
    def __init__(self, data_dir: Path, extra_args: Sequence[str] = (), *, wait: bool = True) -> None:
        """``aclstore serve`` on ``data_dir``; ``extra_args`` are more ``serve`` options.  With
        ``wait`` (the default) the node is serving on return; else call :meth:`wait_serving`."""
        aclstore = Path(sys.executable).with_name("aclstore")
        self.data_dir = data_dir
        # The banner on stdout; the node's log lines in a file beside its data directory.
        with (data_dir.parent / "serve.log").open("w") as log:
            self.process = subprocess.Popen(
                [
                    str(aclstore), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir),
                    *extra_args,
                ],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        # Pinning is optional: on a shared machine, a pinned node competes with whatever else
        # runs on that CPU.  The node's CPU time is measured either way ("on one core").
        self.cpu = _pin(self.process.pid, 0) if os.environ.get("ACLSTORE_BENCH_PIN") else None
        if wait:
            self.wait_serving()

    def wait_serving(self) -> None:
        """Read the node's banner: its URL and admin token."""
        assert self.process.stdout is not None
        banner = [self.process.stdout.readline() for _ in range(6)]
        if " serving " not in banner[0]:
            self.stop()
            logged = (self.data_dir.parent / "serve.log").read_text()
            raise RuntimeError("aclstore serve did not start:\n" + "".join(banner) + logged)
        self.url = banner[0].split(" serving ")[1].strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        token_file = self.data_dir / "admin.properties"
        self.token = next(
            line.split("=", 1)[1].strip()
            for line in token_file.read_text().splitlines()
            if line.startswith("aclstore.bearer.token=")
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


class _Client:
    def __init__(self, port: int, token: str | None = None) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def post(self, path: str, body: bytes) -> bytes:
        self.conn.request("POST", path, body=body, headers=self.headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}: {data[:300]!r}")
        return data


def _bindings(count: int, rng: random.Random) -> list[dict[str, str]]:
    """``count`` bindings: literal topics (~1.5 per topic), prefixed team patterns (200
    prefixes), a few groups, and three wildcard ``*`` bindings, 5% of them DENY."""
    out: list[dict[str, str]] = [
        {"resourceType": "TOPIC", "resourceName": "*", "patternType": "LITERAL", "principal": p,
         "host": "*", "operation": "DESCRIBE", "permissionType": "ALLOW"}
        for p in PRINCIPALS[:3]
    ]  # fmt: skip
    seen = {tuple(b.values()) for b in out}
    while len(out) < count:
        kind = rng.random()
        if kind < 0.7:
            rt, name, pattern = "TOPIC", f"topic-{rng.randrange(count // 2)}", "LITERAL"
        elif kind < 0.95:
            rt, name, pattern = "TOPIC", f"team-{rng.randrange(200)}-", "PREFIXED"
        else:
            rt, name, pattern = "GROUP", f"group-{rng.randrange(count // 10)}", "LITERAL"
        b = {
            "resourceType": rt,
            "resourceName": name,
            "patternType": pattern,
            "principal": rng.choice(PRINCIPALS),
            "host": rng.choice(["*", *HOSTS]),
            "operation": rng.choice(["READ", "WRITE", "DESCRIBE", "ALL"]),
            "permissionType": "DENY" if rng.random() < 0.05 else "ALLOW",
        }
        key = tuple(b.values())
        if key not in seen:
            seen.add(key)
            out.append(b)
    return out


class _Workload:
    """Requests as a broker sends them: mostly about resources the principal has ACLs for
    (allowed), 10% about anything (mostly denied)."""

    def __init__(self, bindings: list[dict[str, str]], count: int, rng: random.Random) -> None:
        self.rng = rng
        self.count = count
        self.granted: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for b in bindings:
            if (
                b["resourceType"] != "TOPIC"
                or b["permissionType"] != "ALLOW"
                or b["resourceName"] == "*"
            ):
                continue
            name = b["resourceName"] + ("app" if b["patternType"] == "PREFIXED" else "")
            op = "READ" if b["operation"] == "ALL" else b["operation"]
            hosts = HOSTS if b["host"] == "*" else [b["host"]]
            for host in hosts:
                self.granted.setdefault((b["principal"], host), []).append((op, name))
        self.keys = sorted(self.granted)

    def _any_action(self) -> dict[str, str]:
        rng = self.rng
        if rng.random() < 0.7:
            name = f"topic-{rng.randrange(self.count // 2)}"
        else:
            name = f"team-{rng.randrange(200)}-app{rng.randrange(5)}"
        return {"operation": rng.choice(["READ", "WRITE", "DESCRIBE"]), "resourceType": "TOPIC",
                "resourceName": name}  # fmt: skip

    def bodies(self, batch: int, how_many: int, min_offset: int) -> list[bytes]:
        out = []
        for _ in range(how_many):
            principal, host = self.rng.choice(self.keys)
            granted = self.granted[(principal, host)]
            actions = []
            for _ in range(batch):
                if self.rng.random() < 0.9:
                    op, name = self.rng.choice(granted)
                    actions.append({"operation": op, "resourceType": "TOPIC", "resourceName": name})
                else:
                    actions.append(self._any_action())
            body = {
                "principal": principal,
                "host": host,
                "minOffset": min_offset,
                "actions": actions,
            }
            out.append(json.dumps(body).encode())
        return out


def _node_cpu(server: psutil.Process) -> float:
    """CPU seconds (user + system) of the node and its child processes (the audit sender)."""
    total = 0.0
    for process in (server, *server.children(recursive=True)):
        try:
            total += sum(process.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
    return total


def _throughput(
    client: _Client, server: psutil.Process, bodies: Sequence[bytes], batch: int, seconds: float
) -> tuple[float, float, float]:
    """Decisions/s, the node's CPU use (cores, its child processes included) and the share
    DENIED over ``seconds``."""
    decided = denied = 0
    cpu_before = _node_cpu(server)
    started = time.perf_counter()
    deadline = started + seconds
    i = 0
    while time.perf_counter() < deadline:
        answer = client.post("/v1/authorize", bodies[i % len(bodies)])
        i += 1
        decided += batch
        denied += answer.count(b'"DENIED"')
    elapsed = time.perf_counter() - started
    cores = (_node_cpu(server) - cpu_before) / elapsed
    return decided / elapsed, cores, denied / max(decided, 1)


def _cache_counts(client: _Client) -> tuple[float, float]:
    """(hits, misses) of the node's replica cache, from its Prometheus text."""
    client.conn.request("GET", "/metrics")
    text = client.conn.getresponse().read().decode()
    counts = {"hits": 0.0, "misses": 0.0}
    for line in text.splitlines():
        for kind in counts:
            if line.startswith(f"aclstore_replica_cache_{kind}_total "):
                counts[kind] = float(line.split()[1])
    return counts["hits"], counts["misses"]


def _hit_rate(client: _Client, before: tuple[float, float]) -> float:
    hits, misses = _cache_counts(client)
    looked_up = (hits - before[0]) + (misses - before[1])
    return (hits - before[0]) / looked_up if looked_up else 0.0


def _load(admin: _Client, bindings: list[dict[str, str]]) -> int:
    """Create ``bindings`` through the admin API, 1,000 per request; the last offset."""
    offset = -1
    for start in range(0, len(bindings), 1000):
        body = json.dumps({"bindings": bindings[start : start + 1000]}).encode()
        answer: Any = json.loads(admin.post("/v1/acls", body))
        offset = answer["offset"]
    return offset


def _write_changes(port: int, token: str, rate: float, stop: Any, applied: Any) -> None:
    """Apply ``rate`` changes/s through the admin API until ``stop`` is set (a process of its
    own, so that the client's interpreter does not slow the decisions it measures): creates
    of topic ACLs (literal and prefixed, the workload's principals), each deleted again 50
    changes later."""
    client = _Client(port, token)
    rng = random.Random(7)
    live: list[dict[str, str]] = []
    next_at = time.perf_counter()
    while not stop.is_set():
        if len(live) >= 50:
            client.post("/v1/acls/delete", json.dumps({"filters": [live.pop(0)]}).encode())
        else:
            prefixed = rng.random() < 0.2
            name = f"team-{rng.randrange(200)}-" if prefixed else f"topic-{rng.randrange(10**6)}"
            binding = {
                "resourceType": "TOPIC", "resourceName": name,
                "patternType": "PREFIXED" if prefixed else "LITERAL",
                "principal": rng.choice(PRINCIPALS), "host": "*", "operation": "WRITE",
                "permissionType": "ALLOW",
            }  # fmt: skip
            client.post("/v1/acls", json.dumps({"bindings": [binding]}).encode())
            live.append(binding)
        with applied.get_lock():
            applied.value += 1
        next_at += 1.0 / rate
        pause = next_at - time.perf_counter()
        if pause > 0:
            stop.wait(pause)


def _warm(quick: bool, tmp: Path, rng: random.Random) -> list[Target]:
    acl_count = 2_000 if quick else 20_000
    singles = 3_000 if quick else 20_000
    seconds = 3.0 if quick else 10.0
    (tmp / "warm").mkdir()
    server = _Server(tmp / "warm" / "data")
    try:
        if server.cpu is not None:
            _pin(0, 1)  # the client on another CPU
        where = "unpinned" if server.cpu is None else f"node on CPU {server.cpu}"
        print(f"sidecar bench, warm node: {server.url} ({where}; ACLSTORE_BENCH_PIN=1 pins it)")
        admin = _Client(server.port, server.token)
        bindings = _bindings(acl_count, rng)
        offset = _load(admin, bindings)
        figure("bindings loaded", len(bindings), "bindings")
        client = _Client(server.port)
        # Warm up (and wait until the replica has applied every binding).
        workload = _Workload(bindings, acl_count, rng)
        for body in workload.bodies(10, 200, offset):
            client.post("/v1/authorize", body)

        bodies = workload.bodies(1, 1000, offset)
        latencies = []
        for i in range(singles):
            started = time.perf_counter()
            client.post("/v1/authorize", bodies[i % len(bodies)])
            latencies.append((time.perf_counter() - started) * 1000.0)
        p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
        figure("single decision p50", p50, "ms")
        figure("single decision p99", p99, "ms")
        rates = {}
        node = psutil.Process(server.process.pid)
        for batch in (1, 10, 100):
            bodies = workload.bodies(batch, 300, offset)
            rate, cores, denied = _throughput(client, node, bodies, batch, seconds)
            # "On one core": never credit more than one core's worth of the node's CPU.
            rates[batch] = rate / max(1.0, cores)
            figure(f"decisions/s, batches of {batch} ({denied:.0%} denied)", rate, "decisions/s")
            figure(f"  node CPU while serving batches of {batch}", cores, "cores")

        bodies = workload.bodies(100, 300, offset)
        before = _cache_counts(client)
        quiet, quiet_cores, _ = _throughput(client, node, bodies, 100, seconds)
        figure("batches of 100, no writes", quiet, "decisions/s")
        figure("  node CPU", quiet_cores, "cores")
        figure("  cache hit rate", _hit_rate(client, before) * 100, "%")
        stop, applied = multiprocessing.Event(), multiprocessing.Value("i", 0)
        writer = multiprocessing.Process(
            target=_write_changes, args=(server.port, server.token, 100.0, stop, applied)
        )
        writer.start()
        try:
            time.sleep(0.5)
            before = _cache_counts(client)
            applied_before = applied.value
            busy, busy_cores, _ = _throughput(client, node, bodies, 100, seconds)
            applied_during = applied.value - applied_before
        finally:
            stop.set()
            writer.join(timeout=30)
        if writer.exitcode != 0:
            raise RuntimeError(f"the concurrent writer failed (exit code {writer.exitcode})")
        figure("batches of 100, 100 changes/s applied", busy, "decisions/s")
        figure("  node CPU", busy_cores, "cores")
        figure("  changes applied per second", applied_during / seconds, "changes/s")
        figure("  cache hit rate", _hit_rate(client, before) * 100, "%")
        under_writes = busy / quiet
        # The same per node CPU-second: on a shared machine, other processes may take the
        # node's CPU in one phase and not the other.
        figure("  ratio per node CPU-second", (busy / busy_cores) / (quiet / quiet_cores), "")
    finally:
        server.stop()
    return [
        Target("single_p99", p99, "ms", 2.0, higher_is_better=False),
        Target("decisions_batch100", rates[100], "decisions/s", 50_000.0),
        Target("batch100_under_writes", under_writes, "ratio", 0.8),
    ]


def _cold(quick: bool, tmp: Path, rng: random.Random) -> list[Target]:
    acl_count = 100_000 if quick else 1_000_000
    singles = 3_000 if quick else 20_000
    (tmp / "cold").mkdir()
    server = _Server(tmp / "cold" / "data")
    try:
        print(f"sidecar bench, cold node: {server.url}")
        admin = _Client(server.port, server.token)
        bindings = _bindings(acl_count, rng)
        started = time.perf_counter()
        offset = _load(admin, bindings)
        figure("bindings loaded", len(bindings), "bindings")
        figure("  load time (admin API, 1,000 per request)", time.perf_counter() - started, "s")
        client = _Client(server.port)
        workload = _Workload(bindings, acl_count, rng)
        client.post("/v1/authorize", workload.bodies(1, 1, offset)[0])  # applied everything
        # Every body is a fresh draw over the principals' granted topics, which number in
        # the tens (--quick) or hundreds of thousands, and the node starts cold: few repeat.
        bodies = workload.bodies(1, singles, offset)
        before = _cache_counts(client)
        latencies = []
        for body in bodies:
            started = time.perf_counter()
            client.post("/v1/authorize", body)
            latencies.append((time.perf_counter() - started) * 1000.0)
        hit_rate = _hit_rate(client, before)
        p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
        figure("cold single decision p50", p50, "ms")
        figure("cold single decision p99", p99, "ms")
        figure("  cache hit rate", hit_rate * 100, "%")
    finally:
        server.stop()
    return [Target("cold_p99", p99, "ms", 2.0, higher_is_better=False)]


def run(quick: bool) -> list[Target]:
    rng = random.Random(42)
    with tempfile.TemporaryDirectory(prefix="aclstore-bench-") as tmp:
        return _warm(quick, Path(tmp), rng) + _cold(quick, Path(tmp), rng)
