"""Dispatch of conformance vectors to their kind handlers, and the summary line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

# Importing the kind modules registers their handlers.
from devtools.conformance import acl_kinds, principal_kinds  # noqa: F401
from devtools.conformance.registry import Outcome, Vector, handler_for


def run_vector(vector: Vector) -> Outcome | None:
    """Evaluate one vector; None when no handler knows its kind (a skip)."""
    handler = handler_for(str(vector.get("kind")))
    if handler is None:
        return None
    try:
        return handler(vector)
    except Exception as exc:  # a crash is a failure of that vector, reported with its type
        return Outcome(passed=False, expected=vector.get("expect"), got=f"{type(exc).__name__}: {exc}")


def vector_id(vector: Vector, path: Path, line_no: int) -> str:
    return str(vector.get("id") or f"{path.name}:{line_no}")


def iter_vectors(paths: Iterable[Path]) -> Iterator[tuple[str, Vector]]:
    for path in paths:
        with path.open(encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, start=1):
                if line.strip():
                    vector = json.loads(line)
                    yield vector_id(vector, path, line_no), vector


@dataclass(slots=True)
class Summary:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    lines: list[str] = field(default_factory=list)

    @property
    def closing_line(self) -> str:
        return f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped"


def run_files(paths: Iterable[Path]) -> Summary:
    summary = Summary()
    for vid, vector in iter_vectors(paths):
        outcome = run_vector(vector)
        if outcome is None:
            summary.skipped += 1
            summary.lines.append(f"SKIP {vid}: no handler for kind {vector.get('kind')!r}")
            continue
        if outcome.message_note:
            summary.lines.append(f"MESSAGE {vid}: {outcome.message_note}")
        if outcome.passed:
            summary.passed += 1
        else:
            summary.failed += 1
            summary.lines.append(
                f"FAIL {vid}: expected {json.dumps(outcome.expected)} got {json.dumps(outcome.got)}"
            )
    return summary
