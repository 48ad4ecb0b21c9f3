"""Figures and TARGET lines shared by every benchmark."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True, slots=True)
class Target:
    """One measured figure against the issue's target.

    ``higher_is_better`` decides whether ``value >= target`` or ``value <= target`` is ok.
    """

    name: str
    value: float
    unit: str
    target: float
    higher_is_better: bool = True

    @property
    def ok(self) -> bool:
        return self.value >= self.target if self.higher_is_better else self.value <= self.target

    def line(self) -> str:
        bound = ">=" if self.higher_is_better else "<="
        verdict = "ok" if self.ok else "short"
        return (
            f"TARGET {self.name}: {self.value:.4g} {self.unit} "
            f"(target {bound} {self.target:g}) {verdict}"
        )


def print_targets(targets: Sequence[Target]) -> None:
    for target in targets:
        print(target.line(), flush=True)


def figure(label: str, value: float, unit: str) -> None:
    """Print one measured figure that is not a target."""
    print(f"  {label}: {value:.4g} {unit}", flush=True)


def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of ``samples`` (pct in 0..100): the smallest sample with at
    least ``pct`` % of the samples at or below it, rank ``ceil(pct / 100 * n)``.

    The rank is computed on the decimal ``pct`` as written (99.9 is 999/10), not on its binary
    float, whose product with ``n`` may land just above a whole rank and pick the next one."""
    if not samples:
        raise ValueError("percentile of no samples")
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), math.ceil(Fraction(repr(pct)) * len(ordered) / 100)))
    return ordered[rank - 1]


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)
