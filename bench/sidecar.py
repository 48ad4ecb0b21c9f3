"""Sidecar authorize over HTTP on loopback: latency of single decisions, decisions/s in batches.

``python -m bench sidecar [--quick]``.  The node is ``aclstore serve`` on the embedded default
in a child process pinned to ONE core (``sched_setaffinity``), with its defaults (audit on:
denials always, 1% of allows).  It is loaded with generated bindings (literal, ``*`` and
prefixed patterns, several principals), then asked from this process over one keep-alive
HTTP/1.1 connection, with request bodies encoded beforehand so the client costs little.

Figures: single-decision p50/p99 (ms, one action per request, one request at a time), and
decisions/s with batches of 1, 10 and 100 actions per request.  TARGET lines: ``single_p99``
(ms, <= 2) and ``decisions_batch100`` (decisions/s, >= 50000).
"""

from __future__ import annotations

import http.client
import json
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
    def __init__(self, data_dir: Path) -> None:
        aclstore = Path(sys.executable).with_name("aclstore")
        # The banner on stdout; the node's log lines in a file beside its data directory.
        with (data_dir.parent / "serve.log").open("w") as log:
            self.process = subprocess.Popen(
                [str(aclstore), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir)],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        # Pinning is optional: on a shared machine, a pinned node competes with whatever else
        # runs on that CPU.  The node's CPU time is measured either way ("on one core").
        self.cpu = _pin(self.process.pid, 0) if os.environ.get("ACLSTORE_BENCH_PIN") else None
        assert self.process.stdout is not None
        banner = [self.process.stdout.readline() for _ in range(6)]
        if " serving " not in banner[0]:
            self.stop()
            logged = (data_dir.parent / "serve.log").read_text()
            raise RuntimeError("aclstore serve did not start:\n" + "".join(banner) + logged)
        self.url = banner[0].split(" serving ")[1].strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        token_file = data_dir / "admin.properties"
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


def _throughput(
    client: _Client, server: psutil.Process, bodies: Sequence[bytes], batch: int, seconds: float
) -> tuple[float, float, float]:
    """Decisions/s, the node's CPU use (cores) and the share DENIED over ``seconds``."""
    decided = denied = 0
    cpu_before = sum(server.cpu_times()[:2])
    started = time.perf_counter()
    deadline = started + seconds
    i = 0
    while time.perf_counter() < deadline:
        answer = client.post("/v1/authorize", bodies[i % len(bodies)])
        i += 1
        decided += batch
        denied += answer.count(b'"DENIED"')
    elapsed = time.perf_counter() - started
    cores = (sum(server.cpu_times()[:2]) - cpu_before) / elapsed
    return decided / elapsed, cores, denied / max(decided, 1)


def run(quick: bool) -> list[Target]:
    acl_count = 2_000 if quick else 20_000
    singles = 3_000 if quick else 20_000
    seconds = 3.0 if quick else 10.0
    rng = random.Random(42)
    with tempfile.TemporaryDirectory(prefix="aclstore-bench-") as tmp:
        server = _Server(Path(tmp) / "data")
        try:
            if server.cpu is not None:
                _pin(0, 1)  # the client on another CPU
            where = "unpinned" if server.cpu is None else f"node on CPU {server.cpu}"
            print(f"sidecar bench: node {server.url} ({where}; ACLSTORE_BENCH_PIN=1 pins it)")
            admin = _Client(server.port, server.token)
            offset = -1
            bindings = _bindings(acl_count, rng)
            for start in range(0, len(bindings), 1000):
                answer: Any = json.loads(
                    admin.post(
                        "/v1/acls",
                        json.dumps({"bindings": bindings[start : start + 1000]}).encode(),
                    )
                )
                offset = answer["offset"]
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
                figure(
                    f"decisions/s, batches of {batch} ({denied:.0%} denied)", rate, "decisions/s"
                )
                figure(f"  node CPU while serving batches of {batch}", cores, "cores")
        finally:
            server.stop()
    return [
        Target("single_p99", p99, "ms", 2.0, higher_is_better=False),
        Target("decisions_batch100", rates[100], "decisions/s", 50_000.0),
    ]
