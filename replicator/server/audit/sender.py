"""The audit sender: ships the spool to the audit log, in a thread or in a process of its own.

The spool's files are the whole hand-off between the request path and the sender: the segments
hold the events, ``shipped`` the committed position and ``progress`` the shared figures
(:mod:`replicator.server.audit.progress`).  So the sender can run apart from the request
threads, and a node does run it apart (:class:`SenderProcess`, ``python -m
replicator.server.audit``): turning spool lines into CloudEvents and appending them to
the audit log then takes no turn of the request threads' interpreter lock.  Given a sink
object instead of a way to open one, :class:`~replicator.server.audit.emitter.AuditEmitter`
runs the same :class:`Sender` in a thread.

One sender at a time per spool: each holds an exclusive ``flock`` on ``<spool>/sender.lock``
while it ships, and reads the committed position only once it holds it.  A sender whose node
was killed sees its standard input end, ships what it read (the new node's sender waits on
the lock meanwhile) and exits; events sent but not committed are sent again under the same id.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, Protocol

from replicator.contract.audit_event import AuditEventEncoder
from replicator.priority import spawn_lowered
from replicator.server.audit.lines import cloud_events
from replicator.server.audit.progress import SENT, SINK_UP, WRITTEN, Progress
from replicator.server.audit.settings import AuditSettings
from replicator.server.audit.sinks import AuditSink, AuditSinkOpener
from replicator.server.audit.spool import Position, SpoolReader

LOCK_FILE: Final = "sender.lock"
_HAND_OVER_EVENTS: Final = 256
"""In a thread, the sender lets a waiting request thread run after about this many events
encoded (a few hundred microseconds)."""
_RESTART_PAUSE_S: Final = 1.0
_log = logging.getLogger("aclstore.audit")


class Signal(Protocol):
    """What the sender needs of a :class:`threading.Event`."""

    def is_set(self) -> bool: ...
    def set(self) -> None: ...
    def clear(self) -> None: ...
    def wait(self, timeout: float | None = None) -> bool: ...


class Sender:
    """Reads the spool from the shipped position, appends to the sink, commits after the ack."""

    def __init__(
        self,
        sink: AuditSink,
        spool: SpoolReader,
        settings: AuditSettings,
        *,
        wake: Signal,
        closing: Signal,
        idle_s: float,
        hand_over: bool,
    ) -> None:
        self.sink = sink
        self.spool = spool
        self.settings = settings
        self._encoder = AuditEventEncoder(settings.source)
        self._wake = wake
        self._closing = closing
        self._idle_s = idle_s
        self._hand_over = hand_over
        self._position = Position(0, 0, 0)
        self._sink_up = True
        self._next_retry = 0.0

    def run(self) -> None:
        """Ship until closing (then what the sink takes at once); one sender per spool."""
        lock = os.open(self.spool.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # an earlier sender may still be finishing
            self._position = self.spool.resume()
            self._loop()
        finally:
            os.close(lock)  # releases the lock

    def _loop(self) -> None:
        s = self.settings
        stop_at: int | None = None
        while True:
            closing = self._closing.is_set()
            if closing and stop_at is None:
                # What was written when closing began: a sender whose node died must not
                # keep shipping what the next node writes (that node's sender waits for it).
                stop_at = self.spool.progress.get(WRITTEN)
            backlog = self.spool.backlog
            if stop_at is not None and self._position.seq >= stop_at:
                return
            if backlog == 0 or (not self._sink_up and time.monotonic() < self._next_retry):
                if closing:
                    return
                wait = self._idle_s if backlog == 0 else self._next_retry - time.monotonic()
                self._wake.wait(max(wait, 0.0))
                self._wake.clear()
                continue
            if not closing and backlog < s.batch_events:
                self._closing.wait(s.linger_s)  # let a batch gather
            try:
                if not self._ship_one_batch():  # a backlog but nothing readable: no busy loop
                    self._wake.wait(s.retry_backoff_s)
                    self._wake.clear()
            except Exception as exc:  # any failure: the events stay on disk
                if self._sink_up:
                    _log.warning("audit sink unavailable, keeping events on disk: %s", exc)
                self._set_sink_up(False)
                self._next_retry = time.monotonic() + s.retry_backoff_s
                if closing:
                    return

    def _set_sink_up(self, up: bool) -> None:
        self._sink_up = up
        self.spool.progress.set(SINK_UP, int(up))

    def _ship_one_batch(self) -> bool:
        """Ship what the spool holds from the position, up to a batch; False when nothing moved."""
        s = self.settings
        lines, after = self.spool.read(self._position, s.batch_events)
        if after == self._position:
            return False
        records: list[tuple[bytes, bytes | None]] = []
        handed_over = 0
        for line in lines:
            try:
                records.extend(cloud_events(line, self.spool.spool_id, self._encoder))
            except (ValueError, TypeError, KeyError) as exc:  # a body changed on disk
                self.spool.count_corrupt()
                _log.error("audit spool line at event %d is unreadable (%r): skipped", line.seq, exc)
            if self._hand_over and len(records) - handed_over >= _HAND_OVER_EVENTS:
                # Hand the interpreter lock over: a request thread waiting for it would
                # otherwise wait out the switch interval at each of its I/O calls.
                handed_over = len(records)
                time.sleep(0)
        if records:
            self.sink.append(records, timeout=s.sink_timeout_s)
            # Counted before the commit: whoever sees the backlog empty (flush) sees them sent.
            self.spool.progress.add(SENT, len(records))
        self.spool.commit(after)
        self._position = after
        if not self._sink_up:
            _log.warning("audit sink is back; shipping the events kept on disk")
        self._set_sink_up(True)
        return True


# --- the sender as a process of its own ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SenderConfig:
    """What a sender process is given on its standard input (pickled), then nothing more:
    its standard input ends when the node closes it or dies."""

    spool_dir: Path
    settings: AuditSettings
    sink: AuditSinkOpener
    log_level: int


class SenderProcess:
    """``python -m replicator.server.audit`` (:func:`main`) for one spool, restarted if it dies."""

    def __init__(self, config: SenderConfig, progress: Progress) -> None:
        self.config = config
        self._progress = progress
        self.restarts = 0
        self._closing = threading.Event()
        self._process = self._spawn()
        self._monitor = threading.Thread(target=self._watch, name="aclstore-audit-watch", daemon=True)
        self._monitor.start()

    def _spawn(self) -> subprocess.Popen[bytes]:
        # The child imports this package from where this process did.
        root = str(Path(__file__).resolve().parents[3])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        process = spawn_lowered(  # background work: the node's requests come first
            [sys.executable, "-m", "replicator.server.audit"],
            nice=self.config.settings.sender_nice,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # the node's standard output is its banner's; logs: stderr
            env={**os.environ, "PYTHONPATH": path},
            close_fds=True,
        )
        assert process.stdin is not None
        process.stdin.write(pickle.dumps(self.config))
        process.stdin.flush()
        return process

    @property
    def pid(self) -> int:
        return self._process.pid

    def _watch(self) -> None:
        """Restart the sender when it exits while the node runs (its figures stay in the spool's
        progress file; the new one resumes from the committed position)."""
        while not self._closing.is_set():
            code = self._process.poll()
            if code is None:
                self._closing.wait(0.5)
                continue
            _log.error("audit sender process %d exited (code %s): restarting it", self._process.pid, code)
            self._progress.set(SINK_UP, 0)  # no sender writes to the sink: not up
            if self._closing.wait(_RESTART_PAUSE_S):
                return
            try:
                self._process = self._spawn()
            except OSError as exc:  # tried again after the pause (the old one is still reaped)
                _log.error("could not start the audit sender process: %s", exc)
                continue
            self.restarts += 1

    def close(self, timeout: float) -> None:
        """End the sender's input (it ships what the sink takes, then exits); kill it after
        ``timeout``."""
        self._closing.set()
        self._monitor.join()
        process = self._process
        if process.stdin is not None:
            with contextlib.suppress(OSError):  # a sender that died closed its end
                process.stdin.close()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            _log.warning("audit sender %d did not finish within %.1f s: killed", process.pid, timeout)
            process.kill()
            process.wait()


def _run_process(config: SenderConfig, stdin: IO[bytes]) -> None:
    closing, wake = threading.Event(), threading.Event()

    def stop(*_: object) -> None:
        closing.set()
        wake.set()

    def watch_input() -> None:
        stdin.read()  # until the node closes its end, or dies
        stop()

    threading.Thread(target=watch_input, name="aclstore-audit-input", daemon=True).start()
    # The node stops it (by ending its input); a signal to the whole process group (Ctrl-C,
    # a service manager's SIGTERM) lets it finish the batch in hand, as the node's end does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, stop)
    sink = config.sink.open_sink()
    try:
        sender = Sender(
            sink, SpoolReader(config.spool_dir), config.settings,
            wake=wake, closing=closing, idle_s=max(config.settings.linger_s, 0.05),
            hand_over=False,
        )  # fmt: skip
        sender.run()
    finally:
        sink.close()


def main() -> int:
    stdin = sys.stdin.buffer
    config = pickle.load(stdin)
    if not isinstance(config, SenderConfig):
        raise SystemExit("the audit sender takes a pickled SenderConfig on its standard input")
    logging.basicConfig(
        level=config.log_level, format="%(asctime)s %(levelname)s %(name)s[sender]: %(message)s"
    )
    _run_process(config, stdin)
    return 0
