"""The audit pipeline: the cost of durable emission, and the streaming job's throughput.

``python -m bench audit [--quick]``. ``throughput``: see :mod:`bench._audit_pipeline` (a
producer at fixed rates into an embedded audit log, the job on local[2], the delay from each
append to the batch that committed its per-minute counts). ``emit_overhead``: two nodes
(``aclstore serve`` on the embedded default, child processes, the sidecar bench's bindings and
workload): one with audit on as by default (every denial and 1% of allows written to the on-disk
spool before the answer, shipped to the embedded audit log by the node's sender process), one
with ``--no-audit``. Decisions/s in batches of 100 are measured on each in turn, several short
rounds alternating between the two, so that whatever else the machine runs weighs on both alike.
What alternating cannot remove is the difference between two node processes: run side by side
the same way, two ``--no-audit`` nodes differed by 1-7% (6-8 rounds of 4-5 s), so one ratio is
good to a few hundredths.

TARGET lines: ``throughput`` (decisions/s kept up with under 10 s of delay, >= 50000) and
``emit_overhead`` (decisions/s with durable audit ÷ without, >= 0.9).  Beside it: each node's
CPU, the share of decisions denied, the same ratio per node CPU-second, and the audit node's
shipped and dropped events (from its ``/metrics``).
"""

from __future__ import annotations

import random
import tempfile
import time
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


def run(quick: bool) -> list[Target]:
    acl_count = 2_000 if quick else 20_000
    rounds, seconds = (3, 3.0) if quick else (5, 6.0)
    rng = random.Random(42)
    bindings = _bindings(acl_count, rng)
    with tempfile.TemporaryDirectory(prefix="aclstore-bench-") as tmp:
        servers = {}
        for name, extra in (("audit", ()), ("no-audit", ("--no-audit",))):
            (Path(tmp) / name).mkdir()
            servers[name] = _Server(Path(tmp) / name / "data", extra)
        try:
            offset = -1
            for server in servers.values():
                offset = _load(_Client(server.port, server.token), bindings)
            figure("bindings loaded (each node)", len(bindings), "bindings")
            workload = _Workload(bindings, acl_count, rng)
            bodies = workload.bodies(100, 300, offset)
            clients = {name: _Client(s.port) for name, s in servers.items()}
            procs = {name: psutil.Process(s.process.pid) for name, s in servers.items()}
            for client in clients.values():  # warm up; both replicas applied everything
                for body in workload.bodies(10, 200, offset):
                    client.post("/v1/authorize", body)
            sent_before = _metric(clients["audit"], "aclstore_audit_sent_events_total")
            rate = {name: 0.0 for name in servers}
            cpu = {name: 0.0 for name in servers}
            denied_share = 0.0
            for _ in range(rounds):
                for name in servers:
                    r, cores, denied = _throughput(clients[name], procs[name], bodies, 100, seconds)
                    rate[name] += r / rounds
                    cpu[name] += cores / rounds
                    denied_share = denied
            audit = clients["audit"]
            deadline = time.monotonic() + 60
            while _metric(audit, "aclstore_audit_buffered_events") and time.monotonic() < deadline:
                time.sleep(0.1)
            shipped = _metric(audit, "aclstore_audit_sent_events_total") - sent_before
            dropped = _metric(audit, "aclstore_audit_dropped_events_total")
        finally:
            for server in servers.values():
                server.stop()
    for name in servers:
        figure(f"decisions/s, batches of 100, {name}", rate[name], "decisions/s")
        figure(f"  node CPU, {name}", cpu[name], "cores")
    figure("  share denied (audited always; 1% of allows)", denied_share * 100, "%")
    figure("audit events shipped during the runs", shipped, "events")
    figure("audit events dropped", dropped, "events")
    ratio = rate["audit"] / rate["no-audit"]
    per_cpu = (rate["audit"] / cpu["audit"]) / (rate["no-audit"] / cpu["no-audit"])
    figure("ratio per node CPU-second", per_cpu, "")
    return [throughput(quick), Target("emit_overhead", ratio, "ratio", 0.9)]
