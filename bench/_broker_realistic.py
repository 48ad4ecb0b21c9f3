"""The realistic half of ``bench broker``: many principals and topics, ACLs changing meanwhile.

See :mod:`bench.broker` for what is measured and why; :mod:`bench._broker_workload` for the
ACLs, the traffic and the changes.
"""

from __future__ import annotations

import multiprocessing
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import psutil

from bench import _broker_workload as workload
from bench._broker_figures import SidecarScrape, plugin_metrics
from bench.process import load_average
from bench.report import Target, figure, percentile
from devtools.kafka_process import LocalKafka

CHANGES_PER_S = 20.0
ADMIN_CLIENTS = 4
"""Admin connections per broker the ACL changes are spread over."""
ADMIN_TIMEOUT_S = 600.0
"""How long one ACL change may wait for its broker.  A StandardAuthorizer broker holding the
workload's ACLs acknowledges fewer than 20 changes/s on a busy 2-core machine (each costs it
tens of ms of CPU), so up to the stream's ``live`` changes queue there for tens of seconds:
the default (``socket.timeout.ms``, 60 s) failed a run."""
STANDARD = "StandardAuthorizer"
PLUGIN = "aclstore"


@dataclass(frozen=True, slots=True)
class Sizes:
    teams: int
    """Teams sending traffic (two producing principals and 20 existing topics each)."""
    rounds: int
    records: int
    """Records per broker per round."""

    @staticmethod
    def of(quick: bool) -> Sizes:
        return Sizes(teams=15, rounds=3, records=500) if quick else Sizes(100, 5, 2000)


def users(traffic: workload.Traffic) -> dict[str, str]:
    """SASL/PLAIN users (name -> password) for the producing principals."""
    return {p.removeprefix("User:"): p.removeprefix("User:") + "-secret" for p in traffic.writable}


def _create_topics(broker: LocalKafka, names: Sequence[str]) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient(broker.client_config("admin"))
    for start in range(0, len(names), 500):
        batch = [NewTopic(name, 1, 1) for name in names[start : start + 500]]
        for future in admin.create_topics(batch, operation_timeout=120).values():
            future.result(timeout=180)
    deadline = time.monotonic() + 120
    while True:  # every partition has its leader before the first produce
        topics = admin.list_topics(timeout=30).topics
        waiting = [n for n in names if n not in topics or topics[n].partitions.get(0) is None
                   or topics[n].partitions[0].leader < 0]  # fmt: skip
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(waiting)} new topics have no leader yet, e.g. {waiting[:3]}")
        time.sleep(0.5)


def _producer(broker: LocalKafka, user: str, topic: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer({
        **broker.client_config(user), "acks": 1, "linger.ms": 0, "enable.idempotence": False,
        "message.timeout.ms": 10_000,
    })  # fmt: skip
    producer.list_topics(topic, timeout=30)  # connected and authenticated before any timing
    return producer


def _warm(producers: Mapping[str, Any], traffic: workload.Traffic, broker: str) -> None:
    """Every principal produces once to each of its topics (metadata fetched, JIT warm); what
    timed out on a busy machine is sent again, twice at most."""
    todo = [(who, name) for who in producers for name in traffic.writable[who]]
    failed: list[tuple[str, str, str]] = []
    for _ in range(3):
        failed.clear()
        for who, name in todo:
            producers[who].produce(name, value=b"w", on_delivery=lambda err, msg, who=who: (
                failed.append((who, msg.topic(), str(err))) if err is not None else None))  # fmt: skip
        for producer in producers.values():
            producer.flush(60)
        if not failed:
            return
        todo = [(who, name) for who, name, _ in failed]
    raise RuntimeError(f"warm-up produces through the {broker} broker failed: {failed[:5]}")


def apply_changes(
    configs: dict[str, dict[str, Any]],
    writable: dict[str, tuple[str, ...]],
    rate: float,
    seed: int,
    start: Any,
    stop: Any,
    report: Any,
) -> None:
    """Offer ``rate`` ACL changes/s to each broker in ``configs`` (as its admin, through the
    Kafka Admin API, as an operator's tooling does) from ``start`` until ``stop`` is set; a
    process of its own.  Each broker gets the same changes in the same order on its own
    schedule, the second half a period after the first (so changes reach the two alternately),
    sent without waiting for the changes before them from :data:`ADMIN_CLIENTS` clients in
    turn, as independent tools would (a broker answers one connection's requests one at a
    time).  A delete is sent once that broker acknowledged the create, and must remove exactly
    the one binding: a broker that falls more than the stream's ``live`` changes behind is
    offered fewer.  Puts ``{broker: (changes acknowledged, seconds, [ms per change])}``, or
    the first error, on ``report``.  ``seed`` draws the stream of changes."""
    import threading

    results: dict[str, tuple[int, float, list[float]]] = {}
    errors: list[BaseException] = []

    def feed(name: str, config: dict[str, Any], offset_s: float) -> None:
        try:
            results[name] = _feed(config, writable, rate, seed, offset_s, start, stop)
        except BaseException as exc:  # reported to the parent, which fails the run
            errors.append(exc)
            stop.set()

    threads = [
        threading.Thread(target=feed, args=(name, config, i * 0.5 / rate))
        for i, (name, config) in enumerate(configs.items())
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.put(repr(errors[0]) if errors else results)


def _feed(
    config: dict[str, Any],
    writable: dict[str, tuple[str, ...]],
    rate: float,
    seed: int,
    offset_s: float,
    start: Any,
    stop: Any,
) -> tuple[int, float, list[float]]:
    from confluent_kafka.admin import AdminClient

    pool = [AdminClient(config) for _ in range(ADMIN_CLIENTS)]
    stream = workload.changes(workload.Traffic(writable), workload.bindings(), random.Random(seed))
    latencies: list[float] = []
    created: dict[tuple[str, ...], Any] = {}
    in_flight: list[tuple[str, Mapping[str, str], Any]] = []

    def settle(kind: str, binding: Mapping[str, str], future: Any) -> None:
        outcome = future.result(timeout=ADMIN_TIMEOUT_S)
        if kind == "delete" and len(outcome) != 1:
            raise RuntimeError(f"{config['bootstrap.servers']} deleted {len(outcome)} bindings "
                               f"for {binding}")  # fmt: skip

    def timed(sent: float) -> Any:
        return lambda _: latencies.append((time.perf_counter() - sent) * 1000)

    start.wait()
    started = time.perf_counter()
    next_at = started + offset_s
    sent_count = 0
    while True:
        pause = next_at - time.perf_counter()
        if stop.wait(pause) if pause > 0 else stop.is_set():
            break
        kind, binding = next(stream)
        admin = pool[sent_count % ADMIN_CLIENTS]
        if kind == "create":
            future = next(iter(admin.create_acls([workload.kafka_acl(binding)],
                                                   request_timeout=ADMIN_TIMEOUT_S).values()))
            created[tuple(binding.values())] = future
        else:
            created.pop(tuple(binding.values())).result(timeout=ADMIN_TIMEOUT_S)
            future = next(iter(admin.delete_acls([workload.kafka_acl(binding, as_filter=True)],
                                                   request_timeout=ADMIN_TIMEOUT_S).values()))
        future.add_done_callback(timed(time.perf_counter()))
        in_flight.append((kind, binding, future))
        while in_flight and in_flight[0][2].done():
            settle(*in_flight.pop(0))
        sent_count += 1
        next_at += 1.0 / rate
    elapsed = time.perf_counter() - started
    acknowledged = sent_count - sum(1 for *_, future in in_flight if not future.done())
    for item in in_flight:
        settle(*item)
    return acknowledged, elapsed, latencies


@dataclass(frozen=True, slots=True)
class Phase:
    """One measured phase: produce latencies per broker, and what the sidecar and the plugin
    counted meanwhile."""

    samples: dict[str, list[float]]
    seconds: float
    sidecar: SidecarScrape
    plugin: dict[str, float]
    """The plugin's counters' growth over the phase."""
    cpu: dict[str, float]
    """CPU seconds each process (the two brokers, the sidecar) used over the phase."""

    def ratios(self, sizes: Sizes) -> list[float]:
        """The plugin broker's p99 over StandardAuthorizer's, per round of ``sizes.records``."""
        out = []
        for r in range(sizes.rounds):
            window = slice(r * sizes.records, (r + 1) * sizes.records)
            out.append(percentile(self.samples[PLUGIN][window], 99)
                       / percentile(self.samples[STANDARD][window], 99))  # fmt: skip
        return out

    def report(self, label: str, sizes: Sizes) -> float:
        """Print the phase's figures; the median of its per-round p99 ratios."""
        print(f"  {label}:", flush=True)
        for name, values in self.samples.items():
            print(f"    produce via {name}: p50 {percentile(values, 50):.2f} ms, p99 "
                  f"{percentile(values, 99):.2f} ms, p99.9 {percentile(values, 99.9):.2f} ms "
                  f"({len(values)} records)", flush=True)  # fmt: skip
        ratios = self.ratios(sizes)
        ratio = statistics.median(ratios)
        overall = percentile(self.samples[PLUGIN], 99) / percentile(self.samples[STANDARD], 99)
        print(f"    p99 ratio per round of {sizes.records} records: "
              + ", ".join(f"{r:.2f}" for r in ratios)
              + f" (median {ratio:.2f}, spread {min(ratios):.2f}-{max(ratios):.2f}; "
              f"over all records {overall:.2f})", flush=True)  # fmt: skip
        figure("  sidecar decisions", self.sidecar.decisions / self.seconds, "decisions/s")
        figure("  sidecar authorize p50 / p99", self.sidecar.quantile(0.50) * 1000,
               f"/ {self.sidecar.quantile(0.99) * 1000:.2f} ms (its /metrics histogram)")  # fmt: skip
        hits = self.plugin.get("decision-cache-hits-total", 0.0)
        misses = self.plugin.get("decision-cache-misses-total", 0.0)
        calls = self.plugin.get("sidecar-calls-total", 0.0)
        figure("  plugin cache hit rate", 100 * hits / max(1.0, hits + misses),
               f"% ({hits:.0f} hits; {misses:.0f} actions asked the sidecar in "
               f"{calls:.0f} calls)")  # fmt: skip
        if calls and self.sidecar.requests:
            # Where a miss's time goes: the broker's request thread waits for the whole round
            # trip; the sidecar's histogram holds the part from parsing the request to the
            # answer; the rest is the transport and the sidecar's HTTP server.
            trip = self.plugin.get("sidecar-call-time-ns-total", 0.0) / calls / 1e6
            inside = 1000 * self.sidecar.seconds / self.sidecar.requests
            figure("  plugin's mean round trip to the sidecar", trip,
                   f"ms, of which {inside:.3f} ms inside the sidecar's handler and "
                   f"{trip - inside:.3f} ms transport and HTTP")  # fmt: skip
        records = len(self.samples[PLUGIN])
        print("    CPU used meanwhile: " + ", ".join(
            f"{name} {seconds / self.seconds:.2f} cores ({1000 * seconds / records:.2f} ms "
            "per record)" for name, seconds in self.cpu.items()
        ), flush=True)  # fmt: skip
        denied = self.plugin.get("fail-closed-denials-total", 0.0)
        if denied:
            figure("  plugin fail-closed denials", denied, "actions")
        return ratio


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of ``pid`` and its child processes."""
    process = psutil.Process(pid)
    total = 0.0
    for member in (process, *process.children(recursive=True)):
        try:
            total += sum(member.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
    return total


def _phase(
    producers: Mapping[str, Mapping[str, Any]],
    requests: Sequence[tuple[str, str]],
    sidecar_url: str,
    jmx_port: int,
    pids: Mapping[str, int],
) -> Phase:
    """Send ``requests`` through both brokers, one record at a time and waited for, the
    brokers alternating (which goes first alternates too)."""
    names = list(producers)
    plugin_before = plugin_metrics(jmx_port)
    sidecar_before = SidecarScrape.read(sidecar_url)
    cpu_before = {name: _cpu_seconds(pid) for name, pid in pids.items()}
    samples: dict[str, list[float]] = {name: [] for name in names}
    started = time.perf_counter()
    for i, (who, topic) in enumerate(requests):
        for via in names if i % 2 == 0 else names[::-1]:
            ms, code = workload.produce_ms(producers[via][who], topic)
            if code != 0:
                raise RuntimeError(f"{who}'s produce to {topic} through the {via} broker "
                                   f"failed: code {code}")  # fmt: skip
            samples[via].append(ms)
    seconds = time.perf_counter() - started
    cpu = {name: _cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
    sidecar = SidecarScrape.read(sidecar_url).since(sidecar_before)
    plugin_after = plugin_metrics(jmx_port)
    grown = {k: v - plugin_before.get(k, 0.0) for k, v in plugin_after.items()}
    return Phase(samples, seconds, sidecar, grown, cpu)


def run(
    brokers: Mapping[str, LocalKafka],
    sidecar_url: str,
    sidecar_pid: int,
    jmx_port: int,
    traffic: workload.Traffic,
    load_store: Any,
    load_standard: Any,
    quick: bool,
) -> list[Target]:
    """Load the workload's ACLs into both authorizers, create its topics, then measure produce
    latency through both brokers, first with no ACL changes, then while ACLs change;
    ``brokers`` maps :data:`STANDARD` and :data:`PLUGIN` to running brokers."""
    sizes = Sizes.of(quick)
    print(f"realistic workload (load average {load_average()})", flush=True)
    bindings = workload.bindings()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        loads = [pool.submit(load_store, bindings),
                 pool.submit(load_standard, brokers[STANDARD], bindings)]  # fmt: skip
        for load in loads:
            load.result()
    figure("bindings loaded into both authorizers", len(bindings),
           f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
    topics = traffic.topics
    started = time.perf_counter()
    for broker in brokers.values():
        _create_topics(broker, topics)
    figure("topics created on each broker", len(topics), f"in {time.perf_counter() - started:.1f} s")
    names = [STANDARD, PLUGIN]
    producers = {
        name: {who: _producer(brokers[name], who.removeprefix("User:"), traffic.writable[who][0])
               for who in traffic.principals}
        for name in names
    }  # fmt: skip
    for name in names:
        _warm(producers[name], traffic, name)
    figure("producing principals", len(traffic.writable),
           f"({traffic.pairs} principal-topic pairs over {len(topics)} topics)")  # fmt: skip
    rng = random.Random(32)
    count = sizes.rounds * sizes.records
    pids = {"sidecar": sidecar_pid}
    for name, broker in brokers.items():
        if broker.pid is None:
            raise RuntimeError(f"the {name} broker is not running")
        pids[f"{name} broker"] = broker.pid

    quiet = _phase(producers, traffic.requests(count, rng), sidecar_url, jmx_port, pids)
    quiet.report(f"no ACL changes (load average {load_average()})", sizes)

    busy = _changing(brokers, names, names, producers, traffic, sizes, rng, sidecar_url,
                     jmx_port, pids, seed=20)  # fmt: skip
    # The same, with the changes offered to the plugin's sidecar alone: the plugin broker pays
    # its cache misses while StandardAuthorizer's broker pays nothing (a stricter comparison
    # than the TARGET's, where Kafka's broker applies the same changes to its own metadata).
    _changing(brokers, names, [PLUGIN], producers, traffic, sizes, rng, sidecar_url, jmx_port,
              pids, seed=21)  # fmt: skip
    return [Target("produce_p99_ratio_realistic", busy, "x", 1.10, higher_is_better=False)]


def _changing(
    brokers: Mapping[str, LocalKafka],
    names: Sequence[str],
    changed: Sequence[str],
    producers: Mapping[str, Mapping[str, Any]],
    traffic: workload.Traffic,
    sizes: Sizes,
    rng: random.Random,
    sidecar_url: str,
    jmx_port: int,
    pids: Mapping[str, int],
    *,
    seed: int,
) -> float:
    """One phase measured while :data:`CHANGES_PER_S` ACL changes/s are offered to each broker
    in ``changed``; the median of its per-round p99 ratios."""
    context = multiprocessing.get_context("spawn")  # the producers' threads must not be forked
    begin, stop, report = context.Event(), context.Event(), context.Queue()
    configs = {name: dict(brokers[name].client_config("admin")) for name in changed}
    writer = context.Process(
        target=apply_changes,
        args=(configs, traffic.writable, CHANGES_PER_S, seed, begin, stop, report),
    )
    writer.start()
    try:
        begin.set()
        time.sleep(2.0)  # the changes are flowing before the first timed record
        phase = _phase(producers, traffic.requests(sizes.rounds * sizes.records, rng),
                       sidecar_url, jmx_port, pids)  # fmt: skip
    finally:
        stop.set()
    outcome = report.get(timeout=2 * ADMIN_TIMEOUT_S)
    writer.join(timeout=60)
    if isinstance(outcome, str) or writer.exitcode != 0:
        raise RuntimeError(f"the ACL change writer failed (exit code {writer.exitcode}): {outcome}")
    whom = "each authorizer" if list(changed) == list(names) else " and ".join(changed) + " alone"
    ratio = phase.report(f"{CHANGES_PER_S:g} ACL changes/s offered to {whom} "
                         f"(load average {load_average()})", sizes)  # fmt: skip
    for name in changed:
        acknowledged, seconds, change_ms = outcome[name]
        figure(f"  changes acknowledged by {name}", acknowledged / seconds,
               f"changes/s; from sending, p50 {percentile(change_ms, 50):.0f} ms, "
               f"p99 {percentile(change_ms, 99):.0f} ms")  # fmt: skip
    return ratio
