"""How many decisions a second the streaming audit job keeps up with on ``local[2]``.

What is measured: a producer thread appends audit events (CloudEvents as the node's sender
writes them, numbered as one spool numbers them: half denials, 1,000 principals, 1,000 topics,
event time = now) to an embedded audit log at a fixed rate, in appends every 0.1 s; the job
(:func:`jobs.audit.job.run_audit`, running, trigger every second, in this process's local[2]
Spark: a streaming job's session) parses, drops resends and writes the Delta tables each
micro-batch. The delay of an append is from its wall-clock time to the end of the first
micro-batch that covered its offset (the batch's start plus its duration in the query's
progress: the per-minute table has been committed by then). Rates are tried in increasing
order, each for a fixed time after a warm-up; a rate is kept up with when every append after
the warm-up had a delay under 10 s. ``throughput`` is the highest rate kept up with (0 when
none was); the figures beside it give each rate's delays and the job's drain rate (records over
the batches' processing time), which bounds what any rate can reach.

The producer shares the two cores with Spark (it is a node's sender in production); its
achieved rate is printed, so a producer that fell short is visible.
"""

from __future__ import annotations

import json
import math
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from bench.process import jvm_text, load_average, machine_text
from bench.report import Target, figure, percentile
from jobs.common.streaming import progress_of
from replicator.contract.audit_event import AuditEventEncoder, decision_names
from store.acl import AclOperation, ResourceType
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule
from store.log.embedded import EmbeddedChangeLog

SPOOL: Final = "be9c40000000be9c"
"""The ids' spool part: the events are numbered as one node's spool numbers them."""
MAX_DELAY_S: Final = 10.0
TICK_S: Final = 0.1
_DENIED = Decision(AuthorizationResult.DENIED, DecisionRule.DEFAULT_DENY)
_ALLOWED = Decision(AuthorizationResult.ALLOWED, DecisionRule.SUPER_USER)


class _Producer:
    """Appends requests of 100 events at ``rate`` a second; marks (end offset, wall time)."""

    def __init__(self, log: EmbeddedChangeLog) -> None:
        self.log = log
        self.encoder = AuditEventEncoder("aclstore://bench")
        self.variants = [
            [decision_names(Action(AclOperation.READ, ResourceType.TOPIC, f"topic-{(j * 100 + i) % 1000}"),
                            _DENIED if i % 2 else _ALLOWED) for i in range(100)]
            for j in range(10)
        ]  # fmt: skip
        self.seq = 0
        self.marks: list[tuple[int, float]] = []

    def run(self, rate: int, seconds: float) -> float:
        """Produce for ``seconds``; the achieved rate (events/s)."""
        per_tick = max(1, round(rate * TICK_S / 100))
        start = time.monotonic()
        produced = ticks = 0
        while time.monotonic() - start < seconds:
            now = time.time()
            records: list[tuple[bytes, bytes | None]] = []
            for r in range(per_tick):
                ids = [f"{SPOOL}{self.seq + i:016x}" for i in range(100)]
                self.seq += 100
                values = self.encoder.encode(
                    event_ids=ids, time_ns=time.time_ns(), principal=f"User:u{(self.seq // 100) % 1000}",
                    host="10.0.0.1", offset=1, decisions=self.variants[r % 10],
                )  # fmt: skip
                records.extend((i.encode(), v) for i, v in zip(ids, values, strict=True))
            offsets = self.log.append(records)
            self.marks.append((offsets[-1] + 1, now))
            produced += len(records)
            ticks += 1
            pause = start + ticks * TICK_S - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        return produced / (time.monotonic() - start)


class _Progress:
    """The query's progress reports, gathered by a thread as each batch ends.

    Each poll asks the JVM for the last report as JSON (two calls); converting the query's
    whole ``recentProgress`` field by field, as PySpark does, takes thousands of calls a time
    and the CPU they take is the job's own (two cores): the bench would slow what it measures.
    """

    def __init__(self, query: Any) -> None:
        self.query = query
        self.reports: dict[int, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                last = self.query._jsq.lastProgress()
                if last is not None:
                    report = json.loads(last.json())
                    self.reports[int(report["batchId"])] = report
            except Exception:  # the query stopped meanwhile
                if not self.query.isActive:
                    return

    def batches(self) -> list[tuple[int, float, int, float]]:
        """(end offset, wall time the batch ended, rows, seconds it took) of each batch seen."""
        out = []
        for progress in list(self.reports.values()):
            if not progress.get("sources"):
                continue
            end = progress["sources"][0]["endOffset"]
            end = json.loads(end) if isinstance(end, str) else end
            took = progress["durationMs"].get("triggerExecution", 0) / 1000
            began = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()
            # The rows Spark counted, or (the job read the batch's range itself) the range's.
            rows = progress_of([progress]).records
            out.append((int(end["offset"]), began + took, rows, took))
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def _delays(marks: list[tuple[int, float]], batches: list[tuple[int, float, int, float]]) -> list[float]:
    """Each mark's delay to the first batch that covered it (inf when none did)."""
    out = []
    for end, at in marks:
        ends = [done for covered, done, _, _ in batches if covered >= end and done >= at]
        out.append(min(ends) - at if ends else math.inf)
    return out


def throughput(quick: bool) -> Target:
    from jobs.audit.job import run_audit
    from jobs.common import LogSource, build_session

    rates = (50_000,) if quick else (25_000, 50_000, 75_000, 100_000)
    seconds, warmup = (30.0, 10.0) if quick else (60.0, 15.0)
    spark = build_session("bench-audit", master="local[2]", conf={"spark.ui.showConsoleProgress": "false"},
                          streaming=True)
    # What differs from one machine to the next, beside the figures (issue 32: 15,900/s there).
    print(machine_text(), flush=True)
    print(jvm_text(spark), flush=True)
    kept = 0
    seen: dict[int, tuple[int, float, int, float]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="aclstore-bench-audit-") as tmp:
            log = EmbeddedChangeLog(Path(tmp) / "audit", cleanup_policy="delete")  # as a node's
            producer = _Producer(log)
            producer.run(1000, 1.0)
            job = threading.Thread(target=run_audit, args=(
                spark, LogSource.embedded(Path(tmp) / "audit"), f"{tmp}/table", f"{tmp}/cp"),
                kwargs={"once": False}, daemon=True)  # fmt: skip
            job.start()
            query = _query(spark)
            progress = _Progress(query)
            _wait(lambda: any(b[0] >= producer.marks[-1][0] for b in progress.batches()), 300)
            for rate in rates:
                producer.marks = []
                achieved = producer.run(rate, seconds)
                _wait(lambda last=producer.marks[-1][0]: any(b[0] >= last for b in progress.batches()),
                      60, fail=False)  # fmt: skip
                seen.update({b[0]: b for b in progress.batches()})
                first_measured = producer.marks[0][1] + warmup
                delays = _delays([m for m in producer.marks if m[1] >= first_measured], list(seen.values()))
                worst = max(delays)
                figure(f"rate {rate}/s: produced (load {load_average()})", achieved, "events/s")
                for pct in (50, 95):
                    figure(f"  delay p{pct} (after a {warmup:.0f} s warm-up)", percentile(delays, pct), "s")
                figure("  delay max", worst, "s")
                if worst >= MAX_DELAY_S or achieved < 0.95 * rate:
                    break
                kept = rate
            rows = sum(b[2] for b in seen.values())
            busy = sum(b[3] for b in seen.values() if b[2] > 0)
            figure("job drain rate (rows / batch processing time)", rows / busy if busy else 0.0, "events/s")
            progress.stop()
            query.stop()
            job.join(60)
            log.close()
    finally:
        spark.stop()
    return Target("throughput", kept, "decisions/s", 50_000)


def _query(spark: Any) -> Any:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if spark.streams.active:
            return spark.streams.active[0]
        time.sleep(0.2)
    raise RuntimeError("the audit job's query did not start in 120 s")


def _wait(done: Any, seconds: float, *, fail: bool = True) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.5)
    if fail:
        raise RuntimeError(f"the audit job made no such progress in {seconds:.0f} s")
