"""The sidecar's Prometheus figures (``GET /metrics``), one registry per node.

Counted on the request path: decisions by result and endpoint, and a decision latency
histogram (per request: a batch of actions is one observation).  Read at scrape time from the
replica and the audit emitter: the applied offset, the lag behind the log end (absent while the
log end is not current, with its age and whether the log fails beside it), the offset the
replica is stopped at (-1 when it is not), readiness, and the audit spool's figures (events
on disk not yet shipped, dropped past the bound, sent).  Each node has its own
``CollectorRegistry`` so that several nodes in one process never mix their figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"

LATENCY_BUCKETS: Final = (
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0,
)  # fmt: skip
"""Seconds; the sidecar's target is a p99 under 2 ms, so the buckets are fine below it."""


@dataclass(frozen=True, slots=True)
class ReplicaFigures:
    """What the replica reports at scrape time (from ``Replica.status()``)."""

    ready: bool
    applied_offset: int
    lag: int | None
    """None while the log end is not current: no sample is exported then."""
    log_end_offset: int
    log_end_age_ms: int
    log_error: bool
    stopped_at_offset: int | None
    bindings: int
    ignored_events: int
    skipped_records: int
    cache_entries: int
    cache_hits: int
    cache_misses: int
    cache_invalidated: int
    cache_bytes: int
    cache_evicted: int


@dataclass(frozen=True, slots=True)
class AuditFigures:
    """What the audit emitter reports at scrape time."""

    buffered: int
    """Events on disk not yet acknowledged by the audit log (the spool's backlog)."""
    buffer_capacity: int
    dropped: int
    sent: int
    sink_up: bool
    spool_bytes: int
    corrupt_lines: int = 0
    sender_restarts: int = 0
    """Times the node restarted its audit sender process after it exited on its own."""


class _ScrapeCollector(Collector):
    """Reads the replica's and the audit emitter's figures when Prometheus scrapes."""

    def __init__(self) -> None:
        self.replica: Callable[[], ReplicaFigures] | None = None
        self.audit: Callable[[], AuditFigures] | None = None

    def collect(self) -> Iterator[Metric]:
        if self.replica is not None:
            yield from _replica_metrics(self.replica())
        if self.audit is not None:
            yield from _audit_metrics(self.audit())


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _replica_metrics(f: ReplicaFigures) -> Iterator[Metric]:
    yield _gauge("aclstore_replica_ready", "1 once the replica has caught up (readyz)", f.ready)
    yield _gauge(
        "aclstore_replica_applied_offset", "Last log offset applied to the index", f.applied_offset
    )
    if f.lag is not None:
        yield _gauge(
            "aclstore_replica_lag",
            "Log end offset minus one minus the applied offset; absent while the log end is "
            "not current (see aclstore_replica_log_end_age_seconds and _log_error)",
            f.lag,
        )
    yield _gauge(
        "aclstore_replica_log_end_offset", "Log end (high watermark) last confirmed by the log",
        f.log_end_offset,
    )
    yield _gauge(
        "aclstore_replica_log_end_age_seconds",
        "Seconds since the log last confirmed its end",
        f.log_end_age_ms / 1000.0,
    )
    yield _gauge(
        "aclstore_replica_log_error",
        "1 while the log cannot be read or asked for its end, else 0",
        f.log_error,
    )
    yield _gauge(
        "aclstore_replica_stopped_at_offset",
        "Offset of the record the replica is stopped at, -1 when it is not stopped",
        -1 if f.stopped_at_offset is None else f.stopped_at_offset,
    )
    yield _gauge("aclstore_replica_bindings", "Live ACL bindings in the index", f.bindings)
    yield CounterMetricFamily(
        "aclstore_replica_ignored_events",
        "Events ignored because they need a newer format (too_new_events=ignore)",
        value=f.ignored_events,
    )
    yield CounterMetricFamily(
        "aclstore_replica_skipped_records",
        "Records skipped by an operator",
        value=f.skipped_records,
    )
    yield _gauge(
        "aclstore_replica_cache_entries", "Resources whose matching ACLs are cached", f.cache_entries
    )
    yield CounterMetricFamily(
        "aclstore_replica_cache_hits", "Lookups of matching ACLs the cache answered", f.cache_hits
    )
    yield CounterMetricFamily(
        "aclstore_replica_cache_misses",
        "Lookups of matching ACLs read from RocksDB (not cached, or cached after the view)",
        value=f.cache_misses,
    )
    yield CounterMetricFamily(
        "aclstore_replica_cache_invalidated",
        "Cached answers dropped because a change applied to their resource",
        value=f.cache_invalidated,
    )
    yield from cache_memory_metrics(f.cache_bytes, f.cache_evicted)


def cache_memory_metrics(held_bytes: int, evicted: int) -> Iterator[Metric]:
    """The answer cache's estimated memory and its evictions (the node's and a worker's)."""
    yield _gauge(
        "aclstore_replica_cache_bytes",
        "Estimated bytes the answer cache holds (bounded by --replica-cache-mb)",
        held_bytes,
    )
    yield CounterMetricFamily(
        "aclstore_replica_cache_evicted",
        "Cached answers and pattern summaries dropped to stay within the cache's bounds",
        value=evicted,
    )


def _audit_metrics(f: AuditFigures) -> Iterator[Metric]:
    yield _gauge(
        "aclstore_audit_buffered_events",
        "Audit events written to the on-disk spool and not yet acknowledged by the audit log",
        f.buffered,
    )
    yield _gauge(
        "aclstore_audit_buffer_capacity_events",
        "Bound of the spool's backlog; past it new audit events are dropped",
        f.buffer_capacity,
    )
    yield _gauge(
        "aclstore_audit_spool_bytes", "Bytes of spool segments not yet shipped", f.spool_bytes
    )
    yield CounterMetricFamily(
        "aclstore_audit_dropped_events",
        "Audit events dropped because the spool's backlog was at its bound (never silent)",
        value=f.dropped,
    )
    yield CounterMetricFamily(
        "aclstore_audit_sent_events", "Audit events the sink acknowledged", value=f.sent
    )
    yield CounterMetricFamily(
        "aclstore_audit_spool_corrupt_lines",
        "Lines of the audit spool that could not be read back (changed on disk) and were skipped",
        value=f.corrupt_lines,
    )
    yield _gauge(
        "aclstore_audit_sink_up", "1 when the last write to the audit sink succeeded", f.sink_up
    )
    yield CounterMetricFamily(
        "aclstore_audit_sender_restarts",
        "Times the audit sender process exited on its own and was restarted by the node",
        value=f.sender_restarts,
    )


class SidecarMetrics:
    """The node's registry and the instruments the request path updates."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.decisions = Counter(
            "aclstore_decisions",
            "Authorization decisions by result and endpoint",
            ["result", "endpoint"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "aclstore_decision_latency_seconds",
            "Time to decide one authorize request (all its actions), parsing to answer",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.http_responses = Counter(
            "aclstore_http_responses",
            "HTTP responses by route and status code",
            ["route", "status"],
            registry=self.registry,
        )
        self.forwarded_requests = Counter(
            "aclstore_worker_forwarded_requests",
            "Requests decision workers sent on to the node's process (not decisions, on a "
            "connection whose first request was a decision or that TLS hid from the node)",
            registry=self.registry,
        )
        self.exposed = self.registry
        """What ``/metrics`` renders: the registry, or with decision workers the registry and
        their figures (:class:`replicator.server.workers.figures.MergedRegistry`)."""
        self._scrape = _ScrapeCollector()
        self.registry.register(self._scrape)
        self._decision_children: dict[tuple[str, str], Counter] = {}
        self._latency_children: dict[str, Histogram] = {}

    def bind_replica(self, figures: Callable[[], ReplicaFigures]) -> None:
        self._scrape.replica = figures

    def bind_audit(self, figures: Callable[[], AuditFigures]) -> None:
        self._scrape.audit = figures

    def count_decisions(self, endpoint: str, allowed: int, denied: int) -> None:
        if allowed:
            self._decision_child("ALLOWED", endpoint).inc(allowed)
        if denied:
            self._decision_child("DENIED", endpoint).inc(denied)

    def observe_latency(self, endpoint: str, seconds: float) -> None:
        child = self._latency_children.get(endpoint)
        if child is None:
            child = self._latency_children[endpoint] = self.latency.labels(endpoint)
        child.observe(seconds)

    def _decision_child(self, result: str, endpoint: str) -> Counter:
        key = (result, endpoint)
        child = self._decision_children.get(key)
        if child is None:
            child = self._decision_children[key] = self.decisions.labels(result, endpoint)
        return child

    def render(self) -> bytes:
        """The Prometheus text exposition of every figure."""
        return generate_latest(self.exposed)
