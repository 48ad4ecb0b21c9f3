"""The console's questions that need Spark, run as jobs off the node's decision path.

A question is the command a user would type, ``aclstore history <kind> … --format json``
(:mod:`.questions`), run as a child process of the node: its answer is the command's own JSON,
identical by construction, and the Spark it starts (or the Spark Connect server it asks) never
runs in the node's process, so decisions and the admin API are not slowed by it beyond the
cores it takes (the child runs at a lower priority, :data:`NICENESS`).

* A job has an id; its page polls :meth:`QuestionRunner.status` for the phase (``running``,
  then ``done``, ``failed`` or ``cancelled``), the elapsed time and, when done, the answer.
* One question at a time per session: asking another cancels the session's earlier one (the
  page has moved on); at most :attr:`QuestionRunner.max_jobs` run on the node at once.
* A job whose page stops polling for :attr:`QuestionRunner.idle_s` is cancelled (the page
  went away), as is one cancelled by the page, or running past ``timeout_s``; cancelling
  ends the child's whole process group.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Final

from replicator.contract.fields import BadRequestError, parse_json
from replicator.priority import spawn_lowered
from replicator.server.console.questions import (
    HistoryNotConfiguredError,
    HistorySource,
    Question,
    cli_error,
)
from store.errors import InvalidRequestError, KafkaErrorCode, StoreError

COMMAND: Final = (sys.executable, "-m", "cli")
"""``aclstore`` as this Python runs it."""
NICENESS: Final = 10
IDLE_S: Final = 15.0
TIMEOUT_S: Final = 600.0
MAX_JOBS: Final = 4
RUNNING, DONE, FAILED, CANCELLED = "running", "done", "failed", "cancelled"


class QuestionBusyError(StoreError):
    """As many questions as the node runs at once are running (HTTP 503)."""

    error_code = KafkaErrorCode.REQUEST_TIMED_OUT


class UnknownJobError(InvalidRequestError):
    """No such question in this session (it ended and was forgotten, or is another's)."""


@dataclass(slots=True)
class Job:
    """One question's run.  ``answer`` is the command's JSON once ``phase`` is ``done``;
    ``error`` its one-line message once ``failed`` (or why it was ``cancelled``)."""

    id: str
    session: str
    question: Question
    started: float
    phase: str = RUNNING
    polled: float = 0.0
    ended: float | None = None
    answer: Any = None
    error: str | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def view(self, now: float) -> dict[str, Any]:
        """The job as the page sees it."""
        out: dict[str, Any] = {
            "job": self.id, "question": self.question.kind, "phase": self.phase,
            "elapsedS": round((self.ended if self.ended is not None else now) - self.started, 3),
            "records": _records(self.answer) if self.phase == DONE else None,
        }  # fmt: skip
        if self.phase == DONE:
            out["answer"] = self.answer
        if self.error is not None:
            out["error"] = self.error
        return out


def _records(answer: Any) -> int | None:
    """How many records the answer holds, where one kind of record makes it up."""
    if isinstance(answer, list):
        return len(answer)
    if isinstance(answer, dict):
        for key in ("intervals", "allowed", "events"):
            if isinstance(answer.get(key), list):
                return len(answer[key])
    return None


class QuestionRunner:
    """Runs the console's history questions for the sessions that ask them; thread-safe."""

    def __init__(
        self,
        source: HistorySource | None,
        *,
        command: Sequence[str] = COMMAND,
        idle_s: float = IDLE_S,
        timeout_s: float = TIMEOUT_S,
        max_jobs: int = MAX_JOBS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.command = tuple(command)
        self.idle_s = idle_s
        self.timeout_s = timeout_s
        self.max_jobs = max_jobs
        self._clock = clock
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._by_session: dict[str, str] = {}

    def _check_source(self, *, archive: bool = True) -> HistorySource:
        source = self.source
        if source is None:
            raise HistoryNotConfiguredError(
                "this node was not told where its history lives: start it with `aclstore serve "
                "--history-archive URI` (the archive `aclstore history archive` writes) and, for "
                "answers in seconds, --history-remote sc://HOST:PORT (`aclstore spark-connect start`)"
            )
        local = source.local_archive()
        if archive and local is not None and not local.exists():
            raise HistoryNotConfiguredError(
                f"there is no history archive at {source.archive_location} yet: run `aclstore "
                f"history archive --data-dir {source.data_dir}` (it keeps the archive current), or "
                "start the node with --history-archive naming the archive"
            )
        return source

    def ask(self, session: str, question: Question) -> dict[str, Any]:
        """Start ``question`` for ``session`` (cancelling its earlier one); the job's view."""
        source = self._check_source(archive=question.needs_archive)
        argv = [*self.command, *question.argv(source)]
        with self._lock:
            self._sweep()
            earlier = self._by_session.pop(session, None)
            if earlier is not None:
                self._cancel(self._jobs.pop(earlier), "a newer question of the page replaced it")
            running = sum(1 for j in self._jobs.values() if j.phase == RUNNING)
            if running >= self.max_jobs:
                raise QuestionBusyError(
                    f"{running} history questions are running on this node, its limit: ask again "
                    "when one has answered"
                )
            now = self._clock()
            job = Job(secrets.token_urlsafe(12), session, question, now, polled=now)
            out, err = _spooled(), _spooled()
            job.process = spawn_lowered(
                argv, nice=NICENESS, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                start_new_session=True,
            )
            self._jobs[job.id] = job
            self._by_session[session] = job.id
        threading.Thread(target=self._watch, args=(job, out, err), name=f"question-{job.id}",
                         daemon=True).start()  # fmt: skip
        return job.view(now)

    def status(self, session: str, job_id: object) -> dict[str, Any]:
        """The job's view; it counts as polled now.  A job that has ended is forgotten once
        its ending was seen."""
        with self._lock:
            job = self._owned(session, job_id)
            now = self._clock()
            job.polled = now
            view = job.view(now)
            if job.phase != RUNNING:
                self._forget(job)
            return view

    def cancel(self, session: str, job_id: object) -> dict[str, Any]:
        with self._lock:
            job = self._owned(session, job_id)
            self._cancel(job, "cancelled by the page")
            self._forget(job)
            return job.view(self._clock())

    def close_session(self, session: str) -> None:
        """The session ended (logged out): its question is cancelled."""
        with self._lock:
            job_id = self._by_session.pop(session, None)
            if job_id is not None:
                self._cancel(self._jobs.pop(job_id), "the session ended")

    def close(self) -> None:
        """Cancel every question (the node stops)."""
        with self._lock:
            for job in self._jobs.values():
                self._cancel(job, "the node stopped")
            self._jobs.clear()
            self._by_session.clear()

    def running(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values() if j.phase == RUNNING)

    # --- inside ---------------------------------------------------------------------------------

    def _owned(self, session: str, job_id: object) -> Job:
        if not isinstance(job_id, str):
            raise BadRequestError("job: give the id the question was answered with")
        job = self._jobs.get(job_id)
        if job is None or job.session != session:
            raise UnknownJobError(f"no question {job_id!r} in this session: it ended and was "
                                  "read already, or another session asked it; ask again")  # fmt: skip
        return job

    def _sweep(self) -> None:
        """Forget the jobs that ended and whose page has not read them for ``idle_s`` (it went
        away): their answers are not kept for nobody."""
        now = self._clock()
        for job in [j for j in self._jobs.values() if j.phase != RUNNING]:
            if now - max(job.polled, job.ended or 0.0) > self.idle_s:
                self._forget(job)

    def _forget(self, job: Job) -> None:
        self._jobs.pop(job.id, None)
        if self._by_session.get(job.session) == job.id:
            del self._by_session[job.session]

    def _cancel(self, job: Job, why: str) -> None:
        if job.phase != RUNNING:
            return
        job.phase, job.error, job.ended = CANCELLED, why, self._clock()
        if job.process is not None:
            _end_group(job.process)

    def _watch(self, job: Job, out: IO[bytes], err: IO[bytes]) -> None:
        """Wait for the child; cancel it when its page stops polling or it runs too long; then
        read its answer or its error."""
        process = job.process
        assert process is not None
        try:
            while True:
                try:
                    code = process.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    pass
                with self._lock:
                    now = self._clock()
                    if job.phase != RUNNING:
                        continue  # cancelled: the group was signalled; reap it
                    if now - job.polled > self.idle_s:
                        self._cancel(job, f"its page stopped asking for {self.idle_s:.0f} s")
                        self._forget(job)
                    elif now - job.started > self.timeout_s:
                        self._cancel(job, f"it ran longer than {self.timeout_s:.0f} s; ask again or "
                                     "narrow the question")  # fmt: skip
            self._finish(job, code, out, err)
        finally:
            out.close()
            err.close()

    def _finish(self, job: Job, code: int, out: IO[bytes], err: IO[bytes]) -> None:
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read().decode("utf-8", "replace")
        answer: Any = None
        error: str | None = None
        if job.question.succeeded(code):
            try:
                answer = parse_json(stdout)
            except BadRequestError as exc:
                error = f"the command's answer was not JSON: {exc.message}"
        else:
            error = cli_error(stderr)
        with self._lock:
            if job.phase != RUNNING:
                return
            job.ended = self._clock()
            if error is None:
                job.phase, job.answer = DONE, answer
            else:
                job.phase, job.error = FAILED, error


def _spooled() -> IO[bytes]:
    """An unnamed file for a child's output (a pipe could fill and stall it)."""
    return tempfile.TemporaryFile()


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """End the child and everything it started (a local Spark's JVM)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)

    def kill_later() -> None:
        try:
            process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        # the JVM of a local Spark is in the group too and may outlive its parent's end
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    threading.Thread(target=kill_later, name="question-end", daemon=True).start()
