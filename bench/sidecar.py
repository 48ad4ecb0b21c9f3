"""Sidecar authorize over HTTP on loopback: latency of single decisions, decisions/s in batches,
with and without concurrent ACL changes, how decisions scale with decision workers, and at a
million bindings with a cold cache.

``python -m bench sidecar [--quick]``.  Each node is ``aclstore serve`` on the embedded default
in a child process with its defaults (audit on: denials always, 1% of allows; a replica cache
of 65,536 resources).  The node is NOT pinned to a core unless ``ACLSTORE_BENCH_PIN=1`` (on a
shared machine a pinned node competes with whatever else runs on its CPU); decisions/s are
divided by the node's measured CPU use when it exceeds one core, so the figures are "on one
core" either way.  Nodes are loaded with generated bindings (literal, ``*`` and prefixed
patterns, several principals, 5 % DENY) through the admin API, then asked from this process
over one keep-alive HTTP/1.1 connection, with request bodies encoded beforehand.

Each phase runs in rounds, repeated and alternated (the machine is shared: a round another
process slows shows as spread, not as the figure); each phase prints its rounds, their spread
and the node's CPU per decision (node and workers and their audit senders, steadier than wall
time on shared cores), and the client's own CPU.  The load average is printed at each phase.

1. **Warm** (20,000 bindings; ``--quick``: 2,000), ``aclstore serve`` as users run it (one
   decision worker per core).  Single decisions over one keep-alive connection (p50/p99 per
   round; the TARGET is the median round's p99); decisions/s in batches of 1, 10 and 100 from
   as many client processes as the node has workers (a connection stays with one worker); then
   batches of 100 without writes and while a separate process applies 100 changes/s through
   the admin API, alternated round by round; what a change costs the node's processes beside
   the decisions (their CPU in a busy round less its decisions at the quiet CPU per decision)
   and the writer's own CPU per change are printed.
2. **Scaling**: the same bindings in a node with one decision worker and a node with two,
   asked alternately by two client processes with batches of 100.
3. **Cold** (1,000,000 bindings; ``--quick``: 100,000): single decisions over names spread
   over every granted topic, so that the cache cannot hold them; the hit rate is reported.

TARGET lines: ``single_p99`` (ms, <= 1, the median round's), ``decisions_batch100``
(decisions/s on this machine, >= 50000), ``batch100_under_writes`` (with 100 changes/s ÷ without, >= 0.9),
``decisions_batch100_2workers`` (two workers ÷ one, >= 1.4) and ``cold_p99`` (ms, <= 2, every
round's decisions pooled).
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.process import cpu_model
from bench.report import Target, figure, median, percentile

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
    """CPU seconds (user + system) of the node and its child processes (decision workers,
    audit senders)."""
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
    """Decisions/s over this process's one connection, the node's CPU use (cores, its child
    processes included) and the share DENIED over ``seconds`` (the audit bench's measure)."""
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


class _LeanClient:
    """Keep-alive HTTP/1.1 POSTs of JSON with a bearer token, the request head written and the
    answer read by hand: the concurrent writer's own CPU stays small beside the node it
    loads (``http.client`` parses each answer's head with the e-mail parser), as an
    administrator's tool would run on another machine."""

    def __init__(self, port: int, token: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = (
            "Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {token}\r\n"
        ).encode()
        self.pending = b""

    def post(self, path: str, body: bytes) -> bytes:
        request = b"POST " + path.encode() + b" HTTP/1.1\r\n" + self.head
        self.sock.sendall(request + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        data = self.pending
        while b"\r\n\r\n" not in data:
            data += self._recv()
        head, _, data = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(data) < length:
            data += self._recv()
        answer, self.pending = data[:length], data[length:]
        if status != 200:
            raise RuntimeError(f"{path} answered {status}: {answer[:300]!r}")
        return answer

    def _recv(self) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise RuntimeError("the node closed the admin connection")
        return chunk


def _write_changes(port: int, token: str, rate: float, stop: Any, applied: Any) -> None:
    """Apply ``rate`` changes/s through the admin API until ``stop`` is set (a process of its
    own, so that the client's interpreter does not slow the decisions it measures): creates
    of topic ACLs (literal and prefixed, the workload's principals), each deleted again 50
    changes later."""
    client = _LeanClient(port, token)
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


@dataclass(frozen=True, slots=True)
class _Round:
    """One measured round of a phase."""

    rate: float
    """Decisions/s."""
    node_cpu: float
    """CPU seconds of the node's processes per second of the round."""
    client_cpu: float
    denied: float

    @property
    def cpu_per_decision_us(self) -> float:
        return self.node_cpu / self.rate * 1e6 if self.rate else 0.0


def _drive(port: int, bodies: list[bytes], batch: int, seconds: float, go: Any, out: Any) -> None:
    """One client process: its own connection (so its own worker), posting ``bodies`` in turn
    for ``seconds`` once ``go`` is set; puts (decisions, denied, its CPU seconds)."""
    client = _Client(port)
    client.post("/v1/authorize", bodies[0])  # connected, and the worker warm
    go.wait()
    cpu = time.process_time()
    decided = denied = i = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        answer = client.post("/v1/authorize", bodies[i % len(bodies)])
        i += 1
        decided += batch
        denied += answer.count(b'"DENIED"')
    out.put((decided, denied, time.process_time() - cpu))


def _round(port: int, node: psutil.Process, bodies: list[bytes], batch: int, seconds: float,
           clients: int) -> _Round:  # fmt: skip
    """``clients`` client processes asking the node at once for ``seconds``."""
    go = multiprocessing.Event()
    out: Any = multiprocessing.Queue()
    share = max(1, len(bodies) // clients)
    processes = [
        multiprocessing.Process(
            target=_drive, args=(port, bodies[c * share : (c + 1) * share], batch, seconds, go, out)
        )
        for c in range(clients)
    ]
    for process in processes:
        process.start()
    time.sleep(0.5)  # every client connected
    cpu_before = _node_cpu(node)
    started = time.perf_counter()
    go.set()
    results = [out.get(timeout=seconds + 60) for _ in processes]
    elapsed = time.perf_counter() - started
    node_cpu = (_node_cpu(node) - cpu_before) / elapsed
    for process in processes:
        process.join(timeout=30)
    decided = sum(r[0] for r in results)
    return _Round(
        rate=decided / elapsed, node_cpu=node_cpu, client_cpu=sum(r[2] for r in results) / elapsed,
        denied=sum(r[1] for r in results) / max(decided, 1),
    )


def _show(label: str, rounds: Sequence[_Round]) -> float:
    """Print a phase's rounds and spread; return the median rate."""
    rates = [r.rate for r in rounds]
    middle = median(rates)
    figure(f"{label}: median of {len(rounds)} rounds", middle, "decisions/s")
    print(f"    rounds: {', '.join(f'{r:,.0f}' for r in rates)} "
          f"(spread {(max(rates) - min(rates)) / middle:.0%} of the median)")  # fmt: skip
    figure("    node CPU per decision", median([r.cpu_per_decision_us for r in rounds]), "µs")
    figure("    node CPU", median([r.node_cpu for r in rounds]), "cores")
    figure("    client CPU", median([r.client_cpu for r in rounds]), "cores")
    return middle


def _singles(client: _Client, bodies: list[bytes], count: int, rounds: int) -> tuple[float, float]:
    """Single decisions over one connection in ``rounds`` rounds: the median round's p99 and
    the p99 of all rounds pooled."""
    p99s = []
    pooled: list[float] = []
    per_round = count // rounds
    for r in range(rounds):
        latencies = []
        for i in range(per_round):  # each round its own bodies: a cold round stays cold
            started = time.perf_counter()
            client.post("/v1/authorize", bodies[(r * per_round + i) % len(bodies)])
            latencies.append((time.perf_counter() - started) * 1000.0)
        p99s.append(percentile(latencies, 99))
        pooled.extend(latencies)
        figure(f"  round {r + 1}: single decision p50", percentile(latencies, 50), "ms")
        figure("            p99", p99s[-1], "ms")
    middle = median(p99s)
    print(f"    p99 spread: {min(p99s):.3g} to {max(p99s):.3g} ms; median round {middle:.3g} ms; "
          f"all rounds pooled {percentile(pooled, 99):.3g} ms")  # fmt: skip
    return middle, percentile(pooled, 99)


def _settle(server: _Server, limit_s: float = 120.0) -> float:
    """Wait until the node's processes use under a tenth of a core over a second (what a bulk
    load leaves running, the index's compactions, has ended); the seconds waited."""
    node = psutil.Process(server.process.pid)
    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        before = _node_cpu(node)
        time.sleep(1.0)
        if _node_cpu(node) - before < 0.1:
            break
    return time.perf_counter() - started


def _workers_of(server: _Server) -> int:
    """How many decision workers the node runs (its child processes that are workers)."""
    children = psutil.Process(server.process.pid).children()
    return sum(1 for c in children if "replicator.server.workers" in " ".join(c.cmdline())) or 1


def _warm(quick: bool, tmp: Path, rng: random.Random) -> tuple[list[Target], list[dict[str, str]]]:
    acl_count = 2_000 if quick else 20_000
    singles = 3_000 if quick else 20_000
    seconds = 2.0 if quick else 5.0
    rounds = 2 if quick else 3
    (tmp / "warm").mkdir()
    server = _Server(tmp / "warm" / "data")
    try:
        workers = _workers_of(server)
        print(f"sidecar bench, warm node: {server.url} ({workers} decision workers); "
              f"load average {os.getloadavg()}")  # fmt: skip
        admin = _Client(server.port, server.token)
        bindings = _bindings(acl_count, rng)
        offset = _load(admin, bindings)
        figure("bindings loaded", len(bindings), "bindings")
        client = _Client(server.port)
        workload = _Workload(bindings, acl_count, rng)
        for body in workload.bodies(10, 200, offset):  # warm up; every binding applied
            client.post("/v1/authorize", body)
        p99, _ = _singles(client, workload.bodies(1, 1000, offset), singles, rounds)
        node = psutil.Process(server.process.pid)
        rates = {}
        for batch in (1, 10, 100):
            bodies = workload.bodies(batch, 600, offset)
            found = [_round(server.port, node, bodies, batch, seconds, workers) for _ in range(rounds)]
            rates[batch] = _show(f"batches of {batch}, {workers} clients", found)
        print(f"  writes phase: load average {os.getloadavg()}")
        bodies = workload.bodies(100, 600, offset)
        quiet: list[_Round] = []
        busy: list[_Round] = []
        changes: list[float] = []
        writer_ms: list[float] = []
        before = _cache_counts(client)
        for r in range(rounds):
            for writing in ((False, True) if r % 2 == 0 else (True, False)):
                if not writing:
                    quiet.append(_round(server.port, node, bodies, 100, seconds, workers))
                    continue
                stop, applied = multiprocessing.Event(), multiprocessing.Value("i", 0)
                writer = multiprocessing.Process(
                    target=_write_changes, args=(server.port, server.token, 100.0, stop, applied)
                )
                writer.start()
                try:
                    time.sleep(0.5)
                    writing_process = psutil.Process(writer.pid)
                    writer_before = _node_cpu(writing_process)
                    applied_before, round_started = applied.value, time.perf_counter()
                    busy.append(_round(server.port, node, bodies, 100, seconds, workers))
                    done = applied.value - applied_before
                    rate = done / (time.perf_counter() - round_started)
                    changes.append(rate)
                    writer_ms.append((_node_cpu(writing_process) - writer_before) * 1000 / max(done, 1))
                    figure("  changes applied per second", rate, "changes/s")
                finally:
                    stop.set()
                    writer.join(timeout=30)
                if writer.exitcode != 0:
                    raise RuntimeError(f"the concurrent writer failed (exit code {writer.exitcode})")
        time.sleep(0.5)  # the workers' figures reach /metrics within a quarter second
        figure("  cache hit rate over both", _hit_rate(client, before) * 100, "%")
        quiet_rate = _show("batches of 100, no writes", quiet)
        busy_rate = _show("batches of 100, 100 changes/s applied", busy)
        under_writes = busy_rate / quiet_rate
        per_cpu = [median([r.rate / r.node_cpu for r in phase]) for phase in (busy, quiet)]
        figure("  ratio per node CPU-second", per_cpu[0] / per_cpu[1], "")
        # What a change costs the node's processes beside the decisions: their CPU in a busy
        # round less what its decisions cost at the quiet rounds' CPU per decision.
        quiet_cost = median([r.node_cpu / r.rate for r in quiet])
        per_change = [
            (r.node_cpu - r.rate * quiet_cost) / c * 1000 for r, c in zip(busy, changes, strict=True)
        ]
        figure("  node's CPU per change under decisions (median round)", median(per_change), "ms")
        figure("  the writer's own CPU per change (median round)", median(writer_ms), "ms")
    finally:
        server.stop()
    return [
        Target("single_p99", p99, "ms", 1.0, higher_is_better=False),
        Target("decisions_batch100", rates[100], "decisions/s", 50_000.0),
        Target("batch100_under_writes", under_writes, "ratio", 0.9),
    ], bindings


def _scaling(quick: bool, tmp: Path, rng: random.Random, bindings: list[dict[str, str]]) -> list[Target]:
    """One worker against two, the same bindings and clients, rounds alternated."""
    seconds = 2.0 if quick else 5.0
    rounds = 2 if quick else 3
    servers = {}
    for count in (1, 2):
        (tmp / f"scale-{count}").mkdir()
        servers[count] = _Server(tmp / f"scale-{count}" / "data", ["--decision-workers", str(count)])
    try:
        print(f"sidecar bench, scaling: 1 and 2 decision workers, 2 client processes; "
              f"load average {os.getloadavg()}")  # fmt: skip
        offsets = {c: _load(_Client(s.port, s.token), bindings) for c, s in servers.items()}
        workload = _Workload(bindings, len(bindings), rng)
        found: dict[int, list[_Round]] = {1: [], 2: []}
        for r in range(rounds):
            for count in ((1, 2) if r % 2 == 0 else (2, 1)):
                server = servers[count]
                bodies = workload.bodies(100, 600, offsets[count])
                node = psutil.Process(server.process.pid)
                found[count].append(_round(server.port, node, bodies, 100, seconds, 2))
        one = _show("1 decision worker, batches of 100", found[1])
        two = _show("2 decision workers, batches of 100", found[2])
        print(f"  load average {os.getloadavg()}")
    finally:
        for server in servers.values():
            server.stop()
    return [Target("decisions_batch100_2workers", two / one, "ratio", 1.4)]


def _cold(quick: bool, tmp: Path, rng: random.Random) -> list[Target]:
    acl_count = 100_000 if quick else 1_000_000
    singles = 3_000 if quick else 20_000
    rounds = 2 if quick else 3
    (tmp / "cold").mkdir()
    server = _Server(tmp / "cold" / "data")
    try:
        print(f"sidecar bench, cold node: {server.url} ({_workers_of(server)} decision workers)")
        admin = _Client(server.port, server.token)
        bindings = _bindings(acl_count, rng)
        started = time.perf_counter()
        offset = _load(admin, bindings)
        figure("bindings loaded", len(bindings), "bindings")
        figure("  load time (admin API, 1,000 per request)", time.perf_counter() - started, "s")
        figure("  settling after the load (RocksDB's compactions)", _settle(server), "s")
        print(f"  load average {os.getloadavg()}")
        client = _Client(server.port)
        workload = _Workload(bindings, acl_count, rng)
        client.post("/v1/authorize", workload.bodies(1, 1, offset)[0])  # applied everything
        # Every body is a fresh draw over the principals' granted topics, which number in
        # the tens (--quick) or hundreds of thousands, and the node starts cold: few repeat.
        bodies = workload.bodies(1, singles, offset)
        before = _cache_counts(client)
        # Pooled: the first round after the load is systematically the slowest (not noise a
        # median should hide), and a broker asks right after a load too.
        _, p99 = _singles(client, bodies, singles, rounds)
        time.sleep(0.5)
        figure("  cache hit rate", _hit_rate(client, before) * 100, "%")
    finally:
        server.stop()
    return [Target("cold_p99", p99, "ms", 2.0, higher_is_better=False)]


def run(quick: bool) -> list[Target]:
    rng = random.Random(42)
    print(f"cpu: {cpu_model()}; load average {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="aclstore-bench-") as tmp:
        warm, bindings = _warm(quick, Path(tmp), rng)
        return warm + _scaling(quick, Path(tmp), rng, bindings) + _cold(quick, Path(tmp), rng)

