"""The sidecar API: what each endpoint does, between the HTTP edge and the store.

* Decisions (``/v1/authorize``, ``/v1/authorize-by-resource-type``, ``/v1/authorize-request``)
  are answered by the node's :class:`~replicator.replica.Replica` from its own RocksDB index,
  each answer carrying the log offset it reflects.  Identities may be raw (a TLS subject or a
  Kerberos name) and are mapped as Kafka's principal builders do (:class:`IdentityMapper`).
* ACL and config administration go to the :class:`~store.admin.AclAdmin`, which writes to the
  log and applies Kafka's CLUSTER checks to the authenticated caller
  (:mod:`replicator.server.callers`).  The streamed listing (``/v1/acls/list``) is checked by
  the admin and read from the replica's snapshot as it is sent.
* ``/healthz``, ``/readyz``, ``/metrics``, ``/openapi.json`` and ``/v1/status`` report on the node.

Bodies are parsed and answers built by :mod:`replicator.contract`; this module decides.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Final, Protocol

from replicator.access.analyst import AccessAnalyst
from replicator.contract import access, answers, listing, requests
from replicator.contract.endpoints import ENDPOINTS
from replicator.errors import ConsistencyTimeoutError
from replicator.index.listing import ListedResource
from replicator.replica import Answer, ReplicaStatus
from replicator.server.audit import AuditEmitter
from replicator.server.callers import Caller, CallerPolicy
from replicator.server.decisions import Decider, DecisionEndpoints, IdentityMapper
from replicator.server.http import HttpRequest, Response, Route, RouteHandler
from replicator.server.metrics import CONTENT_TYPE, ReplicaFigures, SidecarMetrics
from store.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    ResourceType,
)
from store.admin import AclAdmin
from store.authorizer import ALLOWED, Action
from store.desired.scope import Scope
from store.errors import ClusterAuthorizationError, StoreError


class DecisionReplica(Decider, Protocol):
    """What the service needs from :class:`replicator.replica.Replica`."""

    @property
    def ready(self) -> bool: ...

    def status(self) -> ReplicaStatus: ...

    def wait_applied(self, offset: int, timeout: float) -> int: ...

    def wait_subscribed(
        self, subscriber: str, after: int, lease_s: float, timeout: float
    ) -> int: ...

    def list_acls(
        self,
        filters: Sequence[AclBindingFilter],
        *,
        min_offset: int | None = None,
        timeout: float | None = None,
        after: AclBinding | None = None,
    ) -> Answer[Iterator[ListedResource]]: ...


_log = logging.getLogger("aclstore.service")
LISTING_CHUNK_BYTES: Final = 64 * 1024
"""Lines of a listing gathered into one chunk of the body (one send)."""


def in_scope(resources: Iterator[ListedResource], scope: Scope) -> Iterator[ListedResource]:
    """The listed ACLs in a desired-state scope: every ACL of a pattern the scope owns by its
    resource prefix, else those of the scope's principals; patterns left with none are left out."""
    for r in resources:
        if scope.owns_pattern(ResourceType.from_code(r.resource_type), r.name):
            yield r
        elif scope.principals:
            acls = [a for a in r.acls if a[0] in scope.principals]
            if acls:
                yield ListedResource(r.resource_type, r.name, r.pattern_type, acls)


def listing_chunks(resources: Iterator[ListedResource], offset: int) -> Iterator[bytes]:
    """The body of a listing: its lines in chunks of about :data:`LISTING_CHUNK_BYTES`, then
    the end line; a failure while reading is the last line instead (an Error line), since the
    200 has been sent."""
    writer = listing.LineWriter()
    pending: list[bytes] = []
    size = 0
    try:
        for resource in resources:
            line = writer.resource_line(resource)
            pending.append(line)
            size += len(line)
            if size >= LISTING_CHUNK_BYTES:
                yield b"".join(pending)
                pending.clear()
                size = 0
        pending.append(writer.end_line(offset))
    except StoreError as exc:
        code = int(exc.error_code)
        pending.append(listing.error_line(answers.error_json(type(exc).__name__, exc.message,
                                                             kafkaErrorCode=code)))  # fmt: skip
    except Exception:
        _log.exception("listing ACLs failed after %d ACL(s)", writer.bindings)
        pending.append(listing.error_line(answers.error_json(
            "INTERNAL_ERROR", f"the listing failed after {writer.bindings} ACL(s); see the "
            "node's log",
        )))  # fmt: skip
    finally:
        close = getattr(resources, "close", None)
        if close is not None:
            close()
    yield b"".join(pending)


def replica_figures(status: ReplicaStatus) -> ReplicaFigures:
    return ReplicaFigures(
        ready=status.ready,
        applied_offset=status.offset,
        lag=status.lag,
        log_end_offset=status.log_end_offset,
        log_end_age_ms=status.log_end_age_ms,
        log_error=status.log_error is not None,
        stopped_at_offset=None if status.stopped is None else status.stopped.offset,
        bindings=status.bindings,
        ignored_events=status.ignored_events,
        skipped_records=status.skipped_records,
        cache_entries=status.cache.size,
        cache_hits=status.cache.hits,
        cache_misses=status.cache.misses,
        cache_invalidated=status.cache.evicted_by_changes,
        cache_bytes=status.cache.bytes,
        cache_evicted=status.cache.evicted_by_bounds,
    )


class SidecarService:
    """The endpoints of one node."""

    def __init__(
        self,
        *,
        replica: DecisionReplica,
        admin: AclAdmin,
        policy: CallerPolicy,
        identities: IdentityMapper,
        metrics: SidecarMetrics,
        audit: AuditEmitter | None,
        openapi: bytes,
        analyst: AccessAnalyst | None = None,
        local_super_users: Sequence[str] = (),
    ) -> None:
        self.replica = replica
        self.admin = admin
        self.policy = policy
        self.identities = identities
        self.metrics = metrics
        self.audit = audit
        self.openapi = openapi
        self.analyst = analyst
        self.local_super_users = tuple(local_super_users)
        self.worker_spools: Callable[[], str | None] | None = None
        """With decision workers: why one of their audit spools cannot be written, if so."""
        self.decisions = DecisionEndpoints(
            replica=replica, policy=policy, identities=identities, metrics=metrics, audit=audit
        )
        metrics.bind_replica(lambda: replica_figures(replica.status()))
        if audit is not None:
            metrics.bind_audit(audit.figures)

    def routes(self) -> list[Route]:
        """One route per endpoint of the contract (:data:`ENDPOINTS`), bound to its handler."""
        handlers: dict[str, RouteHandler] = {
            "healthz": self.healthz, "readyz": self.readyz, "metrics": self.prometheus,
            "openapi": self.openapi_document, "status": self.status,
            "wait_offset": self.wait_offset,
            **self.decisions.handlers(),
            "create_acls": self.create_acls, "describe_acls": self.describe_acls,
            "list_acls": self.list_acls,
            "delete_acls": self.delete_acls, "alter_acls": self.alter_acls,
            "describe_configs": self.describe_configs, "alter_configs": self.alter_configs,
            "dry_run_acls": self.dry_run_acls, "downgrade_check": self.downgrade_check,
            "analysis_progress": self.analysis_progress,
        }  # fmt: skip
        return [Route(e.method, e.path, e.name, handlers[e.name]) for e in ENDPOINTS]

    # --- callers ----------------------------------------------------------------------------

    def _caller(self, request: HttpRequest) -> Caller:
        return self.policy.authenticate(
            address=request.address,
            peer_subject=request.peer_subject,
            authorization=request.authorization,
        )

    def _admin_principal(self, request: HttpRequest) -> str:
        return self.policy.require_principal(self._caller(request))

    def _admin_actor(
        self, caller: str, request: HttpRequest, on_behalf_of: requests.OnBehalfOf | None
    ) -> tuple[str, str]:
        """The actor and host the store checks and records: the authenticated caller, or the
        Kafka client a broker's authorizer plugin acts for (``onBehalfOf``).  Acting for another
        principal needs CLUSTER_ACTION on the CLUSTER, as a forwarding broker does (KIP-590)."""
        if on_behalf_of is None:
            return caller, request.address
        probe = Action(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        decision = self.replica.authorize(caller, request.address, [probe]).value[0]
        if decision.result is not ALLOWED:
            raise ClusterAuthorizationError(
                f"{caller} may not act on behalf of {on_behalf_of.principal}: that needs "
                "CLUSTER_ACTION on the CLUSTER (grant it to the broker plugin's principal, or "
                "use a super user's credential)"
            )
        return on_behalf_of.principal, on_behalf_of.host

    # --- ACL administration (KIP-140) -------------------------------------------------------

    def create_acls(self, request: HttpRequest) -> Response:
        caller = self._admin_principal(request)
        body = requests.create_request(request.json())
        actor, host = self._admin_actor(caller, request, body.on_behalf_of)
        valid = [item for item in body.items if isinstance(item, AclBinding)]
        result = self.admin.create_acls(valid, actor=actor, host=host)
        return Response.json(answers.create_acls_answer(body.items, result))

    def describe_acls(self, request: HttpRequest) -> Response:
        caller = self._admin_principal(request)
        body = requests.describe_request(request.json() if request.body.strip() else {})
        actor, host = self._admin_actor(caller, request, body.on_behalf_of)
        result = self.admin.describe_acls(body.acl_filter, actor=actor, host=host)
        self._check_min_offset(body.min_offset, result.offset)
        return Response.json(answers.describe_acls_answer(result))

    def list_acls(self, request: HttpRequest) -> Response:
        """DescribeAcls of the union of the filters, streamed (:mod:`replicator.contract.listing`).

        The admin checks the caller (DESCRIBE on the CLUSTER) and the filters and says how far
        the log goes; the replica's snapshot, at least that fresh, is read as the body is sent,
        so a listing shows every write acknowledged before it was asked, and neither end holds
        more than a few lines of it."""
        caller = self._admin_principal(request)
        body = listing.list_request(request.json() if request.body.strip() else {})
        reached = self.admin.check_describe(body.filters, actor=caller, host=request.address)
        self._check_min_offset(body.min_offset, reached)
        answer = self.replica.list_acls(body.filters, min_offset=reached, after=body.after)
        resources = answer.value if body.scope is None else in_scope(answer.value, body.scope)
        # the offset up front too: a reader that stops early (a page of the console) has it
        offset_header = ((access.OFFSET_HEADER, str(answer.offset)),)
        return Response.streamed(
            listing_chunks(resources, answer.offset), listing.CONTENT_TYPE, offset_header
        )

    def delete_acls(self, request: HttpRequest) -> Response:
        caller = self._admin_principal(request)
        body = requests.delete_request(request.json())
        actor, host = self._admin_actor(caller, request, body.on_behalf_of)
        result = self.admin.delete_acls(body.filters, actor=actor, host=host)
        return Response.json(answers.delete_acls_answer(result))

    def alter_acls(self, request: HttpRequest) -> Response:
        actor = self._admin_principal(request)
        body = requests.alter_acls_request(request.json())
        valid = [item for item in body.creates if isinstance(item, AclBinding)]
        result = self.admin.alter_acls(
            deletes=body.deletes, creates=valid, configs=body.configs or None, actor=actor,
            host=request.address, scope=body.scope,
            if_scope_unchanged_since=body.if_scope_unchanged_since, reference=body.reference,
        )  # fmt: skip
        return Response.json(answers.alter_acls_answer(body.creates, result))

    @staticmethod
    def _check_min_offset(min_offset: int | None, reached: int) -> None:
        if min_offset is not None and reached < min_offset:
            raise ConsistencyTimeoutError(
                f"the log end is offset {reached}, below the requested minOffset {min_offset}: "
                "that offset was never written to this store's log",
                min_offset=min_offset,
                reached=reached,
            )

    # --- configs (KIP-133) ----------------------------------------------------------------------

    def describe_configs(self, request: HttpRequest) -> Response:
        actor = self._admin_principal(request)
        body = requests.describe_configs_request(request.json() if request.body.strip() else None)
        result = self.admin.describe_configs(body.names or None, actor=actor, host=request.address)
        return Response.json(answers.describe_configs_answer(result))

    def alter_configs(self, request: HttpRequest) -> Response:
        actor = self._admin_principal(request)
        body = requests.alter_configs_request(request.json())
        result = self.admin.alter_configs(
            body.configs,
            actor=actor,
            host=request.address,
            validate_only=body.validate_only,
            force_reason=body.force_reason,
        )
        return Response.json(answers.alter_configs_answer(result))

    # --- the access diff, answered where the state is ------------------------------------------

    def _require_cluster(self, request: HttpRequest, operation: AclOperation, why: str) -> AccessAnalyst:
        """The authenticated caller holds ``operation`` on the CLUSTER (checked as the admin API
        checks its reads), and the node answers access-diff questions."""
        self.admin.require_cluster(self._admin_principal(request), request.address, operation, why)
        if self.analyst is None:
            raise StoreError(f"this node does not answer access-diff questions (needed to {why})")
        return self.analyst

    def dry_run_acls(self, request: HttpRequest) -> Response:
        analyst = self._require_cluster(request, AclOperation.DESCRIBE, "judge a change of ACLs")
        answer = analyst.dry_run(access.dry_run_request(request.json()))
        return Response(200, answer) if isinstance(answer, bytes) else Response.json(answer)

    def downgrade_check(self, request: HttpRequest) -> Response:
        analyst = self._require_cluster(
            request, AclOperation.DESCRIBE_CONFIGS, "check a format downgrade"
        )
        summary, body = analyst.downgrade_check(access.downgrade_check_request(request.json()))
        # the verdict before the body: a client may copy the body out as it reads it
        headers = ((access.SAFE_HEADER, "true" if summary["safe"] else "false"),
                   (access.OFFSET_HEADER, str(summary["offset"])))  # fmt: skip
        return Response(200, body, headers=headers)

    def analysis_progress(self, request: HttpRequest) -> Response:
        analyst = self._require_cluster(request, AclOperation.DESCRIBE, "follow an analysis")
        return Response.json(analyst.progress().to_json())

    # --- the node -------------------------------------------------------------------------------

    def healthz(self, request: HttpRequest) -> Response:
        fatal_error = self.replica.status().fatal_error
        return Response.json(answers.health_answer(fatal_error), 503 if fatal_error is not None else 200)

    def readyz(self, request: HttpRequest) -> Response:
        """200 once the replica has applied the log end it saw at start (fail closed before).

        A log that becomes unreachable later leaves it 200: the replica still answers from its
        own state, and a broker's plugin waits for 200 before it opens its listeners (a broker
        that is the log itself would wait forever).  The body says so: ``lag`` null,
        ``logEndAgeMs`` and ``logError``.  A node that cannot write its index or its audit
        spool (a full file system) answers 503, ``storageError`` naming the directory."""
        status = self.replica.status()
        spool = self._spool_problem()
        ready = status.ready and spool is None and status.storage_error is None
        return Response.json(answers.status_json(status, spool), 200 if ready else 503)

    def _spool_problem(self) -> str | None:
        """A node that cannot write its audit spool (or a decision worker its own) is not
        ready: ``storageError`` says why."""
        if self.audit is not None:
            return self.audit.storage_problem()
        return None if self.worker_spools is None else self.worker_spools()

    def status(self, request: HttpRequest) -> Response:
        self.decisions.check_caller(request)
        return Response.json(answers.status_json(self.replica.status(), self._spool_problem()))

    def wait_offset(self, request: HttpRequest) -> Response:
        """A long-poll on the applied offset: how a broker plugin learns, without a timer,
        that its cached decisions are out of date."""
        self.decisions.check_caller(request)
        body = requests.offset_wait_request(request.json())
        if body.subscriber is not None and self.replica.ready:
            # a cache lease (replicator.leases): granted only by a ready replica, so a plugin
            # polling during the initial load holds nothing back
            offset = self.replica.wait_subscribed(
                body.subscriber, body.after, body.lease_s, body.timeout_s
            )
        else:
            offset = self.replica.wait_applied(body.after + 1, body.timeout_s)
        return Response.json(answers.offset_answer(offset, ready=self.replica.ready))

    def prometheus(self, request: HttpRequest) -> Response:
        return Response(200, self.metrics.render(), CONTENT_TYPE)

    def openapi_document(self, request: HttpRequest) -> Response:
        return Response(200, self.openapi)


OnResponse = Callable[[str, int], None]
