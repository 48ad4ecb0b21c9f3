"""The node's side of its decision workers: publishing the replica's state, handing out
connections, restarting a worker that dies.

* :class:`ReplicaPublisher` writes the replica's visible offset to the shared state right
  after each commit (under the index's lock, after the batch is written), and its readiness,
  stop, failure and log end every few milliseconds.
* :class:`DecisionWorkers` spawns ``python -m replicator.server.workers`` processes, accepts
  every connection on the node's address and hands each whose first request is one a
  worker takes (a decision, or what a broker's plugin asks first on its pooled connections)
  or cannot be read (TLS) to the next live worker in turn; the node serves the others itself
  (:mod:`.routing`).  A connection stays where it went to the end.  When no worker
  is alive the node serves the connection itself, so the address never stops answering.  A
  worker that exits on its own is restarted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import selectors
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Final, cast

from replicator.index import IndexPosition
from replicator.replica import Replica
from replicator.server.http import SidecarHTTPServer
from replicator.server.workers.figures import read_snapshots
from replicator.server.workers.process import (
    CONNECTION,
    FIGURES_ASKED,
    FIGURES_WRITTEN,
    TAKEN,
    WorkerConfig,
    snapshot_path,
)
from replicator.server.workers.routing import PEEK_BYTES, served_by_node
from replicator.server.workers.state import FATAL, LOG_ERROR, READY, PublishedState, SharedState
from store.errors import InvalidConfigError

_log = logging.getLogger("aclstore.workers")
STATUS_INTERVAL_S: Final = 0.05
START_TIMEOUT_S: Final = 60.0
STOP_TIMEOUT_S: Final = 15.0
FIGURES_TIMEOUT_S: Final = 1.0
_RESTART_BACKOFF_S: Final = (0.5, 1.0, 2.0, 5.0)
ROUTE_WAIT_S: Final = 1.0
"""How long a new connection may stay silent before it goes to a worker unread."""
ROUTE_PENDING_MAX: Final = 1024
"""Silent new connections the node waits on at most; past that, new ones go to workers."""
TAKEN_TIMEOUT_S: Final = 1.0
"""How long the node waits for a live worker to say it took a connection; past it, the
worker is taken to have it (it is alive, only slow) and its answer is skipped when it comes."""


class ReplicaPublisher:
    """Keeps ``shared`` up with ``replica``: the offset at each commit, the rest on a timer."""

    def __init__(self, replica: Replica, shared: SharedState) -> None:
        self.replica = replica
        self.shared = shared
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._publish_status()
        replica.index.after_visible = self._committed
        self._thread = threading.Thread(target=self._run, name="aclstore-publish", daemon=True)
        self._thread.start()

    def _committed(self, position: IndexPosition) -> None:
        with self._lock:
            last = self.shared.last
            if position.offset > last.offset:
                self.shared.publish(replace(last, offset=position.offset))

    def _publish_status(self) -> None:
        status = self.replica.status()
        flags = (READY if status.ready else 0) | (FATAL if status.fatal_error else 0)
        flags |= LOG_ERROR if status.log_error else 0
        with self._lock:
            self.shared.publish(PublishedState(
                offset=max(status.offset, self.shared.last.offset),
                ready_offset=status.ready_offset,
                stopped_offset=-1 if status.stopped is None else status.stopped.offset,
                log_end_offset=status.log_end_offset,
                flags=flags,
                log_end_confirmed_at=time.monotonic() - status.log_end_age_ms / 1000.0,
            ))  # fmt: skip

    def _run(self) -> None:
        while not self._closing.wait(STATUS_INTERVAL_S):
            try:
                self._publish_status()
            except Exception:  # the replica is closing: the next round or close() settles it
                _log.debug("could not publish the replica's status", exc_info=True)

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=5)
        self.replica.index.after_visible = None


class _Worker:
    """One worker process and the node's end of its Unix socket."""

    def __init__(self, number: int, process: subprocess.Popen[bytes], control: socket.socket) -> None:
        self.number = number
        self.process = process
        self.control = control
        self.lock = threading.Lock()
        self.restarts = 0
        self.late: dict[bytes, int] = {TAKEN: 0, FIGURES_WRITTEN: 0}
        """Answers not waited for to the end (a timeout): skipped when they come."""

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def answer(self, expected: bytes, timeout: float) -> bool | None:
        """Wait (holding :attr:`lock`) for the worker's answer ``expected``: True once it
        came, False after ``timeout`` (counted as late), None when the worker's end closed."""
        self.control.settimeout(timeout)
        try:
            while True:
                got = self.control.recv(1)
                if not got:
                    return None
                if got == expected and not self.late[expected]:
                    return True
                if self.late.get(got):
                    self.late[got] -= 1  # the answer to an earlier ask that timed out
        except TimeoutError:
            self.late[expected] += 1
            return False
        finally:
            self.control.settimeout(None)


class DecisionWorkers:
    """``count`` workers behind ``listener``; ``config(n)`` is worker ``n``'s config."""

    def __init__(
        self,
        *,
        count: int,
        listener: socket.socket,
        config: Callable[[int], WorkerConfig],
        fallback: SidecarHTTPServer,
        tls: ssl.SSLContext | None,
        run_dir: Path,
    ) -> None:
        if count < 1:
            raise InvalidConfigError(f"--decision-workers {count}: give 1 or more (0 answers in the node)")
        self.count = count
        self.listener = listener
        self._config = config
        self._fallback = fallback
        self._tls = tls
        self.run_dir = run_dir
        self._closing = threading.Event()
        self._next = 0
        self.workers: list[_Worker] = []
        self._acceptor = threading.Thread(target=self._accept, name="aclstore-accept", daemon=True)
        self._watcher = threading.Thread(target=self._watch, name="aclstore-workers", daemon=True)

    def start(self) -> DecisionWorkers:
        self.workers = [self._spawn(n) for n in range(self.count)]
        for worker in self.workers:
            self._wait_ready(worker)
        self._acceptor.start()
        self._watcher.start()
        return self

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def snapshot_paths(self) -> list[Path]:
        """The workers' figure files, each written as of now by its worker (one that does
        not answer within :data:`FIGURES_TIMEOUT_S` keeps its last file)."""
        for worker in self.workers:
            if not worker.alive:
                continue
            try:
                with worker.lock:
                    worker.control.sendall(FIGURES_ASKED)
                    worker.answer(FIGURES_WRITTEN, FIGURES_TIMEOUT_S)
            except OSError:
                continue
        return [snapshot_path(self.run_dir, n) for n in range(self.count)]

    def storage_problem(self) -> str | None:
        """Why a worker cannot write its audit spool, as of now (the first one that cannot)."""
        for snapshot in read_snapshots(self.snapshot_paths()):
            if snapshot.storage_problem:
                return f"decision worker {snapshot.worker}: {snapshot.storage_problem}"
        return None

    # -- the processes ---------------------------------------------------------------------------

    def _spawn(self, number: int) -> _Worker:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        root = str(Path(__file__).resolve().parents[3])  # the child imports what we imported
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        process = subprocess.Popen(
            [sys.executable, "-m", "replicator.server.workers", str(theirs.fileno())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(theirs.fileno(),),
            env={**os.environ, "PYTHONPATH": path},
        )  # fmt: skip
        theirs.close()
        assert process.stdin is not None
        process.stdin.write(pickle.dumps(self._config(number)))
        process.stdin.close()
        return _Worker(number, process, ours)

    def _wait_ready(self, worker: _Worker) -> None:
        stdout = worker.process.stdout
        assert stdout is not None
        readable, _, _ = select.select([stdout], [], [], START_TIMEOUT_S)
        line = stdout.readline() if readable else b""
        if line.strip() != b"ready":
            worker.process.kill()
            worker.process.wait()
            raise InvalidConfigError(
                f"decision worker {worker.number} did not start (exit code "
                f"{worker.process.returncode}); its error is on the node's standard error. "
                "Run with --decision-workers 0 to answer in the node's own process"
            )

    def _watch(self) -> None:
        while not self._closing.wait(0.5):
            for at, worker in enumerate(self.workers):
                if worker.alive or self._closing.is_set():
                    continue
                _log.error(
                    "decision worker %d exited with code %s; restarting it",
                    worker.number, worker.process.returncode,
                )  # fmt: skip
                worker.control.close()
                backoff = _RESTART_BACKOFF_S[min(worker.restarts, len(_RESTART_BACKOFF_S) - 1)]
                if self._closing.wait(backoff):
                    return
                try:
                    fresh = self._spawn(worker.number)
                    self._wait_ready(fresh)
                except Exception:
                    _log.exception("could not restart decision worker %d", worker.number)
                    continue
                fresh.restarts = worker.restarts + 1
                self.workers[at] = fresh

    # -- the connections -------------------------------------------------------------------------

    def _accept(self) -> None:
        """Accept connections; route each once its first request line is in (or at once,
        under TLS), waiting at most :data:`ROUTE_WAIT_S` for it on one selector."""
        selector = selectors.DefaultSelector()
        self.listener.setblocking(False)
        selector.register(self.listener, selectors.EVENT_READ)
        pending: dict[socket.socket, tuple[tuple[str, int], float]] = {}
        try:
            while not self._closing.is_set():
                try:
                    ready = selector.select(timeout=0.2)
                except OSError:  # the listener closed under us
                    if self._closing.is_set():
                        return
                    raise
                for key, _ in ready:
                    if key.fileobj is self.listener:
                        self._accept_ready(selector, pending)
                        continue
                    connection = cast(socket.socket, key.fileobj)
                    selector.unregister(connection)
                    address, _ = pending.pop(connection)
                    self._route(connection, address)
                now = time.monotonic()
                for connection, (address, deadline) in list(pending.items()):
                    if now >= deadline:  # nothing said yet: a worker serves it (and times it out)
                        selector.unregister(connection)
                        del pending[connection]
                        self._hand(connection, address)
        finally:
            for connection in pending:
                connection.close()
            selector.close()

    def _accept_ready(
        self, selector: selectors.BaseSelector, pending: dict[socket.socket, tuple[tuple[str, int], float]]
    ) -> None:
        while True:
            try:
                connection, address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                if not self._closing.is_set():
                    _log.exception("accepting a connection failed")
                return
            connection.setblocking(True)
            if self._tls is not None or len(pending) >= ROUTE_PENDING_MAX:
                self._hand(connection, address)  # a handshake hides the request line
                continue
            pending[connection] = (address, time.monotonic() + ROUTE_WAIT_S)
            selector.register(connection, selectors.EVENT_READ)

    def _route(self, connection: socket.socket, address: tuple[str, int]) -> None:
        """The node serves a connection whose first request is not a decision
        (:mod:`.routing`); a worker serves the rest."""
        try:
            peeked = connection.recv(PEEK_BYTES, socket.MSG_PEEK)
        except OSError:
            connection.close()
            return
        if not peeked:  # closed before it asked anything
            connection.close()
            return
        if served_by_node(peeked):
            connection.settimeout(None)
            self._fallback.process_request(connection, address)
            return
        self._hand(connection, address)

    def _hand(self, connection: socket.socket, address: tuple[str, int]) -> None:
        """To the next live worker that says it took it (:data:`TAKEN`); to the node itself
        when none does."""
        for _ in range(len(self.workers)):
            worker = self.workers[self._next % len(self.workers)]
            self._next += 1
            if not worker.alive:
                continue
            try:
                with worker.lock:
                    socket.send_fds(worker.control, [CONNECTION], [connection.fileno()])
                    if worker.answer(TAKEN, TAKEN_TIMEOUT_S) is None:
                        continue  # it died before it read the connection: the next one
            except OSError:
                continue
            connection.close()
            return
        connection.settimeout(None)
        if self._tls is not None:
            connection = self._tls.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        self._fallback.process_request(connection, address)

    def close(self) -> None:
        """Stop accepting, end each worker's socket (it ships its audit events and exits)."""
        self._closing.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        if self._acceptor.is_alive():
            self._acceptor.join(timeout=5)
        for worker in self.workers:
            with contextlib.suppress(OSError):
                worker.control.shutdown(socket.SHUT_RDWR)
            worker.control.close()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for worker in self.workers:
            try:
                worker.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            if worker.process.stdout is not None:
                worker.process.stdout.close()
        if self._watcher.is_alive():
            self._watcher.join(timeout=5)
