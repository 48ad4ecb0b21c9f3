"""The decision endpoints: ``/v1/authorize``, ``/v1/authorize-by-resource-type`` and
``/v1/authorize-request``, answered from a replica's state.

They need only something that decides (:class:`Decider`), the caller policy, the identity
mapper, the metrics and the audit emitter: the node's service serves them from its own
replica, and each decision worker (:mod:`replicator.server.workers`) from its follower of the
same index.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from operator import attrgetter
from typing import Final, Protocol

from replicator.contract import answers, requests
from replicator.contract.fields import BadRequestError
from replicator.replica import Answer
from replicator.server.audit import AuditEmitter
from replicator.server.callers import CallerPolicy
from replicator.server.http import HttpRequest, Response, RouteHandler
from replicator.server.metrics import SidecarMetrics
from store.acl import AclOperation, PatternType, ResourceType
from store.authorizer import ALLOWED, Action, Decision
from store.errors import StoreError
from store.kafka_apis import checks_for
from store.mapping import KerberosShortNamer, SslPrincipalMapper, x500_get_name
from store.principal import KafkaPrincipal

_RESULT: Final = attrgetter("result")


class Decider(Protocol):
    """What the decision endpoints need of a replica."""

    def authorize(
        self,
        principal: KafkaPrincipal | str,
        host: str,
        actions: Sequence[Action],
        *,
        min_offset: int | None = None,
        timeout: float | None = None,
    ) -> Answer[list[Decision]]: ...

    def authorize_by_resource_type(
        self,
        principal: KafkaPrincipal | str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        *,
        min_offset: int | None = None,
        timeout: float | None = None,
    ) -> Answer[Decision]: ...


class IdentityMapper:
    """Raw identities to principals, as Kafka's ``DefaultKafkaPrincipalBuilder`` maps them.

    A TLS subject goes through ``X500Principal.getName()`` and ``ssl.principal.mapping.rules``;
    a Kerberos name through ``sasl.kerberos.principal.to.local.rules``; both become ``User:``.
    """

    def __init__(
        self,
        *,
        ssl_principal_mapping_rules: str | None = None,
        kerberos_rules: Sequence[str] | None = None,
        kerberos_default_realm: str = "",
    ) -> None:
        self.ssl = SslPrincipalMapper(ssl_principal_mapping_rules or "DEFAULT")
        self.kerberos = KerberosShortNamer(kerberos_default_realm, kerberos_rules)
        self._cache: dict[requests.Identity, str] = {}

    def principal(self, identity: requests.Identity) -> str:
        if identity.kind is requests.IdentityKind.PRINCIPAL:
            return identity.text
        cached = self._cache.get(identity)
        if cached is not None:
            return cached
        try:
            if identity.kind is requests.IdentityKind.SSL_DISTINGUISHED_NAME:
                name = self.ssl.get_name(x500_get_name(identity.text))
            else:
                name = self.kerberos.short_name(identity.text)
        except StoreError as exc:
            raise BadRequestError(
                f"{identity.kind.value} {identity.text!r}: {exc.message}"
            ) from exc
        principal = str(KafkaPrincipal.user(name))
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[identity] = principal
        return principal



class DecisionEndpoints:
    """The three decision endpoints over ``replica``."""

    def __init__(
        self,
        *,
        replica: Decider,
        policy: CallerPolicy,
        identities: IdentityMapper,
        metrics: SidecarMetrics,
        audit: AuditEmitter | None,
        worker: int | None = None,
    ) -> None:
        """``worker``: the decision worker answering (its number in an ``Aclstore-Worker``
        header of each answer), or None for the node's own process."""
        self.replica = replica
        self._headers = {} if worker is None else {"Aclstore_Worker": str(worker)}
        self.policy = policy
        self.identities = identities
        self.metrics = metrics
        self.audit = audit

    def handlers(self) -> dict[str, RouteHandler]:
        """The handlers by the contract's endpoint name."""
        return {
            "authorize": self.authorize,
            "authorize_by_resource_type": self.authorize_by_resource_type,
            "authorize_request": self.authorize_request,
        }

    def check_caller(self, request: HttpRequest) -> None:
        if request.authorization is None and self.policy.in_authorize_networks(request.address):
            return  # the hot path: the broker next door
        caller = self.policy.authenticate(
            address=request.address,
            peer_subject=request.peer_subject,
            authorization=request.authorization,
        )
        self.policy.check_authorize_caller(caller)

    def authorize(self, request: HttpRequest) -> Response:
        """``Authorizer.authorize`` (KIP-50): one result per action, in order."""
        started = time.perf_counter()
        self.check_caller(request)
        body = requests.authorize_request(request.json())
        identity = body.identity
        principal = self.identities.principal(identity)
        answer = self.replica.authorize(
            principal, body.host, body.actions, min_offset=body.min_offset, timeout=body.timeout_s
        )
        decisions = answer.value
        out = answers.authorize_answer(
            decisions, answer.offset, explain=body.explain,
            mapped_principal=self._mapped(identity, principal),
        )  # fmt: skip
        self._account(
            "authorize", principal, body.host, body.actions, decisions, answer.offset,
            flagged=body.actions,
        )  # fmt: skip
        self.metrics.observe_latency("authorize", time.perf_counter() - started)
        return Response.json(out, 200, **self._headers)

    def authorize_by_resource_type(self, request: HttpRequest) -> Response:
        """``Authorizer.authorizeByResourceType`` (KIP-679)."""
        started = time.perf_counter()
        self.check_caller(request)
        body = requests.by_resource_type_request(request.json())
        identity = body.identity
        principal = self.identities.principal(identity)
        answer = self.replica.authorize_by_resource_type(
            principal, body.host, body.operation, body.resource_type,
            min_offset=body.min_offset, timeout=body.timeout_s,
        )  # fmt: skip
        decision = answer.value
        out = answers.by_resource_type_answer(
            decision, answer.offset, explain=body.explain,
            mapped_principal=self._mapped(identity, principal),
        )  # fmt: skip
        # "Some resource of this type": audited with the wildcard name and pattern type ANY.
        probe = Action(body.operation, body.resource_type, "*", PatternType.ANY)
        self._account("by_resource_type", principal, body.host, [probe], [decision], answer.offset)
        self.metrics.observe_latency("by_resource_type", time.perf_counter() - started)
        return Response.json(out, 200, **self._headers)

    def authorize_request(self, request: HttpRequest) -> Response:
        """Every check one Kafka request needs (the docs' API-key table, ``store.kafka_apis``).

        The request is allowed when every step is; a step when any of its alternatives is
        (CREATE on the CLUSTER, else on the TOPIC), tried in the table's order.
        """
        started = time.perf_counter()
        self.check_caller(request)
        body = requests.request_check_request(request.json())
        identity = body.identity
        principal = self.identities.principal(identity)
        steps = checks_for(
            body.api_key, topics=body.topics, group=body.group, groups=body.groups,
            transactional_id=body.transactional_id, idempotent=body.idempotent,
            follower=body.follower, auto_create=body.auto_create,
            broker_configs=body.broker_configs,
        )  # fmt: skip
        unique: dict[tuple[AclOperation, ResourceType, str], int] = {}
        actions: list[Action] = []
        for step in steps:
            for check in step.any_of:
                key = (check.operation, check.resource_type, check.name)
                if key not in unique:
                    unique[key] = len(actions)
                    actions.append(Action(check.operation, check.resource_type, check.name))
        answer = self.replica.authorize(
            principal, body.host, actions, min_offset=body.min_offset, timeout=body.timeout_s
        )
        decisions = answer.value
        decided = [
            [(c, decisions[unique[(c.operation, c.resource_type, c.name)]]) for c in step.any_of]
            for step in steps
        ]
        out = answers.request_check_answer(
            api_key=body.api_key, api_name=requests.api_name(body.api_key), steps=decided,
            offset=answer.offset, explain=body.explain,
            mapped_principal=self._mapped(identity, principal),
        )  # fmt: skip
        self._account("authorize_request", principal, body.host, actions, decisions, answer.offset)
        self.metrics.observe_latency("authorize_request", time.perf_counter() - started)
        return Response.json(out, 200, **self._headers)

    @staticmethod
    def _mapped(identity: requests.Identity, principal: str) -> str | None:
        """The principal a raw identity was mapped to; None when the caller gave a principal."""
        return None if identity.kind is requests.IdentityKind.PRINCIPAL else principal

    def _account(
        self,
        endpoint: str,
        principal: str,
        host: str,
        actions: Sequence[Action],
        decisions: Sequence[Decision],
        offset: int,
        *,
        flagged: Sequence[requests.AuthorizeAction] = (),
    ) -> None:
        """Count the decisions and audit them; ``flagged`` are actions whose ``logIfAllowed``
        / ``logIfDenied`` a broker set (KIP-504): a decision it marked is not audited (the
        emitter looks the flags up only for the decisions it would write)."""
        results = list(map(_RESULT, decisions))
        allowed = results.count(ALLOWED)
        self.metrics.count_decisions(endpoint, allowed, len(decisions) - allowed)
        if self.audit is not None and actions:
            self.audit.record(
                principal, host, actions, decisions, offset, results=results, flags=flagged or None
            )

