"""``python -m bench writes``: the write path's throughput and create-to-ack latency.

Measures ``AclAdmin.create_acls`` end to end (catch-up to the high watermark, validation,
authorization of the caller, encoding, the append acknowledged by the log) on the real broker
(``KAFKA_BOOTSTRAP_SERVERS``, else a LocalKafka started here) and on the embedded log:

* batched creates (bindings/s) - TARGET ``create_batched`` on Kafka, >= 20000;
* single creates, one binding per call: throughput, and the call's latency p50/p99 - TARGET
  ``create_p99`` on Kafka, <= 20 ms.
"""

from __future__ import annotations

import tempfile
import time
import uuid

from bench.report import Target, figure, percentile
from devtools.kafka_process import bootstrap_or_local_broker
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.admin import AclAdmin
from store.log import ChangeLog, EmbeddedChangeLog, KafkaChangeLog

ADMIN = "User:bench-admin"
_OPS = [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]


def bindings(prefix: str, count: int) -> list[AclBinding]:
    """Distinct bindings: a mix of LITERAL and PREFIXED topics and groups, ALLOW and DENY."""
    out = []
    for i in range(count):
        pattern = PatternType.PREFIXED if i % 5 == 0 else PatternType.LITERAL
        rt = ResourceType.GROUP if i % 3 == 0 else ResourceType.TOPIC
        perm = AclPermissionType.DENY if i % 7 == 0 else AclPermissionType.ALLOW
        out.append(
            AclBinding.of(rt, f"{prefix}-{i // 4}", pattern, f"User:app-{i % 97}", "*", _OPS[i % 4], perm)
        )
    return out


def measure_batched(log: ChangeLog, total: int, batch: int) -> tuple[float, float]:
    """(bindings per second through create_acls in batches of ``batch``, first call in ms).

    The first call (connections, the idempotent producer's id, a cold broker) is timed apart
    and kept out of the sustained rate, as the single-create measurement warms up too.
    """
    admin = AclAdmin(log, super_users=[ADMIN])
    run_id = uuid.uuid4().hex[:6]
    work = bindings(f"batched-{run_id}", total)
    admin.sync(timeout=600)
    t0 = time.perf_counter()
    admin.create_acls(bindings(f"warmup-{run_id}", batch), actor=ADMIN, timeout=120)
    first_ms = (time.perf_counter() - t0) * 1000
    started = time.perf_counter()
    for start in range(0, total, batch):
        result = admin.create_acls(work[start : start + batch], actor=ADMIN)
        assert result.records_written == len(work[start : start + batch])
    return total / (time.perf_counter() - started), first_ms


def measure_single(log: ChangeLog, count: int) -> tuple[float, list[float]]:
    """(calls per second, per-call latency in ms) of one-binding create_acls calls."""
    admin = AclAdmin(log, super_users=[ADMIN])
    admin.sync(timeout=600)  # replay what the batched run wrote, outside the measurement
    work = bindings(f"single-{uuid.uuid4().hex[:6]}", count + 20)
    for binding in work[:20]:  # warm up connections and the consumer position
        admin.create_acls([binding], actor=ADMIN)
    latencies = []
    started = time.perf_counter()
    for binding in work[20:]:
        t0 = time.perf_counter()
        admin.create_acls([binding], actor=ADMIN)
        latencies.append((time.perf_counter() - t0) * 1000)
    return count / (time.perf_counter() - started), latencies


def run_on(label: str, log: ChangeLog, total: int, batch: int, singles: int) -> tuple[float, float]:
    print(f"{label}:", flush=True)
    rate, first_ms = measure_batched(log, total, batch)
    figure(f"{label} first batched call ({batch} bindings, connecting)", first_ms, "ms")
    figure(f"{label} create batched ({batch}/call, {total} bindings)", rate, "bindings/s")
    single_rate, latencies = measure_single(log, singles)
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    figure(f"{label} create single ({singles} calls)", single_rate, "calls/s")
    figure(f"{label} create-to-ack p50", p50, "ms")
    figure(f"{label} create-to-ack p99", p99, "ms")
    return rate, p99


def run(quick: bool) -> list[Target]:
    total, batch, singles = (20_000, 1_000, 500) if quick else (200_000, 2_000, 3_000)
    with (
        tempfile.TemporaryDirectory(prefix="bench-writes-embedded-") as data_dir,
        EmbeddedChangeLog(data_dir) as embedded,
    ):
        run_on("embedded", embedded, total, batch, singles)
    topic = f"bench-writes-{uuid.uuid4().hex[:8]}"
    with bootstrap_or_local_broker("bench-writes") as bootstrap, KafkaChangeLog(bootstrap, topic) as kafka:
        rate, p99 = run_on("kafka", kafka, total, batch, singles)
    return [
        Target("create_batched", rate, "bindings/s", 20_000),
        Target("create_p99", p99, "ms", 20, higher_is_better=False),
    ]
