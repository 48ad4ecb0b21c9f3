"""Child processes that start below their parent's CPU priority, from their first instruction.

The node starts background work as child processes: the access walks (a downgrade check, the
format gate), the audit sender, the console's history questions.  Lowering its own priority
once it runs leaves a child's start (the interpreter, its imports: a few hundred milliseconds
of CPU) at the node's priority, beside the decisions.  Here the priority is lowered on a thread
that exists only to start the child: on Linux, priority and scheduling class belong to a thread
and a child starts with those of the thread that started it, so the child is lowered before it
runs, and no other thread of the parent is.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Sequence
from typing import Any


def lower_this_thread(*, nice: int = 0, idle: bool = False) -> None:
    """Lower the calling thread's CPU priority: ``nice`` more, or into Linux's idle scheduling
    class (``SCHED_IDLE``: CPU time no other thread wants) with ``idle``.  Where the system
    cannot (no such class, not permitted), the thread keeps its priority."""
    try:
        if idle:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        elif nice:
            os.nice(nice)
    except (OSError, AttributeError):
        pass


def spawn_lowered(
    argv: Sequence[str], *, nice: int = 0, idle: bool = False, **options: Any
) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **options)`` with the child ``nice`` lower than this process's
    calling thread, or in the idle class with ``idle``, from its start; the calling thread
    keeps its own priority."""
    started: list[subprocess.Popen[bytes]] = []
    failed: list[BaseException] = []

    def start() -> None:
        try:
            lower_this_thread(nice=nice, idle=idle)
            started.append(subprocess.Popen(argv, **options))
        except BaseException as exc:  # re-raised in the caller's thread
            failed.append(exc)

    starter = threading.Thread(target=start, name="aclstore-spawn-lowered")
    starter.start()
    starter.join()
    if failed:
        raise failed[0]
    return started[0]
