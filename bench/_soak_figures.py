"""The soak's arithmetic, free of I/O: a minute's figures, the RSS growth window, the p99 drift
and the audit events missing.  :mod:`bench.soak` measures; this computes and formats."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bench.report import percentile

GROWTH_WINDOW_MINUTES: Final = 20
"""The RSS growth TARGET looks at the last 20 minutes of a run (a 30-minute run's last 2/3)."""


@dataclass(frozen=True, slots=True)
class Latencies:
    """p50, p99 and p999 of one minute's requests (ms); NaN when the minute had none."""

    count: int
    p50: float
    p99: float
    p999: float

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> Latencies:
        if not samples_ms:
            return cls(0, math.nan, math.nan, math.nan)
        return cls(
            len(samples_ms),
            percentile(samples_ms, 50),
            percentile(samples_ms, 99),
            percentile(samples_ms, 99.9),
        )

    def text(self) -> str:
        return f"p50 {self.p50:.2f} p99 {self.p99:.2f} p999 {self.p999:.2f} ms"


@dataclass(frozen=True, slots=True)
class Minute:
    """What one minute of the soak measured: the node's process tree at the minute's end, and
    what the clients and the writer did within it."""

    number: int
    rss_bytes: int
    """Summed over the node and every process below it."""
    open_files: int
    fds: int
    threads: int
    spool_bytes: int
    """The audit spool directory's files on disk."""
    backlog: int
    """Audit events in the spool not yet acknowledged by the audit log (the node's count)."""
    decisions: int
    singles: Latencies
    batches: Latencies
    writes: int
    errors: int
    node_cpu_s: float
    cache_hit_rate: float
    load: str

    def line(self) -> str:
        per_decision = self.node_cpu_s / self.decisions * 1e6 if self.decisions else math.nan
        return (
            f"minute {self.number}: rss {self.rss_bytes / 1e6:.1f} MB, open files {self.open_files} "
            f"(fds {self.fds}), threads {self.threads}, spool {self.spool_bytes / 1e6:.2f} MB "
            f"({self.backlog} events not shipped); "
            f"decisions {self.decisions} (single {self.singles.text()}; "
            f"batch of 100 {self.batches.text()}); writes {self.writes}; errors {self.errors}; "
            f"node CPU {per_decision:.1f} us/decision; cache hits {self.cache_hit_rate:.0%}; "
            f"load {self.load}"
        )


def interval_of(at: float, start: float, interval_s: float) -> int:
    """The interval a request sent at ``at`` belongs to: 1 for ``[start, start + interval_s)``,
    2 for the next, and 0 for the warm-up before ``start``."""
    return max(0, math.floor((at - start) / interval_s) + 1)


def growth_window(minutes: int) -> int:
    """How many of the last minutes the RSS growth is measured over: 20, or the last 2/3 of a
    run shorter than 30 minutes (rounded down, at least one)."""
    if minutes < 1:
        raise ValueError(f"a soak of {minutes} minutes has no growth window; run at least one")
    return max(1, min(GROWTH_WINDOW_MINUTES, 2 * minutes // 3))


def rss_growth_pct(rss_bytes: Sequence[int]) -> float:
    """RSS growth over the growth window, in % of the RSS at the window's start.

    ``rss_bytes[0]`` is the tree's RSS when the measured minutes began, ``rss_bytes[k]`` at the
    end of minute ``k``."""
    minutes = len(rss_bytes) - 1
    start = rss_bytes[minutes - growth_window(minutes)]
    if start <= 0:
        raise ValueError(f"no RSS at the growth window's start ({start} bytes)")
    return (rss_bytes[-1] - start) / start * 100


def p99_drift(minutes: Sequence[Minute]) -> float:
    """The single decisions' p99 in the last minute ÷ in the first."""
    if not minutes:
        raise ValueError("no minute measured")
    return minutes[-1].singles.p99 / minutes[0].singles.p99


def audit_missing(*, denials_answered: int, denials_logged: int, unshipped: int) -> int:
    """Audit events lost: every denial is audited, so the denials the clients were answered
    and the audit log lacks are lost, whatever the node counted; and the node's own count of
    events it dropped or still holds unshipped at the end (those include sampled allows,
    which the clients cannot count)."""
    return max(unshipped, denials_answered - denials_logged, 0)
