"""``python -m bench downgrade``: the access diff at scale.

A synthetic live state of N bindings (1,000,000; 100,000 with ``--quick``): topics and groups
under shared prefixes, 20 % PREFIXED, 20 % DENY, a wildcard ALLOW per type, principals and a
few hosts.

* the downgrade analysis to event format 1 (the older reader's state, then the exact diff,
  folded as each partition decides it, the rows :func:`store.access_diff.compact` gives) on
  Spark ``local[2]`` (:mod:`jobs.access_diff`), session start apart - TARGET ``analysis_1m``
  (s, <= 60); with ``--quick`` also the pure engine in this process, and its rows unfolded;
* a dry run of one change against the live state already indexed, as a node keeps it
  (:class:`store.access_diff.PatternIndex`): the median over single-binding changes (a
  literal ALLOW, a prefixed DENY, a literal DENY) - TARGET ``dry_run`` (ms, <= 200).

The dry run is the pure engine in this process.  The machine's load average is printed before
and after the analysis: on shared cores the times follow it.
"""

from __future__ import annotations

import os
import random
import time

from bench.report import Target, figure, median
from store.access_diff import AclState, PatternIndex, access_diff, older_reader_state
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

_OPS = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL)


def synthetic_state(size: int, seed: int = 11) -> AclState:
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
    return AclState.of(bindings)


def run(quick: bool) -> list[Target]:
    size = 100_000 if quick else 1_000_000
    state = synthetic_state(size)
    figure("bindings", len(state.bindings), "")

    from jobs.access_diff import distributed_access_diff
    from jobs.common import build_session

    started = time.perf_counter()
    spark = build_session("aclstore-bench-downgrade", conf={"spark.ui.showConsoleProgress": "false"})
    figure("Spark session start", time.perf_counter() - started, "s")
    try:
        figure("load average (1 min) before the analysis", os.getloadavg()[0], "")
        started = time.perf_counter()
        older, stopping = older_reader_state(state, 1)
        diff = distributed_access_diff(spark, state, older, depth=6, partitions=16, folded=True)
        analysis = time.perf_counter() - started
    finally:
        spark.stop()
    figure("load average (1 min) after it", os.getloadavg()[0], "")
    figure("ignored by a format-1 reader", stopping, "bindings")
    figure("widened sets (folded)", len(diff.widened), "")
    figure("narrowed sets (folded)", len(diff.narrowed), "")
    if quick:
        started = time.perf_counter()
        pure = access_diff(state, older)
        figure("the same analysis, pure engine in this process", time.perf_counter() - started, "s")
        figure("its rows unfolded", len(pure.widened) + len(pure.narrowed), "")

    started = time.perf_counter()
    index = PatternIndex(state)
    figure("index build (once, as a node keeps it)", time.perf_counter() - started, "s")
    changes = [
        AclBinding.of(ResourceType.TOPIC, "team3.app7.events", PatternType.LITERAL, "User:new",
                      "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding.of(ResourceType.TOPIC, "team5.app2.", PatternType.PREFIXED, "User:svc1",
                      "*", AclOperation.WRITE, AclPermissionType.DENY),
        AclBinding.of(ResourceType.GROUP, "team8.app1.events", PatternType.LITERAL, "User:svc2",
                      "*", AclOperation.READ, AclPermissionType.DENY),
    ]  # fmt: skip
    samples = []
    for change in changes * 3:
        started = time.perf_counter()
        index.change_diff(added=[change])
        samples.append((time.perf_counter() - started) * 1000)
    return [
        Target("analysis_1m", analysis, "s", 60, higher_is_better=False),
        Target("dry_run", median(samples), "ms", 200, higher_is_better=False),
    ]
