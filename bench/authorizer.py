"""``python -m bench authorizer``: our decision rules against Kafka's ``StandardAuthorizer``.

The workload is Kafka's own ``AuthorizerBenchmark`` (jmh-benchmarks, ``acl`` package):
resources ``foo-bar35_resource-N``, every 5th PREFIXED and every 10th a GROUP, each with one
READ ALLOW per principal ``User:test-user``, ``User:test-user1``... and a READ DENY with the
given probability; ten PREFIXED ``foo-bar35_resource-`` ACLs by host and resources/10
wildcard ``*`` ACLs by (dot-less) host.  ``authorize`` asks WRITE on TOPIC
``foo-bar35_resource-95`` (no ACL covers it: the worst case, every ACL that applies is
read); ``authorize_by_resource_type`` asks READ on TOPIC from host 127.0.0.2.

Both sides build the very same ACLs (deny choices from a shared splitmix64) in the same run;
Kafka's side runs in ``tests/java/KafkaAuthorizerHarness.java``, timed inside the JVM after a
warm-up.  TARGET lines take the worst ratio over the sizes.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.report import Target, figure
from store.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from store.authorizer import (
    Action,
    AuthorizerConfig,
    InMemoryAclIndex,
    authorize,
    authorize_by_resource_type,
)
from store.principal import KafkaPrincipal

JAVA_DIR = Path(__file__).resolve().parents[1] / "tests" / "java"
HARNESS = "KafkaAuthorizerHarness"
PREFIX = "foo-bar35_resource-"
PRINCIPAL = "User:test-user"
SEED = 20240611
_MASK = (1 << 64) - 1


# --- Kafka's side: the Java harness ----------------------------------------------------------


class KafkaHarness:
    """Compiles ``tests/java/KafkaAuthorizerHarness.java`` against the Kafka jars and runs it."""

    def __init__(self) -> None:
        from devtools.java import compile_harness
        from devtools.maven import kafka_classpath

        self.classpath = kafka_classpath()
        self.build = compile_harness(JAVA_DIR / f"{HARNESS}.java", self.classpath)

    def _java(self, args: Sequence[str], timeout: float, heap: str = "1g") -> str:
        from devtools.java import run_harness

        return run_harness(self.build, HARNESS, self.classpath, args, timeout=timeout, heap=heap)

    def run_cases(self, scenarios: Sequence[dict[str, Any]], work_dir: Path) -> list[list[str]]:
        """Kafka's answers for each scenario's queries (see the Java file for the format)."""
        path = work_dir / "scenarios.jsonl"
        path.write_text("".join(json.dumps(s) + "\n" for s in scenarios))
        out = self._java(["cases", str(path)], timeout=600)
        answers = [json.loads(line) for line in out.splitlines() if line.strip()]
        if len(answers) != len(scenarios):
            raise RuntimeError(f"harness answered {len(answers)} of {len(scenarios)} scenarios")
        return answers

    def bench(self, resources: int, acls: int, deny_percent: float, measure_ms: int) -> dict[str, Any]:
        out = self._java(
            ["bench", str(resources), str(acls), str(deny_percent), str(SEED), str(measure_ms)],
            timeout=900,
            heap="6g",
        )
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result


# --- our side ------------------------------------------------------------------------------


def _mix(z: int) -> int:
    """splitmix64, bit for bit as ``KafkaAuthorizerHarness.mix``."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def should_deny(resource: int, acl: int, deny_percent: float) -> bool:
    bits = _mix((SEED * 1_000_003 + resource * 65_537 + acl) & _MASK) >> 11
    return bits * 2.0**-53 * 100.0 < deny_percent


def _entries(principal: str, host: str) -> tuple[AccessControlEntry, AccessControlEntry]:
    def entry(permission: AclPermissionType) -> AccessControlEntry:
        return AccessControlEntry(
            principal=principal, host=host, operation=AclOperation.READ, permission_type=permission
        )

    return entry(AclPermissionType.ALLOW), entry(AclPermissionType.DENY)


def build_index(resources: int, acls: int, deny_percent: float) -> InMemoryAclIndex:
    """The AuthorizerBenchmark ACLs, sharing pattern and entry objects as a decoder would."""
    index = InMemoryAclIndex()
    add = index.add
    per_acl = [_entries(PRINCIPAL + ("" if a == 0 else str(a)), "*") for a in range(acls)]
    for r in range(resources):
        pattern = ResourcePattern(
            resource_type=ResourceType.GROUP if r % 10 == 0 else ResourceType.TOPIC,
            name=PREFIX + str(r),
            pattern_type=PatternType.PREFIXED if r % 5 == 0 else PatternType.LITERAL,
        )
        for a, (allow, deny) in enumerate(per_acl):
            add(AclBinding(pattern=pattern, entry=allow))
            if should_deny(r, a, deny_percent):
                add(AclBinding(pattern=pattern, entry=deny))
    prefix = ResourcePattern(resource_type=ResourceType.TOPIC, name=PREFIX, pattern_type=PatternType.PREFIXED)
    wildcard = ResourcePattern(resource_type=ResourceType.TOPIC, name="*")
    hosts = [(-1, h, prefix, f"127.0.0.{h}") for h in range(10)]
    # AuthorizerBenchmark's wildcard hosts have no last dot ("127.0.0" + h) and skip 127.0.0.2
    wildcard_hosts = ((h, f"127.0.0{h}") for h in range(resources // 10))
    hosts += [(-2, h, wildcard, host) for h, host in wildcard_hosts if host != "127.0.0.2"]
    for resource, h, pattern, host in hosts:
        allow, deny = _entries(PRINCIPAL, host)
        add(AclBinding(pattern=pattern, entry=allow))
        if should_deny(resource, h, deny_percent):
            add(AclBinding(pattern=pattern, entry=deny))
    index.prepare_by_resource_type()  # counted in the build time and memory, as a broker's would be
    return index


def calls_per_second(call: Callable[[], object], measure_s: float) -> float:
    """Warm up for half of ``measure_s``, then count calls for ``measure_s`` (at least 3)."""
    end = time.perf_counter() + measure_s / 2
    while time.perf_counter() < end:
        call()
    calls, begin = 0, time.perf_counter()
    end = begin + measure_s
    while True:
        for _ in range(100):
            call()
        calls += 100
        now = time.perf_counter()
        if now >= end:
            return calls / (now - begin)


@dataclass(frozen=True, slots=True)
class OurRun:
    bindings: int
    build_seconds: float
    bytes_per_binding: float
    authorize_per_second: float
    authorize_result: str
    by_type_per_second: float
    by_type_result: str


def run_ours(resources: int, acls: int, deny_percent: float, measure_s: float) -> OurRun:
    gc.collect()
    process = psutil.Process()
    rss_before = process.memory_info().rss
    start = time.perf_counter()
    index = build_index(resources, acls, deny_percent)
    build_seconds = time.perf_counter() - start
    gc.collect()
    bytes_per_binding = (process.memory_info().rss - rss_before) / len(index)
    authorize_rate, authorize_result, by_type_rate, by_type_result = _measure(index, measure_s)
    bindings = len(index)
    del index
    gc.collect()
    return OurRun(
        bindings=bindings,
        build_seconds=build_seconds,
        bytes_per_binding=bytes_per_binding,
        authorize_per_second=authorize_rate,
        authorize_result=authorize_result,
        by_type_per_second=by_type_rate,
        by_type_result=by_type_result,
    )


def _measure(index: InMemoryAclIndex, measure_s: float) -> tuple[float, str, float, str]:
    config = AuthorizerConfig()
    principal = KafkaPrincipal.parse(PRINCIPAL)
    actions = [Action(AclOperation.WRITE, ResourceType.TOPIC, PREFIX + "95")]

    def one_authorize() -> str:
        return authorize(index, config, principal, "127.0.0.1", actions)[0].result.value

    def one_by_type() -> str:
        return authorize_by_resource_type(
            index, config, principal, "127.0.0.2", AclOperation.READ, ResourceType.TOPIC
        ).result.value

    return (
        calls_per_second(one_authorize, measure_s),
        one_authorize(),
        calls_per_second(one_by_type, measure_s),
        one_by_type(),
    )


# --- the run -------------------------------------------------------------------------------

FULL = [(r, a, d) for r in (10_000, 50_000) for a in (10, 50) for d in (0, 20, 90)] + [
    (200_000, 10, d) for d in (0, 20, 90)
]
"""AuthorizerBenchmark's sizes; 200k resources with 50 ACLs each (up to 19M bindings) is left
out to fit a shared machine's memory and the 15-minute budget."""
QUICK = [(2_000, 10, 0), (2_000, 10, 20), (2_000, 10, 90), (10_000, 50, 20)]


def run(quick: bool) -> list[Target]:
    sizes = QUICK if quick else FULL
    measure_s = 1.0 if quick else 1.5
    harness = KafkaHarness()
    authorize_ratios: list[float] = []
    by_type_ratios: list[float] = []
    print(f"authorizer: {len(sizes)} workloads, AuthorizerBenchmark-shaped", flush=True)
    for resources, acls, deny in sizes:
        ours = run_ours(resources, acls, deny, measure_s)
        kafka = harness.bench(resources, acls, deny, int(measure_s * 1000))
        answers = (kafka["authorize_result"], kafka["by_type_result"])
        if (ours.authorize_result, ours.by_type_result) != answers:
            raise RuntimeError(f"answers differ from Kafka's: {ours} vs {kafka}")
        if ours.bindings != kafka["acls"]:
            raise RuntimeError(f"built {ours.bindings} bindings, Kafka {kafka['acls']}: workloads differ")
        auth_ratio = ours.authorize_per_second / kafka["authorize_per_second"]
        type_ratio = ours.by_type_per_second / kafka["by_type_per_second"]
        authorize_ratios.append(auth_ratio)
        by_type_ratios.append(type_ratio)
        print(
            f"{resources} resources x {acls} ACLs, {deny}% deny: {ours.bindings} bindings "
            f"(built in {ours.build_seconds:.1f}s ours, {kafka['build_seconds']:.1f}s Kafka)",
            flush=True,
        )
        figure("authorize ours", ours.authorize_per_second, "decisions/s")
        figure("authorize Kafka", kafka["authorize_per_second"], "decisions/s")
        figure("authorize ratio ours/Kafka", auth_ratio, "x")
        figure("authorize_by_resource_type ours", ours.by_type_per_second, "decisions/s")
        figure("authorize_by_resource_type Kafka", kafka["by_type_per_second"], "decisions/s")
        figure("authorize_by_resource_type ratio ours/Kafka", type_ratio, "x")
        figure("memory ours (RSS growth)", ours.bytes_per_binding, "bytes/binding")
        figure("memory Kafka (heap growth)", kafka["heap_bytes"] / kafka["acls"], "bytes/binding")
    return [
        Target("authorize", min(authorize_ratios), "x Kafka (worst workload)", 1.0),
        Target("authorize_by_resource_type", min(by_type_ratios), "x Kafka (worst workload)", 100.0),
    ]


if __name__ == "__main__":
    from bench.report import print_targets

    print_targets(run(quick="--quick" in sys.argv))
