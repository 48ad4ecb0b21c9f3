"""One decision worker: a process answering decisions from a follower of the node's index.

The node accepts each connection and hands it to a worker over a Unix socket (the descriptor
itself, ``SCM_RIGHTS``); the worker serves it to the end, keep-alive and TLS included, on a
thread of its own.  Decisions are answered here (:class:`~.replica.FollowerReplica`); every
other request goes to the node (:class:`~.forward.Forwarder`).  A worker audits its own
decisions into a spool of its own, shipped by a sender of its own, and writes its figures for
the node's ``/metrics`` (:mod:`.figures`).

It stops when the node closes its end of the Unix socket (or dies: the socket ends then too),
or on SIGTERM: it answers the requests in hand and no other (:meth:`SidecarHTTPServer.drain`),
ships what audit events it can, writes its last figures and exits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from replicator.contract.endpoints import ENDPOINTS
from replicator.index.follower import FollowerIndex
from replicator.replica import ReplicaSettings
from replicator.server.audit import AuditEmitter, AuditSettings, AuditSinkOpener
from replicator.server.callers import CallerPolicy
from replicator.server.collector import WORKER_FULL_COLLECTION_S, CollectorPolicy
from replicator.server.decisions import DecisionEndpoints, IdentityMapper
from replicator.server.http import FORWARDED, HttpLimits, Route, SidecarHTTPServer
from replicator.server.metrics import SidecarMetrics, cache_memory_metrics
from replicator.server.tls import TlsSettings
from replicator.server.tokens import CredentialStore
from replicator.server.workers.figures import snapshot_of, write_snapshot
from replicator.server.workers.forward import Forwarder
from replicator.server.workers.replica import FollowerReplica
from replicator.server.workers.state import SharedState

_log = logging.getLogger("aclstore.worker")
REFRESH_S: Final = 0.05
"""How often an idle worker catches up with the node's published offset (a request catches
up at once): keeps the follower's cache current between requests."""
IDLE_CATCH_UP_S: Final = 5.0
"""How often a worker catches up even when the node published nothing new.  A catch-up also
reads the compactions the node's RocksDB has done since: until then the worker keeps the
table files they replaced open (a secondary instance holds every file of the version it
read), and the file system cannot free them.  After a bulk load, whose compactions run on
after its last write, that is most of the index's size held per worker."""
SNAPSHOT_S: Final = 1.0
CONNECTION: Final = b"c"
"""What the node sends with each connection's descriptor (answered :data:`TAKEN`)."""
TAKEN: Final = b"t"
"""A worker's answer to each descriptor it received, sent before it reads the connection:
the node keeps its own copy until then, so a connection handed to a worker that dies first
(a killed worker's memory takes a while to free, and its socket takes descriptors meanwhile)
goes to the next worker instead of being closed unread."""
FIGURES_ASKED: Final = b"m"
"""What the node sends to have the worker's figures written now (answered
:data:`FIGURES_WRITTEN`): a scrape of ``/metrics`` reads them as of the scrape."""
FIGURES_WRITTEN: Final = b"k"
FORWARD_TIMEOUT_S: Final = 600.0
DRAIN_S: Final = 5.0
"""How long a stopping worker waits for the requests in hand to be answered."""
"""Bound of one forwarded request's wait for the node (a long downgrade check included)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig:
    """What a worker is given on its standard input (pickled)."""

    number: int
    index_dir: Path
    run_dir: Path
    upstream: tuple[str, int]
    secret: str
    replica: ReplicaSettings
    limits: HttpLimits
    tls: TlsSettings | None
    credentials_path: Path
    authorize_networks: tuple[str, ...]
    ssl_principal_mapping_rules: str | None
    kerberos_rules: tuple[str, ...] | None
    kerberos_default_realm: str
    audit: AuditSettings | None
    audit_sink: AuditSinkOpener | None
    spool_dir: Path | None
    log_level: int


def state_path(run_dir: Path) -> Path:
    return run_dir / "replica.state"


def snapshot_path(run_dir: Path, number: int) -> Path:
    return run_dir / f"worker-{number}.metrics.json"


def secondary_path(run_dir: Path, number: int) -> Path:
    return run_dir / f"worker-{number}.secondary"


class _CacheCollector(Collector):
    """The follower's cache figures, under the names the node's replica exports them."""

    def __init__(self, index: FollowerIndex) -> None:
        self._index = index

    def collect(self) -> Iterator[Metric]:
        figures = self._index.cache_figures()
        yield GaugeMetricFamily(
            "aclstore_replica_cache_entries", "Resources whose matching ACLs are cached",
            value=figures.size,
        )  # fmt: skip
        yield CounterMetricFamily(
            "aclstore_replica_cache_hits", "Lookups of matching ACLs the cache answered",
            value=figures.hits,
        )  # fmt: skip
        yield CounterMetricFamily(
            "aclstore_replica_cache_misses",
            "Lookups of matching ACLs read from RocksDB (not cached, or cached after the view)",
            value=figures.misses,
        )
        yield CounterMetricFamily(
            "aclstore_replica_cache_invalidated",
            "Cached answers dropped because a change applied to their resource",
            value=figures.evicted_by_changes,
        )
        yield from cache_memory_metrics(figures.bytes, figures.evicted_by_bounds)


def catch_up_due(applied: int, published: int, idle_s: float) -> bool:
    """Whether a worker's refresh catches up: behind the node's published offset, or not
    caught up for :data:`IDLE_CATCH_UP_S`."""
    return applied < published or idle_s >= IDLE_CATCH_UP_S


class DecisionWorker:
    """The worker's parts, built from its config; :meth:`serve` until told to stop."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        secondary = secondary_path(config.run_dir, config.number)
        shutil.rmtree(secondary, ignore_errors=True)  # a secondary's files are its own
        self.index = FollowerIndex(
            config.index_dir, secondary, cache_size=config.replica.cache_size,
            cache_max_bytes=config.replica.cache_max_bytes,
        )  # fmt: skip
        self.shared = SharedState.open(state_path(config.run_dir))
        self.replica = FollowerReplica(self.index, self.shared, config.replica)
        self.metrics = SidecarMetrics()
        self.metrics.registry.register(_CacheCollector(self.index))
        self.audit: AuditEmitter | None = None
        if config.audit is not None and config.audit_sink is not None and config.spool_dir is not None:
            self.audit = AuditEmitter(config.audit_sink, config.spool_dir, config.audit)
            self.metrics.bind_audit(self.audit.figures)
        policy = CallerPolicy(
            credentials=CredentialStore(config.credentials_path),
            authorize_networks=config.authorize_networks,
            ssl_principal_mapping_rules=config.ssl_principal_mapping_rules,
        )
        identities = IdentityMapper(
            ssl_principal_mapping_rules=config.ssl_principal_mapping_rules,
            kerberos_rules=config.kerberos_rules,
            kerberos_default_realm=config.kerberos_default_realm,
        )
        decisions = DecisionEndpoints(
            replica=self.replica, policy=policy, identities=identities, metrics=self.metrics,
            audit=self.audit, worker=config.number,
        )  # fmt: skip
        handlers = decisions.handlers()
        routes = [Route(e.method, e.path, e.name, handlers[e.name]) for e in ENDPOINTS if e.name in handlers]
        host, port = config.upstream
        self.server = SidecarHTTPServer(
            ("127.0.0.1", 0), routes, on_response=self._count_response, limits=config.limits,
            fallback=Forwarder(
                host, port, config.secret, timeout_s=FORWARD_TIMEOUT_S,
                node_idle_timeout_s=config.limits.idle_timeout_s,
            ),
            bind=False,
        )  # fmt: skip
        self.tls = config.tls.server_context() if config.tls is not None else None
        self.stopping = threading.Event()

    def _count_response(self, route: str, status: int) -> None:
        if route != FORWARDED:  # the node counts what it answers
            self.metrics.http_responses.labels(route, str(status)).inc()
        else:
            self.metrics.forwarded_requests.inc()

    def _refresh(self) -> None:
        """Catch up when the node published more, or every :data:`IDLE_CATCH_UP_S` anyway;
        write the figures every second."""
        ticks_per_snapshot = max(1, round(SNAPSHOT_S / REFRESH_S))
        tick = 0
        while not self.stopping.wait(REFRESH_S):
            with contextlib.suppress(Exception):
                if catch_up_due(
                    self.index.position.offset, self.shared.offset(),
                    time.monotonic() - self.index.caught_up_at,
                ):  # fmt: skip
                    self.index.catch_up()
            tick += 1
            if tick % ticks_per_snapshot == 0:
                self._write_figures()

    def _write_figures(self) -> None:
        try:
            snapshot = snapshot_of(
                self.metrics.registry, worker=self.config.number,
                applied_offset=self.index.position.offset,
                storage_problem=None if self.audit is None else self.audit.storage_problem(),
            )  # fmt: skip
            write_snapshot(snapshot_path(self.config.run_dir, self.config.number), snapshot)
        except Exception:
            _log.exception("could not write the worker's figures")

    def serve(self, control: socket.socket) -> None:
        """Serve the connections the node hands over ``control`` until it ends."""
        refresher = threading.Thread(target=self._refresh, name="aclstore-worker-refresh", daemon=True)
        refresher.start()
        self._write_figures()
        try:
            while not self.stopping.is_set():
                try:
                    message, fds, _, _ = socket.recv_fds(control, 64, 16)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not message and not fds:
                    break  # the node closed its end, or died
                if fds:
                    control.sendall(TAKEN * len(fds))
                for fd in fds:
                    self._take(fd)
                if FIGURES_ASKED in message:  # the node's /metrics is being scraped
                    self._write_figures()
                    control.sendall(FIGURES_WRITTEN)
        finally:
            self.close()

    def _take(self, fd: int) -> None:
        connection = socket.socket(fileno=fd)
        try:
            address = connection.getpeername()
        except OSError:
            connection.close()
            return
        if self.tls is not None:
            connection = self.tls.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        self.server.process_request(connection, address)

    def close(self) -> None:
        self.stopping.set()
        # The requests in hand are answered first and no other is: a request must not meet a
        # closed spool or index (a 503 naming a full disk, when the node has only stopped).
        if not self.server.drain(DRAIN_S):
            _log.warning("%d connection(s) still open after %.0f s; closing the worker anyway",
                         self.server.open_connections, DRAIN_S)  # fmt: skip
        if self.audit is not None:
            self.audit.close()
        self._write_figures()
        self.index.close()
        self.shared.close()


def main() -> int:
    config = pickle.load(sys.stdin.buffer)
    if not isinstance(config, WorkerConfig) or len(sys.argv) < 2:
        raise SystemExit("a decision worker takes a pickled WorkerConfig on its standard input "
                         "and its Unix socket's descriptor as its argument")  # fmt: skip
    logging.basicConfig(
        level=config.log_level,
        format=f"%(asctime)s %(levelname)s %(name)s[worker-{config.number}]: %(message)s",
    )
    control = socket.socket(fileno=int(sys.argv[1]))
    worker = DecisionWorker(config)
    # Short collector pauses (replicator.server.collector).
    collector = CollectorPolicy(collect_s=WORKER_FULL_COLLECTION_S).start()
    sys.setswitchinterval(0.0005)

    def stop(*_: object) -> None:
        worker.stopping.set()
        with contextlib.suppress(OSError):
            control.shutdown(socket.SHUT_RDWR)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the node, which stops us
    os.write(1, b"ready\n")
    worker.serve(control)
    collector.close()
    return 0
