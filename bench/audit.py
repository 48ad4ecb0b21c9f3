"""The audit pipeline: the cost of durable emission, and the streaming job's throughput.

``python -m bench audit [--quick]``. ``throughput``: see :mod:`bench._audit_pipeline` (a
producer at fixed rates into an embedded audit log, the job on local[2], the delay from each
append to the batch that committed its per-minute counts). ``emit_overhead``: two nodes
(``aclstore serve`` on the embedded default, child processes, the sidecar bench's bindings and
workload): one with audit on as by default (every denial and 1% of allows written to the on-disk
spool before the answer, shipped to the embedded audit log by the node's sender process), one
with ``--no-audit``.  Both are treated alike: started together, loaded with the same bindings at
the same time, warmed up, then decisions/s in batches of 100 are measured on each in turn, six
rounds of 5 s (``--quick``: four of 3 s), the order reversed every other round, so that
whatever else the machine runs weighs on both alike.  Loaded one after the other, the node
loaded first was the slower one: in six runs with two ``--no-audit`` nodes, the second answered
0.2-2.9% more decisions/s (1.5% on average), and the audit node was always the first.  Loaded
together, four such runs gave 0.981, 1.007, 1.003 and 1.019 (:func:`start_nodes` and
:func:`emit_rates` are what such a run calls), so one ratio is good to about two hundredths.

TARGET lines: ``throughput`` (decisions/s kept up with under 10 s of delay, >= 50000) and
``emit_overhead`` (decisions/s with durable audit ÷ without, >= 0.9).  Beside it: each node's
CPU, the share of decisions denied, the same ratio per node CPU-second, and the audit node's
shipped and dropped events (from its ``/metrics``).
"""

from __future__ import annotations

import random
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from bench._audit_pipeline import throughput
from bench.report import Target, figure
from bench.sidecar import _bindings, _Client, _load, _Server, _throughput, _Workload


def _metric(client: _Client, name: str) -> float:
    client.conn.request("GET", "/metrics")
    text = client.conn.getresponse().read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise RuntimeError(f"{name} is not in the node's /metrics")


def start_nodes(kinds: dict[str, tuple[str, ...]], tmp: Path) -> dict[str, _Server]:
    """One node per entry of ``kinds`` (its ``serve`` options), all started before any is
    waited for."""
    servers: dict[str, _Server] = {}
    try:
        for name, extra in kinds.items():
            (tmp / name).mkdir()
            servers[name] = _Server(tmp / name / "data", extra, wait=False)
        for server in servers.values():
            server.wait_serving()
    except BaseException:
        for server in servers.values():
            server.stop()
        raise
    return servers


def emit_rates(
    servers: dict[str, _Server], acl_count: int, rounds: int, seconds: float
) -> tuple[dict[str, float], dict[str, float], float, dict[str, _Client]]:
    """``servers`` loaded with the same bindings at the same time, then decisions/s in batches
    of 100 and node CPU (cores) on each, averaged over ``rounds`` rounds of ``seconds`` each,
    the order reversed every other round; the share denied, and a client of each node."""
    rng = random.Random(42)
    bindings = _bindings(acl_count, rng)
    with ThreadPoolExecutor(len(servers)) as pool:
        loads = [pool.submit(_load, _Client(s.port, s.token), bindings) for s in servers.values()]
        offset = max(load.result() for load in loads)
    figure("bindings loaded (each node)", len(bindings), "bindings")
    workload = _Workload(bindings, acl_count, rng)
    bodies = workload.bodies(100, 300, offset)
    clients = {name: _Client(s.port) for name, s in servers.items()}
    procs = {name: psutil.Process(s.process.pid) for name, s in servers.items()}
    for client in clients.values():  # warm up; every replica applied everything
        for body in workload.bodies(10, 200, offset):
            client.post("/v1/authorize", body)
    rate = {name: 0.0 for name in servers}
    cpu = {name: 0.0 for name in servers}
    denied_share = 0.0
    for round_ in range(rounds):
        for name in list(servers) if round_ % 2 == 0 else list(servers)[::-1]:
            r, cores, denied_share = _throughput(clients[name], procs[name], bodies, 100, seconds)
            rate[name] += r / rounds
            cpu[name] += cores / rounds
    return rate, cpu, denied_share, clients


def run(quick: bool) -> list[Target]:
    acl_count = 2_000 if quick else 20_000
    rounds, seconds = (4, 3.0) if quick else (6, 5.0)
    with tempfile.TemporaryDirectory(prefix="aclstore-bench-") as tmp:
        servers = start_nodes({"audit": (), "no-audit": ("--no-audit",)}, Path(tmp))
        try:
            rate, cpu, denied_share, clients = emit_rates(servers, acl_count, rounds, seconds)
            audit = clients["audit"]
            deadline = time.monotonic() + 60
            while _metric(audit, "aclstore_audit_buffered_events") and time.monotonic() < deadline:
                time.sleep(0.1)
            shipped = _metric(audit, "aclstore_audit_sent_events_total")
            dropped = _metric(audit, "aclstore_audit_dropped_events_total")
        finally:
            for server in servers.values():
                server.stop()
    for name in rate:
        figure(f"decisions/s, batches of 100, {name}", rate[name], "decisions/s")
        figure(f"  node CPU, {name}", cpu[name], "cores")
    figure("  share denied (audited always; 1% of allows)", denied_share * 100, "%")
    figure("audit events shipped (warm-up and runs)", shipped, "events")
    figure("audit events dropped", dropped, "events")
    ratio = rate["audit"] / rate["no-audit"]
    per_cpu = (rate["audit"] / cpu["audit"]) / (rate["no-audit"] / cpu["no-audit"])
    figure("ratio per node CPU-second", per_cpu, "")
    return [throughput(quick), Target("emit_overhead", ratio, "ratio", 0.9)]
