"""Progress lines on stderr: shown on a terminal only, with hand-worked rates and ETAs."""

from __future__ import annotations

import io

import pytest

from cli.present.progress import TerminalProgress, duration_text, progress_text
from jobs.common.streaming import StreamProgress

pytestmark = pytest.mark.unit


def test_the_text_says_records_rate_what_is_left_and_when_it_ends() -> None:
    done = StreamProgress(records=1_200_000, position=1_200_000, end=10_000_000)
    # 1,200,000 in 12 s: 100,000/s; 8,800,000 left: 88 s
    assert progress_text("history archive", done, 12.0) == (
        "history archive: 1,200,000 records, 100,000/s, 8,800,000 to go, ETA 1m28s"
    )
    assert progress_text("audit run", StreamProgress(0, None, None), 3.0) == "audit run: 0 records, 0/s"
    assert progress_text("a", StreamProgress(0, 0, 10), 0.0) == "a: 0 records, 0/s, 10 to go"
    shown = [duration_text(s) for s in (0.4, 59.6, 61, 3599, 7620)]
    assert shown == ["0s", "1m00s", "1m01s", "59m59s", "2h07m"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_line_rewritten_and_ended_a_pipe_gets_nothing() -> None:
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        progress = TerminalProgress("history archive", stream)
        progress(StreamProgress(records=10, position=10, end=20))
        progress(StreamProgress(records=20, position=20, end=20))
        progress.close()
    assert pipe.getvalue() == ""
    lines = terminal.getvalue()
    assert lines.count("\r") == 2 and lines.endswith("\n") and lines.count("\n") == 1
    assert "20 records" in lines.split("\r")[-1] and "0 to go" in lines.split("\r")[-1]
