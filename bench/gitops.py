"""``python -m bench gitops [--quick]``: ACLs as code at scale, as a user runs it.

A store of 100,000 bindings (10,000 with ``--quick``; the ``bench downgrade`` shape: 500 teams'
``teamN.`` topics and groups, 20 % PREFIXED, 20 % DENY), written to an embedded log before an
``aclstore serve`` node (a child process) starts on it.  A desired-state file owns the TOPIC and
GROUP prefixes of a tenth of the teams (10,000 bindings): their live bindings as ``export``
writes them, less 1 % and plus 1 % new ones, so that the plan has changes and asks the node's
dry run for the access diff.

* ``plan_10k``: ``aclstore plan -f FILE --format json`` as a process, from start to exit
  (median of three runs after one not counted; exit 2, the changes checked against the file),
  its peak RSS printed.
  Target <= 2 s.
* ``drift_watch_delay``: ``aclstore drift -f FILE --watch --format json`` running beside the
  node; an out-of-band create in the file's scope is sent through the node's API and the time
  from sending it to the alert row on the watcher's stdout is taken, five times (the worst is
  the figure).  Target <= 1 s.

The load average is printed at the start and the end: on shared cores the times follow it.
"""

from __future__ import annotations

import json
import queue
import random
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Final

from bench.downgrade import prefill, synthetic_bindings
from bench.process import aclstore_argv, load_average, run_command
from bench.report import Target, figure, median
from bench.sidecar import _Server
from replicator.client import StoreClient
from replicator.client.config import ClientConfig
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.desired import ResourcePrefix, Scope, export_text

STORE: Final = 100_000
DECLARED: Final = 10_000
ROUNDS: Final = 3
CHANGES: Final = 5


def desired_file(live: set[AclBinding], want: int, rng: random.Random) -> tuple[str, Scope, set[AclBinding]]:
    """A file owning the prefixes of enough teams to hold about ``want`` live bindings."""
    by_team: dict[str, list[AclBinding]] = {}
    for b in live:
        if b.name.startswith("team"):
            by_team.setdefault(b.name.split(".", 1)[0] + ".", []).append(b)
    owned: list[str] = []
    count = 0
    for team in sorted(by_team, key=lambda t: int(t[4:-1])):
        if count >= want:
            break
        owned.append(team)
        count += len(by_team[team])
    scope = Scope(resource_prefixes=frozenset(
        ResourcePrefix(rt, team) for team in owned for rt in (ResourceType.TOPIC, ResourceType.GROUP)
    ))  # fmt: skip
    in_scope = sorted(b for b in live if scope.contains(b))
    dropped = set(rng.sample(in_scope, len(in_scope) // 100))
    added = {
        AclBinding.of(ResourceType.TOPIC, f"{rng.choice(owned)}new{i}", PatternType.LITERAL,
                      f"User:new{i}", "*", AclOperation.READ, AclPermissionType.ALLOW)
        for i in range(len(in_scope) // 100)
    }  # fmt: skip
    declared = (set(in_scope) - dropped) | added
    return export_text(declared, scope), scope, declared


def run(quick: bool = False) -> list[Target]:
    size = STORE // 10 if quick else STORE
    want = DECLARED // 10 if quick else DECLARED
    rng = random.Random(34)
    live = synthetic_bindings(size)
    print(
        f"  store: {len(live):,} bindings; load average (1, 5, 15 min) at the start: {load_average()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench-gitops-") as tmp:
        root = Path(tmp)
        data = root / "node" / "data"
        data.mkdir(parents=True)
        prefill(data / "log", live)
        text, scope, declared = desired_file(live, want, rng)
        path = root / "acls.yaml"
        path.write_text(text)
        in_scope = {b for b in live if scope.contains(b)}
        changes = f"{len(declared - in_scope)} to add, {len(in_scope - declared)} to remove"
        owned = len(scope.resource_prefixes)
        print(f"  file: {len(declared):,} bindings, {owned} prefixes, {len(text):,} B; {changes}", flush=True)
        node = _Server(data)
        try:
            _wait_ready(node)
            credential = str(data / "admin.properties")
            plan = _plan(node.url, credential, path, declared - in_scope, in_scope - declared)
            topic_prefix = min(
                p.prefix for p in scope.resource_prefixes if p.resource_type is ResourceType.TOPIC
            )
            delay = _watch_delay(node, path, data, topic_prefix, rng)
        finally:
            node.stop()
    print(f"  load average (1, 5, 15 min) at the end: {load_average()}", flush=True)
    if quick:
        print(f"  (at {size:,} bindings and a {len(declared):,}-binding file, --quick)")
    return [
        Target("plan_10k", plan, "s", 2.0, higher_is_better=False),
        Target("drift_watch_delay", delay, "s", 1.0, higher_is_better=False),
    ]


def _wait_ready(node: _Server, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    with StoreClient(ClientConfig(url=node.url, token=node.token, timeout_s=60.0)) as client:
        while time.monotonic() < deadline:
            status = client.status()
            if status.lag == 0:
                return
            time.sleep(0.2)
    raise RuntimeError(f"the node did not catch up with its log within {timeout} s")


def _plan(url: str, credential: str, path: Path, add: set[AclBinding], remove: set[AclBinding]) -> float:
    argv = aclstore_argv(
        "plan", "-f", str(path), "--store", url, "--command-config", credential, "--format", "json"
    )
    walls, peaks = [], []
    run_command(argv)  # a warm-up, not counted: the node's first dry run (a CI meets a warm node)
    for _ in range(ROUNDS):
        done = run_command(argv)
        if done.returncode != 2:
            raise RuntimeError(
                f"plan exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}"
            )
        doc = json.loads(done.stdout)
        if (doc["counts"]["add"], doc["counts"]["remove"]) != (len(add), len(remove)):
            raise RuntimeError(f"the plan is not the file's change: {doc['counts']}")
        walls.append(done.wall_s)
        peaks.append(done.peak_rss_mb)
        figure("aclstore plan (a process)", done.wall_s,
               f"s, peak RSS {done.peak_rss_mb:.0f} MB, {len(doc['widened'])} widened and "
               f"{len(doc['narrowed'])} narrowed set(s)")  # fmt: skip
    figure("aclstore plan, median", median(walls), f"s (peak RSS at most {max(peaks):.0f} MB)")
    return median(walls)


def _watch_delay(node: _Server, path: Path, data: Path, prefix: str, rng: random.Random) -> float:
    argv = aclstore_argv("drift", "-f", str(path), "--data-dir", str(data), "--watch", "--format", "json",
                         "--interval", "0.05")  # fmt: skip
    watcher = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows: queue.Queue[dict[str, object]] = queue.Queue()
    ready = threading.Event()

    def pump_out() -> None:
        for line in watcher.stdout or []:
            rows.put(json.loads(line))

    def pump_err() -> None:
        for line in watcher.stderr or []:
            if line.startswith("watching"):
                ready.set()

    threading.Thread(target=pump_out, daemon=True).start()
    threading.Thread(target=pump_err, daemon=True).start()
    delays: list[float] = []
    try:
        if not ready.wait(300):
            raise RuntimeError("drift --watch did not start watching within 300 s")
        started = time.perf_counter()
        while time.perf_counter() - started < 5.0:  # the drift there already (the file's 1 %)
            try:
                rows.get(timeout=1.0)
            except queue.Empty:
                break
        with StoreClient(ClientConfig(url=node.url, token=node.token, timeout_s=60.0)) as client:
            for i in range(CHANGES):
                sneaked = AclBinding.of(ResourceType.TOPIC, f"{prefix}oob{i}-{rng.randrange(10**9)}",
                                        PatternType.LITERAL, "User:oob", "*", AclOperation.WRITE,
                                        AclPermissionType.ALLOW)  # fmt: skip
                sent = time.perf_counter()
                client.create_acls([sneaked])
                while True:
                    row = rows.get(timeout=30)
                    binding = row.get("binding")
                    if row.get("alert") == "drift" and isinstance(binding, dict) \
                            and binding.get("resourceName") == sneaked.name:  # fmt: skip
                        break
                delays.append(time.perf_counter() - sent)
                figure("out-of-band change to its alert", delays[-1], "s")
                time.sleep(0.5)
    finally:
        watcher.terminate()
        watcher.wait(timeout=20)
    figure("drift --watch delay, median", median(delays), f"s (worst {max(delays):.3f} s)")
    return max(delays)
