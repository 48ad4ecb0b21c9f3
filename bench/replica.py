"""``python -m bench replica``: a replica's bootstrap, restart, lookups, freshness and memory.

On the real broker (``KAFKA_BOOTSTRAP_SERVERS``, else a LocalKafka started here):

* cold bootstrap of N bindings (1,000,000; 100,000 with ``--quick``) pre-filled with a raw
  batched producer of properly encoded ``AclCreated`` events - TARGET ``bootstrap``
  (events/s, >= 50000), in a child process so its memory is the replica's alone;
* resident memory of that process at N bindings - TARGET ``rss_1m`` (MB, <= 500);
* warm restart: open the index and be ready, no replay - TARGET ``warm_restart`` (s, <= 2);
* authorize throughput from the RocksDB index, cache cold (every resource new) and warm;
* create-to-visible latency at two replicas (append acknowledged, then applied by both),
  p50/p99 - TARGET ``visible_p99`` (ms, <= 50).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench.produce import produce_events
from bench.report import Target, figure, percentile
from devtools.kafka_process import bootstrap_or_local_broker
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import codec_named, event_key
from store.events import AclCreated

_OPS = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALTER)


def bench_binding(i: int) -> AclBinding:
    """The i-th distinct binding: topics and groups, a fifth PREFIXED, a seventh DENY."""
    return AclBinding.of(
        ResourceType.GROUP if i % 3 == 0 else ResourceType.TOPIC,
        f"svc-{i // 4:07d}.events",
        PatternType.PREFIXED if i % 5 == 0 else PatternType.LITERAL,
        f"User:app-{i % 997}",
        "*",
        _OPS[i % 4],
        AclPermissionType.DENY if i % 7 == 0 else AclPermissionType.ALLOW,
    )


def prefill(bootstrap: str, topic: str, count: int) -> float:
    """Produce ``count`` encoded AclCreated events fast (batched, lz4); return events/s."""
    return produce_events(
        bootstrap,
        topic,
        (
            AclCreated(binding=bench_binding(i), actor="User:bench", request_id="b", time_ms=i)
            for i in range(count)
        ),
    )


# --- child processes: the replica alone in its process --------------------------------------


def _rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 1e6


def child_bootstrap(bootstrap: str, topic: str, index_dir: str) -> dict[str, float]:
    from replicator.replica import Replica, ReplicaSettings
    from store.log import KafkaChangeLog

    log = KafkaChangeLog(bootstrap, topic, create_topic=False)
    started = time.perf_counter()
    replica = Replica.open(index_dir, log, ReplicaSettings(batch_records=20_000))
    if not replica.wait_until_ready(3600):
        raise RuntimeError("the replica did not finish its bootstrap")
    wall = time.perf_counter() - started
    events = replica.position.offset + 1
    out = {"wall_s": wall, "events": events, "bindings": replica.status().bindings,
           "rss_mb": _rss_mb()}  # fmt: skip
    replica.close()
    log.close()
    return out


def child_warm(bootstrap: str, topic: str, index_dir: str, count: int) -> dict[str, float]:
    from replicator.replica import Replica
    from store.authorizer import Action
    from store.log import KafkaChangeLog

    log = KafkaChangeLog(bootstrap, topic, create_topic=False)
    started = time.perf_counter()
    replica = Replica.open(index_dir, log)
    if not replica.wait_until_ready(60):
        raise RuntimeError("the restarted replica did not become ready")
    warm = time.perf_counter() - started
    rng = random.Random(3)

    def request(i: int) -> tuple[str, list[Action]]:
        b = bench_binding(i)
        return b.principal, [Action(b.operation, b.resource_type, b.name + rng.choice(["", "-x"]))]

    def rate(requests: list[tuple[str, list[Action]]]) -> float:
        began = time.perf_counter()
        for principal, actions in requests:
            replica.authorize(principal, "10.0.0.1", actions)
        return len(requests) / (time.perf_counter() - began)

    cold = rate([request(rng.randrange(count)) for _ in range(20_000)])
    hot = [request(rng.randrange(count)) for _ in range(200)]
    rate(hot)  # fill the cache
    warm_rate = rate(hot * 100)
    out = {"warm_restart_s": warm, "authorize_cold": cold, "authorize_warm": warm_rate,
           "rss_mb": _rss_mb()}  # fmt: skip
    replica.close()
    log.close()
    return out


def _in_child(*args: str) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.replica", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"bench child {args[0]} failed: {proc.stderr[-2000:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# --- create-to-visible at two replicas ------------------------------------------------------


def visible_latency(bootstrap: str, workdir: Path, samples: int) -> tuple[list[float], list[float]]:
    """(ms until both replicas applied each acknowledged create, ms of the append alone)."""
    from replicator.replica import Replica
    from store.log import KafkaChangeLog

    topic = f"bench-visible-{uuid.uuid4().hex[:8]}"
    writer = KafkaChangeLog(bootstrap, topic)
    logs = [KafkaChangeLog(bootstrap, topic, create_topic=False) for _ in range(2)]
    replicas = [Replica.open(workdir / f"visible-{i}", log) for i, log in enumerate(logs)]
    codec = codec_named("avro")
    visible: list[float] = []
    acked: list[float] = []
    try:
        for replica in replicas:
            replica.wait_until_ready(30)
        rng = random.Random(9)
        for i in range(samples + 10):
            event = AclCreated(
                binding=bench_binding(5_000_000 + i), actor="User:b", request_id="v", time_ms=i
            )
            began = time.perf_counter()
            offset = writer.append([(event_key(event), codec.encode(event))])[0]
            done = time.perf_counter()
            for replica in replicas:
                if replica.index.wait_applied(offset, 10).offset < offset:
                    raise RuntimeError(f"a replica did not apply offset {offset} within 10 s")
            if i >= 10:  # warm-up excluded
                acked.append((done - began) * 1000)
                visible.append((time.perf_counter() - began) * 1000)
            time.sleep(rng.uniform(0.0, 0.01))
    finally:
        for replica in replicas:
            replica.close()
        for log in [*logs, writer]:
            log.close()
    return visible, acked


def run(quick: bool) -> list[Target]:
    count = 100_000 if quick else 1_000_000
    samples = 150 if quick else 400
    print(f"replica bench: {count} bindings, {samples} visibility samples", flush=True)
    with (
        bootstrap_or_local_broker("bench-replica", heap="1g") as bootstrap,
        tempfile.TemporaryDirectory(prefix="bench-rep-") as tmp,
    ):
        work = Path(tmp)
        topic = f"bench-replica-{uuid.uuid4().hex[:8]}"
        figure("prefill (raw batched producer)", prefill(bootstrap, topic, count), "events/s")
        boot = _in_child("bootstrap", bootstrap, topic, str(work / "index"))
        if int(boot["bindings"]) != count:
            raise RuntimeError(f"bootstrap built {boot['bindings']} bindings, not {count}")
        rate = boot["events"] / boot["wall_s"]
        figure("cold bootstrap wall time", boot["wall_s"], "s")
        figure("cold bootstrap", rate, "events/s")
        figure("RSS after bootstrap", boot["rss_mb"], "MB")
        warm = _in_child("warm", bootstrap, topic, str(work / "index"), str(count))
        figure("warm restart (open + ready)", warm["warm_restart_s"], "s")
        figure("authorize, cache cold", warm["authorize_cold"], "calls/s")
        figure("authorize, cache warm", warm["authorize_warm"], "calls/s")
        figure("RSS after restart and lookups", warm["rss_mb"], "MB")
        visible, acked = visible_latency(bootstrap, work, samples)
        figure("append acknowledged p50", percentile(acked, 50), "ms")
        figure("create-to-visible at two replicas p50", percentile(visible, 50), "ms")
        figure("create-to-visible at two replicas p99", percentile(visible, 99), "ms")
    rss = max(boot["rss_mb"], warm["rss_mb"])
    scale = "" if count == 1_000_000 else f" (at {count} bindings, --quick)"
    if scale:
        print(f"  note: rss_1m and warm_restart measured{scale}", flush=True)
    return [
        Target("bootstrap", rate, "events/s", 50_000),
        Target("warm_restart", warm["warm_restart_s"], "s", 2, higher_is_better=False),
        Target("visible_p99", percentile(visible, 99), "ms", 50, higher_is_better=False),
        Target("rss_1m", rss, "MB", 500, higher_is_better=False),
    ]


def _main(argv: list[str]) -> None:
    kind = argv[0]
    if kind == "bootstrap":
        result = child_bootstrap(argv[1], argv[2], argv[3])
    elif kind == "warm":
        result = child_warm(argv[1], argv[2], argv[3], int(argv[4]))
    else:
        raise SystemExit(f"unknown bench child {kind!r}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    threading.current_thread().name = "bench-replica-child"
    _main(sys.argv[1:])
