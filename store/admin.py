"""The admin API: KIP-140's CreateAcls / DescribeAcls / DeleteAcls (with KIP-290 pattern types)
and KIP-133's DescribeConfigs / AlterConfigs for the store's own settings, over a change log.

``AclAdmin`` keeps the state projected from the log (:mod:`store.projection`) and, before each
request, catches up to the log's high watermark, so several admins writing one log stay
consistent.  Every call returns the log offset its answer reflects (a consistency token that
replicas can wait for).

* Callers are authorized as a Kafka broker does: DESCRIBE on CLUSTER to describe ACLs, ALTER on
  CLUSTER to create or delete them, DESCRIBE_CONFIGS / ALTER_CONFIGS on CLUSTER for configs
  (super users always), using the decision rules over the current state.
* Creates are not transactional: one result per binding, invalid ones refused with Kafka's
  messages; a binding already live (or repeated in the request) succeeds and writes nothing,
  which also makes retrying a failed create safe.
* Deletes give one result per filter, each matched against the state before the request; each
  deleted binding is written once as ``AclDeleted`` followed at once by a tombstone for its key.

Why the tombstone is written with the ``AclDeleted`` event rather than later by a sweeper: the
event is the history (who deleted what, when), and the broker itself keeps it readable for
``min.compaction.lag.ms``; the tombstone then makes the binding leave the compacted log after
``delete.retention.ms``.  The grace period is the broker's guarantee, not a process that must
stay alive, and no later writer can tombstone a key that another writer has re-created in
between (the tombstone is ordered right behind the delete, before any later create).  A replica
that is offline longer than those two periods must rebuild from the compacted log.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from store.acl import CLUSTER_NAME, AclBinding, AclBindingFilter, AclOperation, ResourceType
from store.authorizer import Action, authorize
from store.codec import AvroEventCodec, EventCodec, binding_key, config_key
from store.desired.errors import ScopeChangedError
from store.desired.scope import Scope
from store.downgrade import DowngradeAnalyst, DowngradeVerdict, analyse_downgrade
from store.errors import ClusterAuthorizationError, InvalidRequestError, StoreError
from store.events import (
    CONFIG_EVENT_MIN_READER_VERSION,
    AclCreated,
    AclDeleted,
    ChangeEvent,
    ConfigAltered,
)
from store.fold import Change, ChangeKind, FoldPolicy, TooNewEvents, fold_record
from store.log.base import ChangeLog, LogOffsetOutOfRangeError, LogUnavailableError
from store.principal import KafkaPrincipal
from store.projection import AclStoreState
from store.settings import (
    CHANGE_REFERENCE_CONFIG,
    FORMAT_DOWNGRADE_FORCED_CONFIG,
    FORMAT_VERSION_CONFIG,
    AlterConfigPolicy,
    AlterConfigsRequest,
    ConfigEntry,
    check_alterable,
    check_config,
    format_gate_refusal,
    format_version_of,
)
from store.validation import ValidationLayer, plan_create_acls, validate_filter

LOCAL_HOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class AclCreationResult:
    binding: AclBinding
    error: StoreError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class CreateAclsResult:
    """One result per requested binding, in request order; ``records_written`` new events."""

    results: tuple[AclCreationResult, ...]
    offset: int
    records_written: int


@dataclass(frozen=True, slots=True)
class AclDeletionResult:
    filter: AclBindingFilter
    deleted: tuple[AclBinding, ...] = ()
    error: StoreError | None = None


@dataclass(frozen=True, slots=True)
class DeleteAclsResult:
    """One result per filter, in request order; ``records_written`` ``AclDeleted`` events."""

    results: tuple[AclDeletionResult, ...]
    offset: int
    records_written: int


@dataclass(frozen=True, slots=True)
class AlterAclsResult:
    """What one combined write did: the deletions, the creations and the settings changed,
    all appended as one batch ending at ``offset``; ``records_written`` counts the events."""

    deleted: tuple[AclDeletionResult, ...]
    created: tuple[AclCreationResult, ...]
    configs_changed: tuple[str, ...]
    offset: int
    records_written: int


@dataclass(frozen=True, slots=True)
class DescribeAclsResult:
    bindings: tuple[AclBinding, ...]
    offset: int


@dataclass(frozen=True, slots=True)
class DescribeConfigsResult:
    entries: tuple[ConfigEntry, ...]
    offset: int


@dataclass(frozen=True, slots=True)
class AlterConfigsResult:
    """``changed`` lists the settings written (none when ``validate_only``)."""

    changed: tuple[str, ...]
    offset: int
    validate_only: bool


def _remaining(deadline: float) -> float:
    return max(0.01, deadline - time.monotonic())


MAX_REFERENCE_LENGTH = 1024


def _check_reference(reference: str, finalized: int) -> None:
    if finalized < CONFIG_EVENT_MIN_READER_VERSION:
        raise InvalidRequestError(
            f"a reference is written as a setting, which needs acl.format.version "
            f"{CONFIG_EVENT_MIN_READER_VERSION} (finalized: {finalized}); leave the reference out"
        )
    if not reference.strip() or len(reference) > MAX_REFERENCE_LENGTH:
        raise InvalidRequestError(
            f"reference {reference[:80]!r}: give 1 to {MAX_REFERENCE_LENGTH} characters (a commit "
            "id, a ticket), or no reference"
        )


def _change_json(c: Change) -> dict[str, object]:
    event = c.event
    what: dict[str, object] = (
        {"change": "altered", "setting": c.config_name, "value": c.config_value}
        if c.kind is ChangeKind.CONFIG
        else {"change": "created" if c.kind is ChangeKind.CREATED else "deleted", "binding": str(c.binding)}
    )
    return {
        "offset": c.offset,
        **what,
        "actor": getattr(event, "actor", None),
        "timeMs": getattr(event, "time_ms", None) or c.timestamp_ms,
    }


def _change_text(c: Change) -> str:
    j = _change_json(c)
    moment = datetime.fromtimestamp(int(str(j["timeMs"])) / 1000, tz=UTC)
    when = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    who = j["actor"] or "an unknown actor (a tombstone)"
    if c.kind is ChangeKind.CONFIG:
        value = "its default" if c.config_value is None else repr(c.config_value)
        return f"setting {c.config_name} set to {value} by {who} at offset {c.offset} ({when})"
    return f"{j['binding']} {j['change']} by {who} at offset {c.offset} ({when})"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _Without:
    """The live bindings less those a request deletes (what its creates are checked against)."""

    def __init__(self, live: Container[AclBinding], removed: set[AclBinding]) -> None:
        self.live, self.removed = live, removed

    def __contains__(self, binding: object) -> bool:
        return binding not in self.removed and binding in self.live


class AclAdmin:
    """The admin API over one change log.

    ``super_users`` are this process's own super users (a broker's static ``super.users``),
    honoured in addition to the log's, so that an empty store can be administered at all.
    ``skip_offsets`` lists records an operator has decided to pass over (a corrupt record
    otherwise stops every request with an error naming its offset).

    ``timeout`` bounds each call as a whole (catching up and appending).  A new admin over a
    long log replays it first: call :meth:`sync` with a timeout long enough for that.

    The admin keeps its own state (:class:`~store.projection.AclStoreState`, read through
    :mod:`store.fold`) even on a node whose replica tails the same log, so the node reads the
    log twice.  Reading the replica's state instead is not safe:

    * every write is validated against the log's end, under this admin's lock: :meth:`sync`
      catches up to the high watermark first and applies this admin's own appends without
      reading them back (read-your-writes); the replica applies in its own thread and may
      lag, stop at a record it refuses, or be rebuilding;
    * the replica may read with an older ``reader_version`` and ``too_new_events=IGNORE``
      (treating newer bindings as absent); a write validated against that state could
      duplicate or miss bindings, and a format downgrade check would not see them;
    * the admin's checks (duplicates, DeleteAcls filters, format downgrades) read every
      binding from an in-memory index, which the replica keeps on disk on purpose.
    """

    def __init__(
        self,
        log: ChangeLog,
        *,
        codec: EventCodec | None = None,
        super_users: Iterable[str] = (),
        alter_config_policy: AlterConfigPolicy | None = None,
        downgrade_analyst: DowngradeAnalyst | None = None,
        validation_layer: ValidationLayer = ValidationLayer.BROKER,
        skip_offsets: Iterable[int] = (),
        timeout: float = 10.0,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.log = log
        self.codec = codec or AvroEventCodec()
        self.super_users = frozenset(str(KafkaPrincipal.parse(u)) for u in super_users)
        self.policy = alter_config_policy
        self.downgrade_analyst = downgrade_analyst
        self.validation_layer = validation_layer
        self.skip_offsets = frozenset(skip_offsets)
        self.timeout = timeout
        self.clock = clock
        self.state = AclStoreState()
        self._written: dict[int, tuple[bytes, ChangeEvent | None]] = {}
        self._lock = threading.RLock()

    # --- reading the log --------------------------------------------------------------------

    def sync(self, *, timeout: float | None = None) -> int:
        """Apply the log up to its current high watermark; return the offset reached."""
        with self._lock:
            return self._sync(self._deadline(timeout))

    def _deadline(self, timeout: float | None) -> float:
        """One deadline per call: catching up and appending share the caller's timeout."""
        return time.monotonic() + (self.timeout if timeout is None else timeout)

    def _sync(self, deadline: float) -> int:
        _, high = self.log.watermarks(timeout=_remaining(deadline))
        if high < self.state.next_offset:
            raise LogOffsetOutOfRangeError(
                f"{self.log} ends at offset {high - 1}, before offset {self.state.offset} this "
                "admin has already applied: the log was recreated or replaced; open a new AclAdmin"
            )
        # What this admin appended itself needs no read-back (a batched create would otherwise
        # fetch every record it just wrote); another writer's record ends that shortcut.
        self.state.apply_written(self._written, end=high, skip_offsets=self.skip_offsets)
        while self.state.next_offset < high:
            if time.monotonic() >= deadline:
                raise LogUnavailableError(
                    f"could not read {self.log} up to offset {high - 1} (reached "
                    f"{self.state.offset}) within the timeout; check the log, then retry"
                )
            records = self.log.read(self.state.next_offset, timeout=min(_remaining(deadline), 1.0))
            self.state.apply_records(records, known=self._written, skip_offsets=self.skip_offsets)
            self.state.apply_written(self._written, end=high, skip_offsets=self.skip_offsets)
        self._written.clear()
        return self.state.offset

    # --- authorization ----------------------------------------------------------------------

    def require_cluster(
        self, actor: KafkaPrincipal | str, host: str, operation: AclOperation, why: str,
        *, timeout: float | None = None,
    ) -> str:  # fmt: skip
        """The actor, if it holds ``operation`` on the CLUSTER as this admin's requests check
        it (after catching up with the log); else :class:`ClusterAuthorizationError` saying it
        is needed to ``why``.  For a node's reads that are not the admin's own (a dry run)."""
        with self._lock:
            self._sync(self._deadline(timeout))
            return self._require(actor, host, operation, why)

    def _require(
        self, actor: KafkaPrincipal | str, host: str, operation: AclOperation, why: str
    ) -> str:
        principal = actor if isinstance(actor, KafkaPrincipal) else KafkaPrincipal.parse(actor)
        config = self.state.settings.authorizer_config(self.super_users)
        action = Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)
        if not authorize(self.state.index, config, principal, host, [action])[0].allowed:
            raise ClusterAuthorizationError(
                f"{principal} from {host} is not authorized to {operation.name} the CLUSTER "
                f"resource, which is needed to {why}: add an ALLOW ACL for it (or list the "
                "principal in super.users)"
            )
        return str(principal)

    # --- writing ----------------------------------------------------------------------------

    def _append(
        self, events: Sequence[ChangeEvent | tuple[bytes, None]], deadline: float
    ) -> list[int]:
        finalized = self.state.settings.format_version
        records: list[tuple[bytes, bytes | None]] = []
        for item in events:
            if isinstance(item, tuple):
                records.append(item)
                continue
            key = (
                config_key(item.name)
                if isinstance(item, ConfigAltered)
                else binding_key(item.binding)
            )
            writer = max(finalized, item.min_reader_version)
            records.append((key, self.codec.encode(item, writer_version=writer)))
        offsets = self.log.append(records, timeout=_remaining(deadline))
        for offset, (key, _), item in zip(offsets, records, events, strict=True):
            self._written[offset] = (key, None if isinstance(item, tuple) else item)
        return offsets

    def create_acls(
        self,
        bindings: Sequence[AclBinding],
        *,
        actor: KafkaPrincipal | str,
        host: str = LOCAL_HOST,
        timeout: float | None = None,
    ) -> CreateAclsResult:
        """CreateAcls: validate each binding, gate it on the format version, write the new ones.

        Raises :class:`ClusterAuthorizationError` (nothing written) or, when the log does not
        acknowledge, :class:`LogUnavailableError` (outcome unknown; retrying is safe).
        """
        with self._lock:
            deadline = self._deadline(timeout)
            self._sync(deadline)
            principal = self._require(actor, host, AclOperation.ALTER, "create ACLs")
            request_id, now = uuid.uuid4().hex, self.clock()
            events, errors = self._creations(self.state.index, bindings, principal, request_id, now)
            offsets = self._append(events, deadline) if events else []
            return CreateAclsResult(
                results=tuple(
                    AclCreationResult(b, e) for b, e in zip(bindings, errors, strict=True)
                ),
                offset=offsets[-1] if offsets else self.state.offset,
                records_written=len(events),
            )

    def _creations(
        self,
        existing: Container[AclBinding],
        bindings: Sequence[AclBinding],
        principal: str,
        request_id: str,
        now: int,
    ) -> tuple[list[AclCreated], list[StoreError | None]]:
        """The events that create the new ones of ``bindings`` (validated, format-gated), and
        one error or None per binding, in order."""
        plan = plan_create_acls(existing, bindings, layer=self.validation_layer)
        finalized = self.state.settings.format_version
        events: list[AclCreated] = []
        refused: dict[AclBinding, StoreError] = {}
        for binding in plan.new_bindings:
            event = AclCreated(binding=binding, actor=principal, request_id=request_id, time_ms=now)
            if event.min_reader_version <= finalized:
                events.append(event)
            else:  # format gating: an old reader must never meet it unannounced
                refused[binding] = format_gate_refusal(binding, finalized)
        errors: list[StoreError | None] = [
            refused.get(b) if error is None else error
            for b, error in zip(bindings, plan.results, strict=True)
        ]
        return events, errors

    def _deletions(
        self, filters: Sequence[AclBindingFilter], principal: str, request_id: str, now: int
    ) -> tuple[list[ChangeEvent | tuple[bytes, None]], list[AclDeletionResult], set[AclBinding]]:
        """Each filter matched against the state before the request: the ``AclDeleted`` and
        tombstone of each binding removed, one result per filter, the bindings removed."""
        results: list[AclDeletionResult] = []
        removed: dict[AclBinding, None] = {}
        for acl_filter in filters:
            try:
                validate_filter(acl_filter)
            except StoreError as exc:
                results.append(AclDeletionResult(acl_filter, error=exc))
                continue
            matched = self.state.index.acls(acl_filter)
            removed.update(dict.fromkeys(matched))
            results.append(AclDeletionResult(acl_filter, deleted=tuple(matched)))
        events: list[ChangeEvent | tuple[bytes, None]] = []
        for binding in removed:
            events.append(
                AclDeleted(binding=binding, actor=principal, request_id=request_id, time_ms=now)
            )
            events.append((binding_key(binding), None))
        return events, results, set(removed)

    def delete_acls(
        self,
        filters: Sequence[AclBindingFilter],
        *,
        actor: KafkaPrincipal | str,
        host: str = LOCAL_HOST,
        timeout: float | None = None,
    ) -> DeleteAclsResult:
        """DeleteAcls: every filter matched against the state before the request."""
        with self._lock:
            deadline = self._deadline(timeout)
            self._sync(deadline)
            principal = self._require(actor, host, AclOperation.ALTER, "delete ACLs")
            request_id, now = uuid.uuid4().hex, self.clock()
            events, results, removed = self._deletions(filters, principal, request_id, now)
            offsets = self._append(events, deadline) if events else []
            return DeleteAclsResult(
                results=tuple(results),
                offset=offsets[-1] if offsets else self.state.offset,
                records_written=len(removed),
            )

    def alter_acls(
        self,
        *,
        deletes: Sequence[AclBindingFilter] = (),
        creates: Sequence[AclBinding] = (),
        configs: Mapping[str, str | None] | None = None,
        actor: KafkaPrincipal | str,
        host: str = LOCAL_HOST,
        timeout: float | None = None,
        scope: Scope | None = None,
        if_scope_unchanged_since: int | None = None,
        reference: str | None = None,
    ) -> AlterAclsResult:
        """DeleteAcls, CreateAcls and AlterConfigs in one request, appended as ONE batch (one
        request id, one offset), so no reader ever sees the state halfway (a restore).

        Deletes are matched against the state before the request; creates are checked against
        that state without the bindings this request deletes (a binding both deleted and
        created is written again after its delete); configs are checked as by
        :meth:`alter_configs`.  A refused filter or binding is reported in its result and the
        rest is written; a refused config refuses the whole request before anything is written.
        Needs ALTER on CLUSTER, and ALTER_CONFIGS on CLUSTER when ``configs`` is given.

        With ``scope`` and ``if_scope_unchanged_since`` (an apply of a plan computed at that
        offset), nothing is written if a binding in ``scope`` was created or deleted after that
        offset, or a setting the request alters (``configs``: a restore's ``super.users``,
        ``allow.everyone.if.no.acl.found``) was altered after it: :class:`ScopeChangedError`
        names each change, its actor and time.  The check
        reads the log under this admin's lock, so no write can slip in between the check and
        the append: optimistic concurrency on the log.

        ``reference`` (a commit id, a ticket) is written, when the batch changes any binding, as
        the read-only setting ``acl.change.reference`` in the same batch (same request id and
        actor), so the history ties every change of the batch to it.
        """
        with self._lock:
            deadline = self._deadline(timeout)
            self._sync(deadline)
            principal = self._require(actor, host, AclOperation.ALTER, "create and delete ACLs")
            if scope is not None and if_scope_unchanged_since is not None:
                self._check_scope_unchanged(scope, if_scope_unchanged_since, deadline,
                                            settings=frozenset(configs or ()))  # fmt: skip
            changed: list[str] = []
            if configs:
                self._require(actor, host, AclOperation.ALTER_CONFIGS, "alter configs")
                self._check_configs(configs, principal)
                changed = [n for n, v in configs.items() if self.state.configs.get(n) != v]
            request_id, now = uuid.uuid4().hex, self.clock()
            deletions, deleted, removed = self._deletions(deletes, principal, request_id, now)
            remaining = _Without(self.state.index, removed)
            creations, errors = self._creations(remaining, creates, principal, request_id, now)
            asked = configs or {}
            settings = [
                ConfigAltered(
                    name=n, value=asked[n], actor=principal, request_id=request_id, time_ms=now
                )
                for n in changed
            ]
            if reference is not None and (deletions or creations):
                _check_reference(reference, self.state.settings.format_version)
                settings.append(
                    ConfigAltered(name=CHANGE_REFERENCE_CONFIG, value=reference, actor=principal,
                                  request_id=request_id, time_ms=now)
                )  # fmt: skip
            events: list[ChangeEvent | tuple[bytes, None]] = [*deletions, *creations, *settings]
            offsets = self._append(events, deadline) if events else []
            return AlterAclsResult(
                deleted=tuple(deleted),
                created=tuple(AclCreationResult(b, e) for b, e in zip(creates, errors, strict=True)),
                configs_changed=tuple(changed),
                offset=offsets[-1] if offsets else self.state.offset,
                records_written=len(removed) + len(creations) + len(settings),
            )

    def _check_scope_unchanged(
        self, scope: Scope, since: int, deadline: float, *, settings: frozenset[str] = frozenset()
    ) -> None:
        """:class:`ScopeChangedError` if a record after ``since`` creates or deletes a binding
        in ``scope``, or alters one of ``settings`` (those the write sets: a plan that sets them
        was made against their value at ``since``).  Compaction keeps a key's latest record, so
        a key changed after ``since`` still has a record after it, unless it was deleted longer
        than the topic's ``delete.retention.ms`` ago (its tombstone then is gone too)."""
        if since > self.state.offset:
            raise InvalidRequestError(
                f"ifScopeUnchangedSince {since} is beyond this store's log end (offset "
                f"{self.state.offset}): the plan was made against another store; plan again here"
            )
        policy = FoldPolicy(reader_version=self.state.reader_version, skip_offsets=self.skip_offsets,
                            too_new_events=TooNewEvents.IGNORE)  # fmt: skip
        changed: list[Change] = []
        offset = since + 1
        while offset < self.state.next_offset:
            records = self.log.read(offset, timeout=min(_remaining(deadline), 1.0))
            if not records and time.monotonic() >= deadline:
                raise LogUnavailableError(
                    f"could not read {self.log} from offset {offset} to check the scope within the "
                    "timeout; nothing was written; retry"
                )
            for record in records:
                if record.offset >= self.state.next_offset:
                    break
                change = fold_record(record, policy)
                in_scope = change.binding is not None and scope.contains(change.binding)
                if in_scope or (change.kind is ChangeKind.CONFIG and change.config_name in settings):
                    changed.append(change)
            offset = records[-1].offset + 1 if records else offset
        if changed:
            raise ScopeChangedError(
                f"refused: {len(changed)} change(s) in the scope ({scope.describe()}) after the "
                f"plan's offset {since}, nothing written: "
                + "; ".join(_change_text(c) for c in changed[:10])
                + ("; ..." if len(changed) > 10 else "")
                + ". Plan again, review, then apply the new plan",
                tuple(_change_json(c) for c in changed),
            )

    def describe_acls(
        self,
        acl_filter: AclBindingFilter,
        *,
        actor: KafkaPrincipal | str,
        host: str = LOCAL_HOST,
        timeout: float | None = None,
    ) -> DescribeAclsResult:
        """DescribeAcls: the live bindings the filter matches, in Kafka's order."""
        with self._lock:
            deadline = self._deadline(timeout)
            self._sync(deadline)
            self._require(actor, host, AclOperation.DESCRIBE, "describe ACLs")
            validate_filter(acl_filter)
            return DescribeAclsResult(tuple(self.state.index.acls(acl_filter)), self.state.offset)

    def check_describe(
        self,
        filters: Sequence[AclBindingFilter],
        *,
        actor: KafkaPrincipal | str,
        host: str = LOCAL_HOST,
        timeout: float | None = None,
    ) -> int:
        """What DescribeAcls checks, for a listing that another state answers (the node's
        replica streams it): the caller's DESCRIBE on the CLUSTER and each filter.  Returns the
        log offset this admin has read up to, which that listing must reflect at least."""
        with self._lock:
            offset = self._sync(self._deadline(timeout))
            self._require(actor, host, AclOperation.DESCRIBE, "describe ACLs")
            for acl_filter in filters:
                validate_filter(acl_filter)
            return offset

    # --- configs ----------------------------------------------------------------------------

    def _check_configs(
        self,
        configs: Mapping[str, str | None],
        principal: str,
        force_reason: str | None = None,
    ) -> str | None:
        """Each key and value, a format downgrade (:meth:`_check_downgrade`), then the policy;
        raises on the first refusal.  Returns the forced-downgrade record to write, or None."""
        for name, value in configs.items():
            check_alterable(name)
            check_config(name, value)
        if force_reason is not None and not force_reason.strip():
            raise InvalidRequestError(
                "a forced format downgrade needs a reason: say why (it is kept in the log)"
            )
        forced = self._check_downgrade(configs.get(FORMAT_VERSION_CONFIG), force_reason)
        if self.policy is not None:
            self.policy.validate(
                AlterConfigsRequest(
                    configs=dict(configs), actor=principal, current=dict(self.state.configs)
                )
            )
        return forced

    def describe_configs(
        self,
        names: Iterable[str] | None = None,
        *,
        actor: KafkaPrincipal | str,
        host: str = LOCAL_HOST,
        timeout: float | None = None,
    ) -> DescribeConfigsResult:
        """DescribeConfigs of the store's settings (all, or ``names``)."""
        with self._lock:
            deadline = self._deadline(timeout)
            self._sync(deadline)
            self._require(actor, host, AclOperation.DESCRIBE_CONFIGS, "describe configs")
            entries = self.state.settings.entries()
            if names is not None:
                wanted = list(names)
                for name in wanted:
                    check_config(name, None)
                entries = [e for e in entries if e.name in wanted]
            return DescribeConfigsResult(tuple(entries), self.state.offset)

    def alter_configs(
        self,
        configs: Mapping[str, str | None],
        *,
        actor: KafkaPrincipal | str,
        host: str = LOCAL_HOST,
        validate_only: bool = False,
        force_reason: str | None = None,
        timeout: float | None = None,
    ) -> AlterConfigsResult:
        """Set (or, with None, reset) settings; all or nothing for the store's one config entity.

        Each key and value is validated; lowering ``acl.format.version`` so that a reader of
        the older format would lose a live binding runs the access diff of that reader
        (:mod:`store.downgrade`) and is refused, naming the access that would widen, unless
        ``force_reason`` is given: then the change is written with a
        ``acl.format.version.forced`` event (the actor, the versions and the reason) in the
        same request.  Then the policy decides; ``validate_only`` stops there.  Settings are
        changed incrementally (KIP-339's SET/DELETE), not replaced as a whole.
        """
        with self._lock:
            deadline = self._deadline(timeout)
            self._sync(deadline)
            principal = self._require(actor, host, AclOperation.ALTER_CONFIGS, "alter configs")
            if not configs:
                raise InvalidRequestError("alter_configs needs at least one setting")
            forced = self._check_configs(configs, principal, force_reason)
            # a format gate's analysis may take minutes at scale: the append has its own time
            deadline = self._deadline(timeout)
            changed = [n for n, v in configs.items() if self.state.configs.get(n) != v]
            if validate_only or not changed:
                return AlterConfigsResult((), self.state.offset, validate_only)
            values = {n: configs[n] for n in changed}
            if forced is not None and FORMAT_VERSION_CONFIG in values:
                # written first, so no reader meets the lowered version before the reason
                values = {FORMAT_DOWNGRADE_FORCED_CONFIG: forced, **values}
            request_id, now = uuid.uuid4().hex, self.clock()
            events = [
                ConfigAltered(name=n, value=v, actor=principal, request_id=request_id, time_ms=now)
                for n, v in values.items()
            ]
            offsets = self._append(events, deadline)
            return AlterConfigsResult(tuple(values), offsets[-1], validate_only)

    def _check_downgrade(self, target: str | None, force_reason: str | None) -> str | None:
        """Refuse a format downgrade an older reader would lose bindings to, unless forced.

        Returns the value of the forced-downgrade record to write, or None.
        """
        if target is None:
            return None
        version = format_version_of(target)
        if self.downgrade_analyst is not None:
            verdict = self.downgrade_analyst(version, self.state.offset)
        else:
            verdict = DowngradeVerdict.of(analyse_downgrade(
                self.state.index.bindings(), self.state.settings, version,
                local_super_users=self.super_users,
            ))  # fmt: skip
        if verdict.refusal is None:
            return None
        if force_reason is None:
            raise verdict.refusal
        return (
            f"lowered from {self.state.settings.format_version} to {version} with "
            f"{verdict.ignored} binding(s) an older reader ignores and "
            f"{verdict.widened} widened access set(s): {force_reason.strip()}"
        )
