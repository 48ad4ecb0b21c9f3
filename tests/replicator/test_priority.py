"""Children started below their parent's priority, from their first statement on (real
processes; Linux's scheduler answers)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replicator.priority import spawn_lowered

pytestmark = pytest.mark.unit

REPORT = (
    "import os, sys; "
    "sys.stdout.write(f'{os.sched_getscheduler(0)} {os.getpriority(os.PRIO_PROCESS, 0)}')"
)
"""What the child does first: say its scheduling class and its nice value."""


def _reported(process: subprocess.Popen[bytes]) -> tuple[int, int]:
    out, _ = process.communicate(timeout=60)
    policy, nice = out.decode().split()
    return int(policy), int(nice)


def _this_thread() -> tuple[int, int]:
    return os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0)


def test_an_idle_child_is_in_the_idle_class_from_its_start_and_the_caller_is_not() -> None:
    before = _this_thread()
    child = spawn_lowered([sys.executable, "-c", REPORT], idle=True, stdout=subprocess.PIPE)
    assert _reported(child)[0] == os.SCHED_IDLE
    assert _this_thread() == before


def test_a_lowered_child_starts_that_much_nicer_and_the_caller_keeps_its_nice() -> None:
    before = _this_thread()
    child = spawn_lowered([sys.executable, "-c", REPORT], nice=7, stdout=subprocess.PIPE)
    assert _reported(child) == (before[0], min(before[1] + 7, 19))
    plain = spawn_lowered([sys.executable, "-c", REPORT], stdout=subprocess.PIPE)
    assert _reported(plain) == before
    assert _this_thread() == before


def test_a_child_that_cannot_start_raises_in_the_caller() -> None:
    with pytest.raises(FileNotFoundError):
        spawn_lowered(["/nonexistent/aclstore-child"], nice=3)
