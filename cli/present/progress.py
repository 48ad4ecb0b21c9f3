"""Progress of long work on stderr, when stderr is a terminal: records done, rate, ETA.

One line, rewritten in place (``\\r``), and ended with a newline when the work ends; nothing at
all when stderr is a file or a pipe, so scripts and logs see only what they saw before.
stdout stays the answer.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from jobs.common.streaming import StreamProgress


def duration_text(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def progress_text(what: str, progress: StreamProgress, elapsed_s: float) -> str:
    """``archive: 1,200,000 records, 98,400/s, 8,800,000 to go, ETA 1m29s``: the rate over the
    whole run so far; the ETA from the records still to read at that rate (none before a
    rate or an end is known)."""
    rate = progress.records / elapsed_s if elapsed_s > 0 else 0.0
    parts = [f"{what}: {progress.records:,} records", f"{rate:,.0f}/s"]
    remaining = progress.remaining
    if remaining is not None:
        parts.append(f"{remaining:,} to go")
        if rate > 0:
            parts.append(f"ETA {duration_text(remaining / rate)}")
    return ", ".join(parts)


class TerminalLine:
    """One line on ``stream`` (stderr), rewritten in place while it is a terminal; nothing at
    all otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.shown = self.stream.isatty()
        self.started = time.monotonic()
        self._width = 0

    def show(self, text: str) -> None:
        if not self.shown:
            return
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        """End the line (if one was written)."""
        if self.shown and self._width:
            self.stream.write("\n")
            self.stream.flush()


class TerminalProgress(TerminalLine):
    """Reports a job's progress on ``stream`` (stderr) if it is a terminal, else stays silent."""

    def __init__(self, what: str, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self.what = what

    def __call__(self, progress: StreamProgress) -> None:
        if self.shown:
            self.show(progress_text(self.what, progress, time.monotonic() - self.started))
