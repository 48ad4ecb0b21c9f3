"""The seconds each test module took, from pytest's ``--durations=0`` report: what the test
scheduler (``tests/xdist_groups.py``) reads to hand out the longest modules first."""

from __future__ import annotations

import json
from pathlib import Path

MODULE_SECONDS = Path(__file__).resolve().parents[1] / "tests" / "module_seconds.json"
_PHASES = frozenset({"setup", "call", "teardown"})


def seconds_by_module(report: str) -> dict[str, float]:
    """The seconds of each module's tests (setup, call and teardown added up) in ``report``,
    longest first, to a tenth of a second.  Lines that are not a duration are left out."""
    totals: dict[str, float] = {}
    for line in report.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] not in _PHASES or not parts[0].endswith("s"):
            continue
        try:
            spent = float(parts[0][:-1])
        except ValueError:
            continue
        module = parts[2].split("::", 1)[0]
        totals[module] = totals.get(module, 0.0) + spent
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return {module: round(spent, 1) for module, spent in ranked}


def write_module_seconds(log: Path, out: Path = MODULE_SECONDS) -> dict[str, float]:
    """Read a test run's log, write its modules' seconds to ``out`` (JSON); what it wrote."""
    found = seconds_by_module(log.read_text(encoding="utf-8", errors="replace"))
    if not found:
        raise ValueError(f"{log} has no durations: run the tests with --durations=0")
    out.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    return found
