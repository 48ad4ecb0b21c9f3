"""The node's side of the access-diff questions: which runs where.

* A dry run whose change reaches only a few subtrees (a literal; a prefix with at most
  ``in_process_limit`` bindings under it) is answered in the node, over one consistent view
  of its index (:meth:`replicator.index.AclIndex.view`): a few seeks and a small walk.
* A question that walks the whole state (a downgrade check, the format gate, a dry run of
  ``*`` or of a large prefix) is answered by :mod:`replicator.access.worker`, a child process
  at a lower CPU priority reading a secondary instance of the index, one at a time.  Its
  answer is relayed as the bytes it wrote: the node does not hold the rows as objects.

Both answer from a state that has applied at least the log end as of the request (what the
admin API reads), so a dry run right after a write judges the state that write made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from replicator.access.analysis import (
    IndexRead,
    PlannedChange,
    dry_run_answer,
    log_settings,
    planned_change,
    verdict_of,
)
from replicator.access.parallel import PART_SIZE
from replicator.access.worker import NICENESS, PROGRESS, AnalysisError
from replicator.contract.access import AnalysisProgressAnswer, DowngradeCheckRequest, DryRunRequest
from replicator.index.records import IndexPosition
from replicator.index.view import IndexView
from replicator.priority import spawn_lowered
from store.access_stream import PREFIXED, StateChange
from store.acl import WILDCARD_RESOURCE, AclBinding
from store.downgrade import DowngradeVerdict


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


IN_PROCESS_LIMIT = 10_000
"""Bindings under a dry run's changed prefixes (and one per literal), at most, for it to run
in the node: a walk of tens of milliseconds that shares the interpreter with decisions."""
WORKER_TIMEOUT_S = 1800.0


class AnalysedIndex(Protocol):
    """What the analyst needs of the node's index (:class:`replicator.index.AclIndex`)."""

    path: Path

    def view(self) -> IndexView: ...

    def wait_applied(self, offset: int, timeout: float) -> IndexPosition: ...


class AccessAnalyst:
    """Answers ``/v1/acls/dry-run`` and ``/v1/format/downgrade-check`` for one node.

    ``log_end`` catches up with the log and returns the offset of its last record (the
    admin's ``sync``); ``wait_s`` bounds the wait for the index to reach it.
    """

    def __init__(
        self,
        index: AnalysedIndex,
        log_end: Callable[[], int],
        *,
        wait_s: float = 30.0,
        in_process_limit: int = IN_PROCESS_LIMIT,
        python: str = sys.executable,
        processes: int | None = None,
        part_size: int = PART_SIZE,
    ) -> None:
        self.index = index
        self.log_end = log_end
        self.wait_s = wait_s
        self.in_process_limit = in_process_limit
        self.python = python
        self.processes = available_cores() if processes is None else processes
        self.part_size = part_size
        self._said = threading.Lock()
        self._walk: _WorkerWalk | None = None
        self._worker = threading.Lock()

    def _log_end(self, min_offset: int | None) -> int:
        """The offset to answer from: the log end now, or ``min_offset`` if later."""
        return max(self.log_end(), -1 if min_offset is None else min_offset)

    def _caught_up(self, target: int) -> int:
        """Wait until the index has applied ``target``."""
        reached = self.index.wait_applied(target, self.wait_s)
        if reached.offset < target:
            raise AnalysisError(
                f"the index has applied up to offset {reached.offset}, not the log end "
                f"{target}, after {self.wait_s:g} s; retry when the replica has caught up"
            )
        return target

    def dry_run(self, request: DryRunRequest) -> bytes | dict[str, Any]:
        """The dry run's answer: a JSON value built here, or the worker's bytes."""
        target = self._caught_up(self._log_end(request.min_offset))
        view = self.index.view()
        read = IndexRead(view.patterns(), view)
        creates = [b for b in request.creates if isinstance(b, AclBinding)]
        plan = planned_change(read, creates, request.deletes)
        if not self._small(read, plan):
            return self._ask_worker("dry_run", request.to_json(), max(target, view.position.offset))
        settings = log_settings(view.config)
        return dry_run_answer(read, settings, plan, view.position.offset).to_json()

    def _small(self, read: IndexRead, plan: PlannedChange) -> bool:
        """Whether the regions the change reaches are small: the bindings under its prefixes
        and one per literal, ``in_process_limit`` at most."""
        focus = StateChange.of_bindings(log_settings({}), plan.added, plan.removed).focus()
        if focus is None:
            return False
        budget = self.in_process_limit
        for rt, patterns in focus.items():
            for pt, name in patterns:
                if (pt is PREFIXED and name == "") or name == WILDCARD_RESOURCE:
                    return False
                # a literal's region is a few point reads; a prefix's, its subtree
                budget -= read.count_under(rt, name, budget + 1) if pt is PREFIXED else 1
                if budget < 0:
                    return False
        return True

    def downgrade_check(
        self, request: DowngradeCheckRequest, *, local_super_users: Sequence[str] = ()
    ) -> tuple[dict[str, Any], bytes]:
        """The downgrade check's summary (safe, stopping, offset) and its answer, as the
        worker wrote them."""
        target = self._caught_up(self._log_end(request.min_offset))
        out = self._ask_worker("downgrade_check", request.to_json(), target, local_super_users,
                               processes=self.processes)  # fmt: skip
        head, _, body = out.partition(b"\n")
        return json.loads(head), body

    def format_gate(self, to: int, at_offset: int, local_super_users: Sequence[str]) -> DowngradeVerdict:
        """The format gate's question (:data:`store.downgrade.DowngradeAnalyst`): a downgrade
        check at ``at_offset`` at least (the admin's, which holds its lock meanwhile), with the
        node's static super users on both sides; the worker answers with the verdict alone,
        so the node parses a few bytes while its decisions go on."""
        self._caught_up(at_offset)
        request = DowngradeCheckRequest(to=to).to_json()
        # a core left to the node's decisions while the gate's walk runs
        body = self._ask_worker("format_gate", request, at_offset, local_super_users,
                                processes=max(1, self.processes - 1), idle=True)  # fmt: skip
        return verdict_of(json.loads(body))

    def progress(self) -> AnalysisProgressAnswer:
        """How far the worker's walk has got (the last walk's figures when none runs)."""
        with self._said:
            walk = self._walk
        if walk is None:
            return AnalysisProgressAnswer(running=False, read=0, elapsed_ms=0)
        end = walk.ended if walk.ended is not None else time.monotonic()
        return AnalysisProgressAnswer(
            running=walk.ended is None, question=walk.question, read=walk.read, total=walk.total,
            elapsed_ms=round((end - walk.started) * 1000),
        )  # fmt: skip

    def _hear(self, stream: IO[bytes], walk: _WorkerWalk, said: list[str]) -> None:
        """The worker's stderr: its progress lines into ``walk``, the rest kept for an error."""
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            words = line.split()
            if len(words) == 3 and words[0] == PROGRESS and words[1].isdigit() and words[2].isdigit():
                with self._said:
                    walk.read, walk.total = int(words[1]), int(words[2])
            elif line:
                said.append(line)

    def _ask_worker(
        self, question: str, body: dict[str, Any], offset: int, local_super_users: Sequence[str] = (),
        *, processes: int = 1, idle: bool = False,
    ) -> bytes:  # fmt: skip
        argv = [
            self.python, "-m", "replicator.access.worker", str(self.index.path), question,
            "--catch-up-to", str(offset), "--processes", str(processes),
            "--part-size", str(self.part_size),
            *(arg for user in local_super_users for arg in ("--local-super-user", user)),
        ]  # fmt: skip
        with self._worker:  # one walk at a time: the node grows by one walk at most
            walk = _WorkerWalk(question, time.monotonic())
            with self._said:
                self._walk = walk
            said: list[str] = []
            # Below the node's decisions from its start: NICENESS lower, or for the format
            # gate, which runs while the node decides, in the idle class (a decision never
            # waits for the walk).  The pool of a walk in parts inherits it.
            process = spawn_lowered(argv, nice=NICENESS, idle=idle, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
            assert process.stdin is not None and process.stdout is not None and process.stderr is not None
            hearing = threading.Thread(target=self._hear, args=(process.stderr, walk, said),
                                       name="analysis-progress", daemon=True)  # fmt: skip
            hearing.start()
            timer = threading.Timer(WORKER_TIMEOUT_S, process.kill)
            timer.start()
            try:
                with process.stdin:
                    process.stdin.write(json.dumps(body).encode("utf-8"))
                out = process.stdout.read()
                code = process.wait()
                hearing.join(10)
            finally:
                timer.cancel()
                if process.poll() is None:
                    process.kill()
                    process.wait()
                with self._said:
                    walk.ended = time.monotonic()
        if code != 0:
            raise AnalysisError(
                f"the analysis of {question} failed (exit {code}): "
                f"{said[-1] if said else 'no message'}"
            )
        return out


@dataclass(slots=True)
class _WorkerWalk:
    """A walk of the worker, as its progress lines tell it."""

    question: str
    started: float
    read: int = 0
    total: int | None = None
    ended: float | None = None
