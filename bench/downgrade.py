"""``python -m bench downgrade``: the access-diff commands as a user types them, at scale.

An embedded node (``aclstore serve``, a process of its own) holds a synthetic live state of N
bindings (1,000,000; 100,000 with ``--quick``): topics and groups under shared prefixes, 20 %
PREFIXED, 20 % DENY, a wildcard ALLOW per type, principals and a few hosts.  The state is
written to the node's embedded log before it starts, and the node loads it as it would any
log.  Then, each command a separate process (Python start, imports, the request, the
output), measured from outside (:func:`bench.process.run_command`) with the node's growth
meanwhile (:class:`bench.process.RssWatch`):

* ``aclstore acls --add ... --dry-run`` for three single-binding changes (a literal ALLOW, a
  prefixed DENY under a shared prefix, a literal DENY on a group), three times each: the
  median wall - TARGET ``dry_run_cli_1m`` (ms, <= 500);
* ``aclstore downgrade-check --to 1 --format json``: wall - TARGET ``downgrade_cli_1m``
  (s, <= 60), and the CLI's peak RSS plus the node's growth - TARGET ``downgrade_rss_1m``
  (MB, <= 2,000);
* decisions asked of the node one after the other, first quietly, then while
  ``aclstore configs --alter --add-config acl.format.version=1`` runs (the format gate, which
  refuses: the prefixed DENYs would be ignored): the p99 meanwhile - TARGET
  ``gate_decision_p99`` (ms, <= 2), with the quiet p99 and the max printed beside it.

The machine's load average is printed with each figure: on shared cores the times follow it.
With ``ACLSTORE_BENCH_CACHE=DIR`` the log written for a size is kept there and reused
(:func:`prefilled_log`, which ``bench soak`` shares).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import resource
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from bench.process import RssWatch, aclstore_argv, load_average, run_command
from bench.report import Target, figure, median, percentile
from bench.sidecar import _Server
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import codec_named, event_key
from store.events import AclCreated
from store.log.embedded import EmbeddedChangeLog

_OPS = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL)


def synthetic_bindings(size: int, seed: int = 11) -> set[AclBinding]:
    rng = random.Random(seed)
    teams = max(10, size // 200)
    bindings: set[AclBinding] = set()
    for rt in (ResourceType.TOPIC, ResourceType.GROUP):
        bindings.add(
            AclBinding.of(rt, "*", PatternType.LITERAL, "User:*", "*", AclOperation.DESCRIBE,
                          AclPermissionType.ALLOW)
        )  # fmt: skip
    while len(bindings) < size:
        team = f"team{rng.randrange(teams)}."
        prefixed = rng.random() < 0.2
        name = team + ("" if prefixed else f"app{rng.randrange(40)}.events")
        if prefixed and rng.random() < 0.5:
            name += f"app{rng.randrange(40)}."
        bindings.add(
            AclBinding.of(
                ResourceType.TOPIC if rng.random() < 0.8 else ResourceType.GROUP,
                name,
                PatternType.PREFIXED if prefixed else PatternType.LITERAL,
                f"User:svc{rng.randrange(size // 20 + 1)}",
                "*" if rng.random() < 0.9 else f"10.0.{rng.randrange(4)}.{rng.randrange(8)}",
                rng.choice(_OPS),
                AclPermissionType.DENY if rng.random() < 0.2 else AclPermissionType.ALLOW,
            )
        )
    return bindings


def prefill(log_dir: Path, bindings: Iterable[AclBinding]) -> int:
    """Write every binding's ``AclCreated`` to an embedded log, 10,000 per transaction; the
    last offset."""
    codec = codec_named("avro")
    log = EmbeddedChangeLog(log_dir)
    offset = -1
    try:
        batch: list[tuple[bytes, bytes | None]] = []
        for b in sorted(bindings):
            event = AclCreated(binding=b, actor="User:admin", request_id="bench", time_ms=0)
            batch.append((event_key(event), codec.encode(event)))
            if len(batch) == 10_000:
                offset = log.append(batch, timeout=60)[-1]
                batch = []
        if batch:
            offset = log.append(batch, timeout=60)[-1]
    finally:
        log.close()
    return offset


def _wait_ready(port: int, timeout_s: float) -> float:
    """Seconds until ``/readyz`` answers 200 (the replica loaded the log)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.5)
    raise RuntimeError(f"the node was not ready within {timeout_s:g} s")


def _admin_loaded(where: list[str]) -> float:
    """Seconds until ``configs --describe`` answers: the node's admin reads the whole log on
    its first request, within that request's timeout, and goes on from where it got to on
    the next one."""
    started = time.perf_counter()
    while True:
        done = run_command(aclstore_argv("configs", *where, "--describe"))
        if done.returncode == 0:
            return time.perf_counter() - started
        if b"could not read" not in done.stderr or time.perf_counter() - started > 3600:
            done.check()


DRY_RUNS = (
    "--allow-principal User:new --operation Read --topic team3.app7.events",
    "--deny-principal User:svc1 --operation Write --topic team5.app2. --resource-pattern-type prefixed",
    "--deny-principal User:svc2 --operation Read --group team8.app1.events",
)


class _Decisions:
    """Decisions asked one after the other on one connection, each timed (ms)."""

    def __init__(self, port: int, bindings: list[AclBinding]) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        rng = random.Random(3)
        topics = [b for b in bindings if b.resource_type is ResourceType.TOPIC]
        self.bodies = [
            json.dumps({
                "principal": b.principal, "host": "10.0.0.1",
                "actions": [{"operation": "READ", "resourceType": "TOPIC", "resourceName": name}],
            }).encode()
            for b in rng.sample(topics, min(len(topics), 5_000))
            for name in [b.name + ("x" if b.pattern_type is PatternType.PREFIXED else "")]
        ]  # fmt: skip
        self.samples: list[float] = []
        self.stop = threading.Event()

    def ask(self, i: int) -> float:
        started = time.perf_counter()
        self.conn.request("POST", "/v1/authorize", body=self.bodies[i % len(self.bodies)],
                          headers={"Content-Type": "application/json"})  # fmt: skip
        response = self.conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"/v1/authorize answered {response.status}")
        return (time.perf_counter() - started) * 1000

    def run(self, count: int | None = None) -> list[float]:
        out: list[float] = []
        i = 0
        while not self.stop.is_set() and (count is None or i < count):
            out.append(self.ask(i))
            i += 1
            time.sleep(0.002)  # a broker's pace, not a flood: the latency is the question
        return out


def _children_cpu() -> float:
    """CPU seconds (user + sys) of this process's children that have ended: a command's own,
    as a difference around it (the node, still running, is not counted)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(quick: bool) -> list[Target]:
    size = 100_000 if quick else 1_000_000
    tmp = Path(tempfile.mkdtemp(prefix="aclstore-bench-downgrade-"))
    try:
        return _run(size, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prefilled_log(size: int, log_dir: Path) -> tuple[set[AclBinding], int]:
    """The :func:`synthetic_bindings` of ``size`` and an embedded log of their ``AclCreated``
    in ``log_dir`` (a node's ``<data-dir>/log``); the bindings and the last offset.

    With ``ACLSTORE_BENCH_CACHE=DIR`` the log written for a size is kept there and copied on
    the next call: the same bindings, since the generator is seeded."""
    bindings = synthetic_bindings(size)
    cache = os.environ.get("ACLSTORE_BENCH_CACHE")
    kept = Path(cache) / f"downgrade-log-{size}" if cache else None
    if kept is not None and kept.is_dir():  # the same bindings, written before
        shutil.copytree(kept, log_dir)
        return bindings, len(bindings) - 1
    last = prefill(log_dir, bindings)
    if kept is not None:
        shutil.copytree(log_dir, kept)
    return bindings, last


def _run(size: int, tmp: Path) -> list[Target]:
    started = time.perf_counter()
    data_dir = tmp / "node"
    bindings, last = prefilled_log(size, data_dir / "log")
    figure("bindings", len(bindings), f"(log of {last + 1} records written in "
           f"{time.perf_counter() - started:.1f} s, generation included)")  # fmt: skip
    server = _Server(data_dir)
    try:
        figure("node ready after", _wait_ready(server.port, 3600), "s")
        admin = str(data_dir / "admin.properties")
        where = ["--store", server.url, "--command-config", admin]
        figure("the admin's first read of the log (configs --describe, retried)", _admin_loaded(where), "s")
        figure("node RSS", RssWatch(server.process.pid).start / 1e6, "MB")
        print(f"  load average: {load_average()}", flush=True)

        walls: list[float] = []
        cpus: list[float] = []
        for _ in range(3):
            for change in DRY_RUNS:
                argv = aclstore_argv("acls", *where, "--add", *change.split(), "--dry-run")
                before = _children_cpu()
                done = run_command(argv).check()
                cpus.append((_children_cpu() - before) * 1000)
                walls.append(done.wall_s * 1000)
        figure("dry run: median wall", median(walls), "ms")
        figure("dry run: median CPU of the command (user + sys; the wall on an idle machine)",
               median(cpus), "ms")  # fmt: skip
        figure("dry run: max wall", max(walls), "ms")
        figure("dry run: last peak RSS", done.peak_rss_mb, "MB")
        print(f"  load average: {load_average()}", flush=True)

        with RssWatch(server.process.pid) as node:
            check = run_command(aclstore_argv("downgrade-check", *where, "--to", "1", "--format", "json"))
        if check.returncode not in (0, 1) or not check.stdout:
            raise RuntimeError(f"downgrade-check failed ({check.returncode}): {check.stderr[-2000:]!r}")
        report = json.loads(check.stdout)
        figure("downgrade-check: wall", check.wall_s, "s")
        figure("downgrade-check: CLI peak RSS", check.peak_rss_mb, "MB")
        figure("downgrade-check: node growth (its worker included)", node.growth / 1e6, "MB")
        figure("ignored by a format-1 reader", len(report["ignored"]), "bindings")
        figure("widened sets", len(report["widened"]), "")
        figure("narrowed sets", len(report["narrowed"]), "")
        print(f"  load average: {load_average()}", flush=True)

        decisions = _Decisions(server.port, sorted(bindings))
        quiet = decisions.run(2_000)
        figure("decisions, quiet: p50", percentile(quiet, 50), "ms")
        figure("decisions, quiet: p99", percentile(quiet, 99), "ms")
        during: list[float] = []
        thread = threading.Thread(target=lambda: during.extend(decisions.run()), daemon=True)
        thread.start()
        gate = run_command(
            aclstore_argv("configs", *where, "--alter", "--add-config", "acl.format.version=1")
        )
        decisions.stop.set()
        thread.join()
        if gate.returncode != 1 or b"cannot lower acl.format.version" not in gate.stderr:
            raise RuntimeError(f"the gate did not refuse: {gate.returncode} {gate.stderr[-500:]!r}")
        figure("the gate (refused): wall", gate.wall_s, "s")
        figure("decisions during the gate", len(during), "")
        figure("decisions during the gate: p50", percentile(during, 50), "ms")
        figure("decisions during the gate: max", max(during), "ms")
        # The same bodies again with the gate over (as warm as during it): what the gate adds.
        decisions.stop.clear()
        after = decisions.run(min(len(during), 10_000))
        figure("decisions after the gate, same bodies: p50", percentile(after, 50), "ms")
        figure("decisions after the gate, same bodies: p99", percentile(after, 99), "ms")
        print(f"  load average: {load_average()}", flush=True)
    finally:
        server.stop()
    return [
        Target("dry_run_cli_1m", median(walls), "ms", 500, higher_is_better=False),
        Target("downgrade_cli_1m", check.wall_s, "s", 60, higher_is_better=False),
        Target("downgrade_rss_1m", (check.peak_rss + node.growth) / 1e6, "MB", 2000, higher_is_better=False),
        Target("gate_decision_p99", percentile(during, 99), "ms", 2, higher_is_better=False),
    ]
