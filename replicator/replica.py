"""The replica: a RocksDB index kept in step with the change log, answering authorize().

A :class:`Replica` opens (or creates) its index, checks the index's applied offset against
the log's watermarks, and tails the log in a background thread.  It answers from its own
state only, and every answer says which log position it reflects (:class:`Answer`).

* **Bootstrap and restart.** A new index is built from the compacted log; an existing one
  resumes from its applied offset + 1 without replaying anything.
* **Fail closed.** Until the replica has applied everything up to the log end it saw when it
  started, only super users are served; everyone else gets Kafka's
  ``AuthorizerNotReadyException`` (:class:`store.errors.AuthorizerNotReadyError`), as
  ``StandardAuthorizer`` does before its initial load completes.  A record it cannot apply
  stops it at that offset (:attr:`Replica.stopped`) until an upgrade or an operator's
  recorded :meth:`Replica.skip`.
* **Consistency tokens.** ``min_offset`` makes a call wait (bounded) until that offset is
  applied, or fail with :class:`replicator.errors.ConsistencyTimeoutError` naming the offset
  reached (Zanzibar's "at least as fresh as").
* **Settings in the log.** ``super.users`` and ``allow.everyone.if.no.acl.found`` come from
  ``ConfigAltered`` events, applied in log order on top of ``local_config``, so each answer
  uses the settings at its own log position.
* **An honest lag.** A thread of its own asks the log for its end every
  ``watermark_interval_s`` (so a request that hangs while the broker is away never holds the
  tailing loop back).  The lag is reported only from a log end confirmed within
  ``watermark_interval_s + watermark_timeout_s`` and while the log answers; otherwise it is
  unknown, and the status says how old the last confirmed figure is and why.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, TypeVar

from replicator.errors import (
    ConsistencyTimeoutError,
    IndexStorageFullError,
    ReplicaClosedError,
    ReplicaError,
    ReplicaStoppedError,
)
from replicator.index import AclIndex, CacheFigures, IndexPosition, IndexView, SkipRecord, StopRecord
from replicator.index.cache import DEFAULT_CACHE_MAX_BYTES
from replicator.index.listing import ListedResource
from replicator.leases import VisibilityGate
from replicator.tailer import Tailer, TailerSettings
from store.acl import AclBinding, AclBindingFilter, AclOperation, ResourceType
from store.authorizer import (
    Action,
    AuthorizerConfig,
    Decision,
    authorize,
    authorize_by_resource_type,
)
from store.errors import AuthorizerNotReadyError, InvalidConfigError, StoreError
from store.events import LATEST_FORMAT_VERSION
from store.fold import TooNewEvents
from store.log.base import ChangeLog
from store.principal import KafkaPrincipal

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaSettings:
    """A replica's settings; :meth:`from_properties` refuses unknown keys."""

    reader_version: int = LATEST_FORMAT_VERSION
    too_new_events: TooNewEvents = TooNewEvents.STOP
    batch_records: int = 5000
    poll_timeout_s: float = 0.05
    max_wait_s: float = 5.0
    """Upper bound of a consistency-token wait (a call's ``timeout`` is capped by it)."""
    cache_size: int = 4096
    cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES
    """The answer cache's memory budget: the estimated bytes it holds at most."""
    sync_writes: bool = False
    """fsync each batch; off by default since a lost batch is simply read again from the log."""
    max_resume_age_ms: int | None = None
    retry_backoff_s: float = 0.5
    watermark_interval_s: float = 1.0
    """How often the log is asked for its end (the lag's reference)."""
    watermark_timeout_s: float = 2.0
    """How long one such request may take before the log counts as unreachable."""
    local_config: Mapping[str, str] = field(default_factory=dict)
    """Authorizer settings of this host (e.g. its ``super.users``); the log's override them."""

    def __post_init__(self) -> None:
        self.tailer_settings()  # validates the shared fields
        if self.max_wait_s < 0 or min(
            self.retry_backoff_s, self.watermark_interval_s, self.watermark_timeout_s
        ) <= 0:
            raise ValueError(
                "max_wait_s must be >= 0; retry_backoff_s, watermark_interval_s and "
                "watermark_timeout_s > 0"
            )
        if self.cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, got {self.cache_size}")
        if self.cache_max_bytes < 0:
            raise ValueError(f"cache_max_bytes must be >= 0, got {self.cache_max_bytes}")
        AuthorizerConfig.from_properties(dict(self.local_config))

    def tailer_settings(self) -> TailerSettings:
        return TailerSettings(
            reader_version=self.reader_version,
            too_new_events=self.too_new_events,
            batch_records=self.batch_records,
            poll_timeout_s=self.poll_timeout_s,
            max_resume_age_ms=self.max_resume_age_ms,
        )

    def lag(self, log_end: int, applied: int, age_s: float, *, failing: bool) -> int | None:
        """Records beyond ``applied`` before the log end ``log_end`` confirmed ``age_s`` ago;
        None (unknown) while the log fails or that figure is older than one refresh interval
        plus its request timeout."""
        if failing or age_s > self.watermark_interval_s + self.watermark_timeout_s:
            return None
        return max(0, log_end - 1 - applied)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> ReplicaSettings:
        """Build from ``replica.*``-style keys named as the fields; unknown keys are refused."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(properties) - known)
        if unknown:
            raise InvalidConfigError(
                f"unknown replica setting(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        values = dict(properties)
        if isinstance(values.get("too_new_events"), str):
            values["too_new_events"] = TooNewEvents(values["too_new_events"])
        try:
            return cls(**values)
        except (TypeError, ValueError) as exc:
            raise InvalidConfigError(f"invalid replica settings: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Answer(Generic[T]):
    """A replica's answer and the log position it reflects (offset and that record's time)."""

    value: T
    offset: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class _LogEnd:
    """The log's end (its next offset) as the log last confirmed it, and when (monotonic s)."""

    offset: int
    confirmed_at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaStatus:
    """The replica's figures: where it is, how far behind the log, and why it may not move."""

    ready: bool
    offset: int
    timestamp_ms: int
    ready_offset: int
    log_end_offset: int
    """The log's end (next offset) as the log last confirmed it."""
    log_end_age_ms: int
    """How long ago the log confirmed ``log_end_offset``."""
    lag: int | None
    """Records beyond the applied offset, or None (unknown) while the log end is not current:
    older than the replica's refresh interval plus its request timeout, or the log failing."""
    stopped: StopRecord | None
    log_error: str | None
    fatal_error: str | None
    storage_error: str | None
    """Why the replica cannot write its index now (its file system is full), or None."""
    bindings: int
    ignored_events: int
    skipped_records: int
    reader_version: int
    too_new_events: str
    cache: CacheFigures

    def lag_text(self) -> str:
        """The lag in words, for messages: a number, or why it is unknown."""
        if self.lag is not None:
            return f"lag {self.lag}"
        why = f": {self.log_error}" if self.log_error else ""
        return (
            f"lag unknown, the log end {self.log_end_offset} was last confirmed "
            f"{self.log_end_age_ms} ms ago{why}"
        )


class ConfigCache:
    """The authorizer settings a view answers with: ``local`` (the node's own) under the log's
    settings at the view's offset, each distinct set parsed once."""

    def __init__(self, local: Mapping[str, str]) -> None:
        self._local = dict(local)
        self._parsed: dict[tuple[tuple[str, str], ...], AuthorizerConfig] = {}

    def of(self, view: IndexView) -> AuthorizerConfig:
        merged = {**self._local, **view.config}
        key = tuple(sorted(merged.items()))
        config = self._parsed.get(key)
        if config is None:
            config = AuthorizerConfig.from_properties(merged, ignore_unknown=True)
            if len(self._parsed) > 64:
                self._parsed.clear()
            self._parsed[key] = config
        return config


class DecidesFromViews:
    """``authorize`` and ``authorizeByResourceType`` answered from a view of an index, with the
    settings at the view's offset: what a replica and a decision worker's follower share.  A
    subclass gives the view (:meth:`_view`: at least ``min_offset``), ``ready`` and the
    settings (``_configs``)."""

    _configs: ConfigCache

    @property
    def ready(self) -> bool:
        raise NotImplementedError

    def _view(self, min_offset: int | None, timeout: float | None) -> IndexView:
        raise NotImplementedError

    def authorize(
        self,
        principal: KafkaPrincipal | str,
        host: str,
        actions: Sequence[Action],
        *,
        min_offset: int | None = None,
        timeout: float | None = None,
    ) -> Answer[list[Decision]]:
        """Kafka's ``Authorizer.authorize`` from this state (KIP-50)."""
        view = self._view(min_offset, timeout)
        decisions = authorize(
            view, self._configs.of(view), principal, host, actions, loading_complete=self.ready
        )
        return Answer(decisions, view.position.offset, view.position.timestamp_ms)

    def authorize_by_resource_type(
        self,
        principal: KafkaPrincipal | str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        *,
        min_offset: int | None = None,
        timeout: float | None = None,
    ) -> Answer[Decision]:
        """Kafka's ``Authorizer.authorizeByResourceType`` (KIP-679) from this state."""
        view = self._view(min_offset, timeout)
        decision = authorize_by_resource_type(
            view, self._configs.of(view), principal, host, operation, resource_type,
            loading_complete=self.ready,
        )
        return Answer(decision, view.position.offset, view.position.timestamp_ms)


class Replica(DecidesFromViews):
    """One replica of the ACL store; use :meth:`open` (or the constructor, then :meth:`start`).

    The caller owns ``log`` (the replica never closes it).
    """

    def __init__(
        self, index_dir: Path | str, log: ChangeLog, settings: ReplicaSettings | None = None
    ) -> None:
        self.settings = settings or ReplicaSettings()
        self._log = log
        self.index = AclIndex(
            index_dir,
            reader_version=self.settings.reader_version,
            cache_size=self.settings.cache_size,
            cache_max_bytes=self.settings.cache_max_bytes,
            sync_writes=self.settings.sync_writes,
        )
        try:
            self._tailer = Tailer(self.index, log, self.settings.tailer_settings())
            _, high = self._tailer.check_start()
        except BaseException:
            self.index.close()
            raise
        self.gate = VisibilityGate()
        """Broker plugins' cache leases: a batch becomes visible once they dropped older entries."""
        self.index.before_visible = self.gate.before_visible
        self.ready_offset = high - 1
        """The log end seen at start, minus one: applied up to here, the replica is ready."""
        self._log_end = _LogEnd(high, time.monotonic())
        self._ready = threading.Event()
        self._writer = threading.Lock()
        self._resume = threading.Event()
        self._closing = threading.Event()
        self._halted_at: int | None = None
        self._read_error: StoreError | None = None
        """Why the last read of the log failed (None once a read succeeds)."""
        self._storage_error: IndexStorageFullError | None = None
        """Why the last batch could not be written (None once one is)."""
        self._end_error: StoreError | None = None
        """Why the last request for the log end failed (None once one succeeds)."""
        self._fatal: BaseException | None = None
        self._configs = ConfigCache(self.settings.local_config)
        self._thread = threading.Thread(target=self._run, name="aclstore-replica", daemon=True)
        self._watcher = threading.Thread(
            target=self._watch_log_end, name="aclstore-log-end", daemon=True
        )
        self._check_ready()

    @classmethod
    def open(
        cls, index_dir: Path | str, log: ChangeLog, settings: ReplicaSettings | None = None
    ) -> Replica:
        """Open the index, check it against the log, and start tailing."""
        return cls(index_dir, log, settings).start()

    @staticmethod
    def discard_index(index_dir: Path | str) -> None:
        """Delete an index directory, so the next replica there bootstraps from the log."""
        shutil.rmtree(index_dir, ignore_errors=True)

    def start(self) -> Replica:
        self._thread.start()
        self._watcher.start()
        return self

    # -- the tailing thread -------------------------------------------------------------------

    def _run(self) -> None:
        while not self._closing.is_set():
            if self._halted_at is not None:
                # Stopped at a record: wait for an operator skip (or close).
                self._resume.wait(0.5)
                self._resume.clear()
                continue
            try:
                with self._writer:
                    result = self._tailer.step()
                    if result.stopped is not None:
                        # under the writer lock, so a skip recorded next is never lost
                        self._halted_at = result.stopped.offset
                self._read_error = self._storage_error = None
            except IndexStorageFullError as exc:  # nothing written: try again once there is room
                self._storage_error = exc
                self._closing.wait(self.settings.retry_backoff_s)
                continue
            except ReplicaError as exc:  # the log was replaced under us: permanent
                self._fail(exc)
                return
            except StoreError as exc:  # the log is unreachable: keep answering, retry
                self._read_error = exc
                self._closing.wait(self.settings.retry_backoff_s)
                continue
            except Exception as exc:  # a bug or a RocksDB failure: stop serving
                self._fail(exc)
                return
            self._check_ready()

    def _watch_log_end(self) -> None:
        """Ask the log for its end every ``watermark_interval_s`` until the replica closes."""
        settings = self.settings
        while not self._closing.wait(settings.watermark_interval_s):
            try:
                _, high = self._log.watermarks(timeout=settings.watermark_timeout_s)
            except StoreError as exc:  # unreachable: the lag is unknown until it answers
                self._end_error = exc
                continue
            except Exception as exc:  # a bug: stop serving, as the tailing loop does
                self._fail(exc)
                return
            self._log_end = _LogEnd(high, time.monotonic())
            self._end_error = None

    def _fail(self, exc: BaseException) -> None:
        self._fatal = exc
        self._ready.clear()
        self.index.notify_waiters()

    def _check_ready(self) -> None:
        if self._fatal is None and self.index.position.offset >= self.ready_offset:
            self._ready.set()

    # -- state ----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """True once everything up to the log end seen at start is applied (and no fatal error)."""
        return self._ready.is_set()

    @property
    def position(self) -> IndexPosition:
        return self.index.position

    @property
    def stopped(self) -> StopRecord | None:
        """Where and why the replica stopped, or None while it can move on."""
        return self.index.stopped

    def status(self) -> ReplicaStatus:
        position = self.index.position
        counters = self.index.counters
        end = self._log_end
        age = time.monotonic() - end.confirmed_at
        log_error = self._read_error or self._end_error
        fatal = self._fatal
        return ReplicaStatus(
            ready=self.ready,
            offset=position.offset,
            timestamp_ms=position.timestamp_ms,
            ready_offset=self.ready_offset,
            log_end_offset=end.offset,
            log_end_age_ms=int(age * 1000),
            lag=self.settings.lag(end.offset, position.offset, age, failing=log_error is not None),
            stopped=self.index.stopped,
            log_error=None if log_error is None else str(log_error),
            fatal_error=None if fatal is None else f"{type(fatal).__name__}: {fatal}",
            storage_error=None if self._storage_error is None else str(self._storage_error),
            bindings=counters.bindings,
            ignored_events=counters.ignored_events,
            skipped_records=counters.skipped_records,
            reader_version=self.settings.reader_version,
            too_new_events=self.settings.too_new_events.value,
            cache=self.index.cache_figures(),
        )

    def wait_until_ready(self, timeout: float) -> bool:
        """Wait for readiness; raise at once if the replica stopped or failed before it."""
        deadline = time.monotonic() + timeout
        while not self._ready.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            self._raise_if_cannot_move(self.ready_offset)
            if time.monotonic() >= deadline:
                return False
        return True

    def wait_applied(self, offset: int, timeout: float) -> int:
        """Wait up to ``timeout`` s until ``offset`` is applied; the offset applied by then.

        Returns early when the replica is stopped before ``offset`` or closed."""
        return self.index.wait_applied(offset, timeout).offset

    def wait_subscribed(self, subscriber: str, after: int, lease_s: float, timeout: float) -> int:
        """A broker plugin's long-poll that holds a cache lease (:mod:`replicator.leases`):
        acknowledges ``after`` and answers with the next offset announced, before it is visible."""
        return self.gate.subscribe(
            subscriber, after, lease_s, timeout, lambda: self.index.position.offset
        )

    def _raise_if_cannot_move(self, offset: int) -> None:
        if self._fatal is not None:
            fatal = self._fatal
            raise ReplicaError(f"the replica failed and serves no one: {fatal}") from fatal
        stop = self.index.stopped
        if stop is not None and stop.offset <= offset and self._halted_at is not None:
            raise ReplicaStoppedError(
                f"the replica is stopped at offset {stop.offset} and cannot reach offset "
                f"{offset}: {stop.reason}",
                offset=stop.offset,
                reason=stop.reason,
            )

    # -- answers --------------------------------------------------------------------------------

    def _view(self, min_offset: int | None, timeout: float | None) -> IndexView:
        if self._closing.is_set():
            raise ReplicaClosedError("the replica is closed")
        if min_offset is not None and self.index.position.offset < min_offset:
            wait = self.settings.max_wait_s
            if timeout is not None:
                wait = min(timeout, wait)
            reached = self.index.wait_applied(min_offset, wait)
            if reached.offset < min_offset:
                self._raise_if_cannot_move(min_offset)
                raise ConsistencyTimeoutError(
                    f"the replica has applied up to offset {reached.offset}, not the requested "
                    f"min_offset {min_offset}, after waiting {wait:g} s "
                    f"({self.status().lag_text()}); retry later or ask a replica further along",
                    min_offset=min_offset,
                    reached=reached.offset,
                )
        return self.index.view()

    def describe(
        self,
        acl_filter: AclBindingFilter,
        *,
        min_offset: int | None = None,
        timeout: float | None = None,
    ) -> Answer[list[AclBinding]]:
        """DescribeAcls from this replica's state; refused (not ready) before the initial load."""
        view = self._loaded_view(min_offset, timeout, "describing ACLs")
        return Answer(view.acls(acl_filter), view.position.offset, view.position.timestamp_ms)

    def list_acls(
        self,
        filters: Sequence[AclBindingFilter],
        *,
        min_offset: int | None = None,
        timeout: float | None = None,
        after: AclBinding | None = None,
    ) -> Answer[Iterator[ListedResource]]:
        """DescribeAcls of the union of ``filters`` as a stream: the offset is known at once,
        the bindings (in Kafka's order, grouped by pattern) are read from one snapshot as the
        caller consumes the iterator, on the caller's thread; with ``after``, those after that
        binding in Kafka's order (a cursor).  Refused before the initial load, as
        :meth:`describe`."""
        view = self._loaded_view(min_offset, timeout, "listing ACLs")
        return Answer(view.listing(filters, after), view.position.offset, view.position.timestamp_ms)

    def _loaded_view(self, min_offset: int | None, timeout: float | None, doing: str) -> IndexView:
        """:meth:`_view`, refused (not ready) before the initial load: DescribeAcls reads."""
        view = self._view(min_offset, timeout)
        if not self.ready:
            raise AuthorizerNotReadyError(
                f"the replica has applied up to offset {view.position.offset} of the "
                f"{self.ready_offset} it must load before {doing}; retry once ready"
            )
        return view

    def config(self, *, min_offset: int | None = None) -> Answer[AuthorizerConfig]:
        """The authorizer settings in force at the replica's position."""
        view = self._view(min_offset, None)
        return Answer(self._configs.of(view), view.position.offset, view.position.timestamp_ms)

    # -- operator actions -------------------------------------------------------------------------

    def skip(self, offset: int, *, reason: str, actor: str) -> SkipRecord:
        """Pass over the record the replica stopped at; the decision is recorded in the index."""
        with self._writer:
            skip = self.index.record_skip(offset, reason=reason, actor=actor)
            self._halted_at = None
        self._resume.set()
        return skip

    def close(self) -> None:
        self._closing.set()
        self._resume.set()
        self.gate.close()
        for thread in (self._thread, self._watcher):
            if thread.is_alive():
                thread.join()
        self.index.close()

    def __enter__(self) -> Replica:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
