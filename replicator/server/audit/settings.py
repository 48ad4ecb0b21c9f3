"""How a node audits: what to emit, how much to keep on disk, how to send (:class:`AuditSettings`).

Read by the request path (:mod:`replicator.server.audit.emitter`) and by the sender process
(:mod:`replicator.server.audit.sender`), which gets them when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditSettings:
    """How much to emit, how much to keep on disk while the sink is down, how to send."""

    allow_sample_rate: float = 0.01
    """Share of ALLOWED decisions emitted (0 to 1); DENIED ones are always emitted."""
    usage_period_s: float = 3600.0
    """Each binding that decides an ALLOWED request is emitted at least once per period of this
    length, sampled or not (0: the sample alone)."""
    buffer_max_events: int = 1_000_000
    """Bound of the spool's backlog (events written, not yet shipped); past it, events are
    dropped and counted."""
    segment_bytes: int = 16 << 20
    """A spool segment rolls past this size; shipped segments are removed whole."""
    batch_events: int = 2000
    """Events per append to the audit log, at most."""
    sink_timeout_s: float = 5.0
    retry_backoff_s: float = 1.0
    linger_s: float = 0.25
    """How long the sender lets events gather before a batch: it wakes a few times a second
    and appends large batches (one transaction, one acknowledgement each), so it takes little
    from the request threads (shorter lingers and smaller batches cost decisions/s:
    ``python -m bench audit``)."""
    sender_nice: int = 10
    """How much lower than the node's the sender process's scheduling priority is (its
    ``nice`` increment; 0: the same).  The sender is background work: at the same priority,
    each of its bursts takes a core the request threads are about to be woken on.  A lower
    priority only yields the core when both are runnable; a sender that gets no core at all
    still leaves its events in the bounded spool, counted when it overflows."""
    source: str = "aclstore"
    """CloudEvents ``source``: which node decided."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.allow_sample_rate <= 1.0:
            raise ValueError(f"allow_sample_rate must be within [0, 1], got {self.allow_sample_rate}")
        for name in ("buffer_max_events", "batch_events", "segment_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.sender_nice <= 19:
            raise ValueError(f"sender_nice must be within [0, 19], got {self.sender_nice}")
        if self.usage_period_s < 0:
            raise ValueError(f"usage_period_s must be >= 0, got {self.usage_period_s}")
        if self.sink_timeout_s <= 0 or self.retry_backoff_s <= 0 or self.linger_s < 0:
            raise ValueError("sink_timeout_s and retry_backoff_s must be > 0, linger_s >= 0")
