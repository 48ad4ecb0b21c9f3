"""Requests of the sidecar API, declared once (:mod:`replicator.contract.declare`).

Each class is the body of one endpoint: the server parses it (``authorize_request(body)`` or
``AuthorizeRequest.from_json(body)``), the client builds and sends it, and the OpenAPI
document describes it.  Parsing raises :class:`~replicator.contract.fields.BadRequestError`
naming the field, the value and the fix.  An unknown field is refused by name: a typo must not
silently become a different question.  Values are the store's (:mod:`store.acl`,
:mod:`store.authorizer`) where it has a type for them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from replicator.contract.bindings import (
    BINDING_OR_INVALID,
    FILTER,
    RESOURCE_NAME,
    InvalidItem,
)
from replicator.contract.declare import Kind, Message, Schema, message, shape, wire
from replicator.contract.fields import (
    LITERAL_ONLY,
    MAX_ACTIONS,
    MAX_ITEMS,
    SPECIFIC_OPS,
    SPECIFIC_TYPES,
    BadRequestError,
    show,
    where,
)
from replicator.contract.kinds import (
    FLAG,
    LOG_OFFSET,
    NULLABLE_TEXT,
    PRINCIPAL,
    TEXT,
    TEXT_ITEM,
    Array,
    BoundedText,
    ConfigMap,
    Converted,
    Integer,
    KafkaEnum,
    Number,
)
from replicator.contract.scope import SCOPE
from store.acl import ANY_FILTER, AclBinding, AclBindingFilter, AclOperation, PatternType, ResourceType
from store.authorizer import Action
from store.desired.scope import Scope
from store.kafka_apis import API_KEY_TABLE

API_KEYS: Final[Mapping[str, int]] = {row.api_name: row.api_key for row in API_KEY_TABLE}
"""Kafka API names (``PRODUCE``) to keys, from the API-key table (:mod:`store.kafka_apis`)."""
_API_NAMES: Final[Mapping[int, str]] = {row.api_key: row.api_name for row in API_KEY_TABLE}

MAX_WAIT_MS: Final = 3_600_000
"""Bound of a ``minOffset`` wait a decision request may ask for (the node caps it lower)."""
MAX_OFFSET_WAIT_MS: Final = 60_000
"""Bound of one long-poll: well under the server's idle timeout, so the connection stays up."""
MAX_LEASE_MS: Final = 10_000
"""The longest cache lease a long-poll may ask for (``replicator.leases.MAX_LEASE_S``)."""


class IdentityKind(enum.Enum):
    """How the caller named the identity to authorize (the value is the JSON field)."""

    PRINCIPAL = "principal"
    """``Type:name`` as Kafka's ACLs store it."""
    SSL_DISTINGUISHED_NAME = "sslDistinguishedName"
    """A TLS client certificate's subject, mapped by ``ssl.principal.mapping.rules``."""
    KERBEROS_PRINCIPAL = "kerberosPrincipal"
    """A Kerberos name, mapped by ``sasl.kerberos.principal.to.local.rules``."""


_IDENTITY_KEYS: Final = tuple(kind.value for kind in IdentityKind)


@dataclass(frozen=True, slots=True)
class Identity:
    """The identity of an authorize request, before principal mapping."""

    kind: IdentityKind
    text: str


# --- decisions ----------------------------------------------------------------------------------


@message()
class DecisionRequest(Message):
    """What every decision request has: one identity, the client's host, consistency, explain."""

    principal: str | None = wire(
        PRINCIPAL, default=None, example="User:bob",
        description="Kafka principal Type:name. Give exactly one of "
        + ", ".join(kind.value for kind in IdentityKind) + ".",
    )  # fmt: skip
    ssl_distinguished_name: str | None = wire(
        TEXT, default=None, example="CN=bob,OU=ServiceUsers,O=Example",
        description="TLS client subject; mapped by ssl.principal.mapping.rules to User:<name>.",
    )  # fmt: skip
    kerberos_principal: str | None = wire(
        TEXT, default=None, example="bob/host.example.com@EXAMPLE.COM",
        description="Kerberos name; mapped by sasl.kerberos.principal.to.local.rules to "
        "User:<name>.",
    )  # fmt: skip
    host: str = wire(
        TEXT, example="10.0.0.1",
        description="Client address text, compared exactly (no name resolution).",
    )  # fmt: skip
    min_offset: int | None = wire(
        LOG_OFFSET, default=None,
        description="Consistency token: answer only from a state that has applied at least "
        "this log offset (waits, bounded).",
    )  # fmt: skip
    timeout_ms: float | None = wire(
        Number(0, MAX_WAIT_MS, f"must be milliseconds in [0, {MAX_WAIT_MS}]"), default=None,
        description="Bound of the minOffset wait (capped by the node's).",
    )  # fmt: skip
    explain: bool = wire(
        FLAG, default=False,
        description="Add the reason of each result (decisive binding or rule).",
    )  # fmt: skip

    @classmethod
    def check_body(cls, value: dict[str, Any], path: str) -> None:
        """Exactly one of ``principal``, ``sslDistinguishedName`` or ``kerberosPrincipal``."""
        given = [key for key in _IDENTITY_KEYS if value.get(key) is not None]
        if len(given) != 1:
            raise BadRequestError(
                'give exactly one identity: principal ("User:bob"), sslDistinguishedName '
                f'("CN=bob,OU=...") or kerberosPrincipal ("bob/host@REALM"); got {given or "none"}'
            )

    @property
    def identity(self) -> Identity:
        """The one identity given (the parser refuses none or several)."""
        if self.principal is not None:
            return Identity(IdentityKind.PRINCIPAL, self.principal)
        if self.ssl_distinguished_name is not None:
            return Identity(IdentityKind.SSL_DISTINGUISHED_NAME, self.ssl_distinguished_name)
        if self.kerberos_principal is not None:
            return Identity(IdentityKind.KERBEROS_PRINCIPAL, self.kerberos_principal)
        raise BadRequestError("no identity: give principal, sslDistinguishedName or kerberosPrincipal")

    @property
    def timeout_s(self) -> float | None:
        """``timeoutMs`` in seconds: how long a ``minOffset`` wait may take."""
        return None if self.timeout_ms is None else float(self.timeout_ms) / 1000.0


class AuthorizeAction(Action):
    """An action of an authorize request: Kafka's ``server.authorizer.Action`` with its
    ``logIfAllowed`` / ``logIfDenied`` (KIP-504).  A broker clears them for checks that only
    filter (which topics to list), whose denials are expected; Kafka's own authorizers log
    those at DEBUG, not in the audit trail."""

    __slots__ = ("log_if_allowed", "log_if_denied")

    def __init__(
        self, operation: AclOperation, resource_type: ResourceType, name: str, *,
        log_if_allowed: bool = True, log_if_denied: bool = True,
    ) -> None:  # fmt: skip
        super().__init__(operation, resource_type, name)
        self.log_if_allowed = log_if_allowed
        self.log_if_denied = log_if_denied


@message("Action", closed=True)
class ActionJson(Message):
    """An action as the wire has it; read into :class:`AuthorizeAction`."""

    operation: AclOperation = wire(KafkaEnum(AclOperation, SPECIFIC_OPS))
    resource_type: ResourceType = wire(KafkaEnum(ResourceType, SPECIFIC_TYPES))
    resource_name: str = wire(TEXT, name=RESOURCE_NAME, example="orders")
    pattern_type: PatternType | None = wire(
        KafkaEnum(PatternType, LITERAL_ONLY, inline=True), default=None,
        description="Only LITERAL resources are authorized (Kafka's rule).",
    )  # fmt: skip
    log_if_allowed: bool = wire(
        FLAG, default=True, null_is_absent=True,
        description="Kafka's Action.logIfAllowed: false leaves an ALLOWED result out of the "
        "audit trail.",
    )  # fmt: skip
    log_if_denied: bool = wire(
        FLAG, default=True, null_is_absent=True,
        description="Kafka's Action.logIfDenied: false (a check that only filters) leaves a "
        "DENIED result out of the audit trail.",
    )  # fmt: skip


def _action(item: ActionJson, raw: Any) -> AuthorizeAction:
    return _build_action(
        item.operation, item.resource_type, item.resource_name, item.pattern_type,
        item.log_if_allowed, item.log_if_denied,
    )  # fmt: skip


def _build_action(
    operation: AclOperation, resource_type: ResourceType, resource_name: str,
    pattern_type: PatternType | None, log_if_allowed: bool, log_if_denied: bool,
) -> AuthorizeAction:  # fmt: skip
    """An action from the fields of :class:`ActionJson` (``patternType`` can only be LITERAL)."""
    return AuthorizeAction(
        operation, resource_type, resource_name, log_if_allowed=log_if_allowed,
        log_if_denied=log_if_denied,
    )  # fmt: skip


def _action_json(action: AuthorizeAction) -> ActionJson:
    return ActionJson(
        operation=action.operation, resource_type=action.resource_type,
        resource_name=action.name, log_if_allowed=action.log_if_allowed,
        log_if_denied=action.log_if_denied,
    )  # fmt: skip


ACTION: Final = Converted(shape(ActionJson), _action, _action_json, build=_build_action)


@message("AuthorizeRequest", closed=True, read_first=("actions",))
class AuthorizeRequest(DecisionRequest):
    """``/v1/authorize`` (``Authorizer.authorize``, KIP-50): actions answered in order (and
    read first: an empty body is told about them)."""

    actions: list[AuthorizeAction] = wire(Array(ACTION, limit=MAX_ACTIONS))


@message("ByResourceTypeRequest", closed=True)
class ByResourceTypeRequest(DecisionRequest):
    """``/v1/authorize-by-resource-type`` (KIP-679)."""

    operation: AclOperation = wire(KafkaEnum(AclOperation, SPECIFIC_OPS))
    resource_type: ResourceType = wire(KafkaEnum(ResourceType, SPECIFIC_TYPES))


class ApiKey(Kind[int]):
    """A Kafka API key as its number (0) or its name (``PRODUCE``, ``Produce``)."""

    plain = True

    def __init__(self, by_name: Mapping[str, int]) -> None:
        self.by_name = by_name

    def read(self, value: Any, parent: str, key: str | int) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            found = self.by_name.get(value.upper().replace("-", "_"))
            if found is None and value.isdigit():
                found = int(value)
            if found is not None:
                return found
        known = ", ".join(sorted(self.by_name, key=self.by_name.__getitem__))
        raise BadRequestError(
            f"{where(parent, key)}: {show(value)} is not a Kafka API key; use a number or one "
            f"of {known}"
        )

    def schema(self) -> Schema:
        return {"oneOf": [{"type": "integer"}, {"type": "string"}]}


API_KEY: Final = ApiKey(API_KEYS)


def api_name(key: int) -> str:
    """The name of a Kafka API key (``0`` -> ``PRODUCE``), or the number as text."""
    return _API_NAMES.get(key, str(key))


_TEXTS: Final = Array(TEXT_ITEM, limit=MAX_ITEMS)


@message("RequestCheckRequest", closed=True)
class RequestCheckRequest(DecisionRequest):
    """``/v1/authorize-request``: every ACL check the Kafka request ``api_key`` needs."""

    api_key: int = wire(
        API_KEY, example="PRODUCE",
        description="Kafka API key number or name (PRODUCE, FETCH, JOIN_GROUP, ...).",
    )  # fmt: skip
    topics: list[str] = wire(_TEXTS, default_factory=list, null_is_absent=True)
    group: str | None = wire(NULLABLE_TEXT, default=None)
    groups: list[str] = wire(_TEXTS, default_factory=list, null_is_absent=True)
    transactional_id: str | None = wire(NULLABLE_TEXT, default=None)
    idempotent: bool = wire(FLAG, default=False)
    follower: bool = wire(FLAG, default=False)
    auto_create: bool = wire(FLAG, default=False)
    broker_configs: bool = wire(FLAG, default=False)


@message("OffsetWaitRequest", closed=True)
class OffsetWaitRequest(Message):
    """Wait until the replica has applied an offset above ``after`` (a long-poll):
    ``{"after": 41, "timeoutMs": 30000}`` answers once the applied offset is above 41, or after
    30 s with the offset as it is.

    With ``subscriber`` and ``leaseMs`` the caller holds a decision cache under a lease
    (:mod:`replicator.leases`): the poll acknowledges ``after`` and answers with the next
    offset as soon as it is announced, before the replica makes it visible."""

    after: int = wire(
        Integer(minimum=-1, what="must be the applied offset the caller knows (integer >= -1)"),
        description="The applied offset the caller knows.",
    )  # fmt: skip
    timeout_ms: float = wire(
        Number(0, MAX_OFFSET_WAIT_MS, f"must be milliseconds in [0, {MAX_OFFSET_WAIT_MS}]"),
        description="How long to wait for the offset to move.",
    )  # fmt: skip
    subscriber: str | None = wire(
        BoundedText(1, 200, "must name the cache holder (1 to 200 characters)"), default=None,
        description="Names a decision cache that holds a lease.",
    )  # fmt: skip
    lease_ms: int = wire(
        Integer(minimum=0, maximum=MAX_LEASE_MS,
                what=f"must be whole milliseconds in [0, {MAX_LEASE_MS}]"),
        default=0,
        description="The cache's lease from this poll on (0 ends it). The replica makes no new "
        "offset visible until every live lease acknowledged it (a poll naming it as after) or "
        "ran out.",
    )  # fmt: skip

    def check(self, path: str) -> None:
        if self.lease_ms and self.subscriber is None:
            raise BadRequestError("leaseMs needs a subscriber naming the cache that holds the lease")

    @property
    def timeout_s(self) -> float:
        return float(self.timeout_ms) / 1000.0

    @property
    def lease_s(self) -> float:
        return self.lease_ms / 1000.0


# --- ACL administration (KIP-140) ---------------------------------------------------------------


@message(
    "OnBehalfOf", closed=True,
    description="The Kafka client a broker's authorizer plugin acts for: the store checks and "
    "records it as the actor. The authenticated caller needs CLUSTER_ACTION on the CLUSTER (as "
    "a forwarding broker does, KIP-590).",
)  # fmt: skip
class OnBehalfOf(Message):
    """The Kafka client an admin request is made for, by a broker's authorizer plugin.

    The authenticated caller (the plugin's credential) must hold CLUSTER_ACTION on the CLUSTER,
    as a forwarding broker must for KIP-590's envelope; the store then checks and records this
    principal, the broker-side caller, as the actor."""

    principal: str = wire(PRINCIPAL, example="User:alice")
    host: str = wire(TEXT, example="10.0.0.1")


_ON_BEHALF_OF: Final = shape(OnBehalfOf)
_BINDINGS: Final = Array(BINDING_OR_INVALID, limit=MAX_ITEMS)
_FILTERS: Final = Array(FILTER, limit=MAX_ITEMS)


@message("CreateAclsRequest", closed=True)
class CreateAclsRequest(Message):
    items: list[AclBinding | InvalidItem] = wire(_BINDINGS, name="bindings")
    on_behalf_of: OnBehalfOf | None = wire(_ON_BEHALF_OF, default=None)


@message("DescribeAclsRequest", closed=True)
class DescribeAclsRequest(Message):
    acl_filter: AclBindingFilter = wire(FILTER, default=ANY_FILTER, null_is_absent=True,
                                        name="filter")  # fmt: skip
    min_offset: int | None = wire(LOG_OFFSET, default=None)
    on_behalf_of: OnBehalfOf | None = wire(_ON_BEHALF_OF, default=None)


@message("DeleteAclsRequest", closed=True)
class DeleteAclsRequest(Message):
    filters: list[AclBindingFilter] = wire(_FILTERS)
    on_behalf_of: OnBehalfOf | None = wire(_ON_BEHALF_OF, default=None)


@message("AlterAclsRequest", closed=True)
class AlterAclsRequest(Message):
    """``/v1/acls/alter``: deletes, creates and settings written as one batch (a restore).
    Each key is optional; at least one change."""

    deletes: list[AclBindingFilter] = wire(_FILTERS, default_factory=list)
    creates: list[AclBinding | InvalidItem] = wire(_BINDINGS, default_factory=list)
    configs: dict[str, str | None] = wire(
        ConfigMap(non_empty=False), default_factory=dict,
        description="name -> value; null resets to the default.",
    )  # fmt: skip
    scope: Scope | None = wire(
        SCOPE, default=None,
        description="With ifScopeUnchangedSince: the bindings whose changes refuse the write.",
    )  # fmt: skip
    if_scope_unchanged_since: int | None = wire(
        LOG_OFFSET, default=None,
        description="Write only if no binding in scope was created or deleted after this log "
        "offset, and none of the settings in configs was altered after it (checked under the "
        "node's write lock: optimistic concurrency); else 409 naming each change, its actor and "
        "time.",
    )  # fmt: skip

    reference: str | None = wire(
        NULLABLE_TEXT, default=None,
        description="A reference (a commit id, a ticket) written with the changes as the read-only "
        "setting acl.change.reference, in the same batch (same request id and actor).",
    )  # fmt: skip

    def check(self, path: str) -> None:
        if not (self.deletes or self.creates or self.configs):
            raise BadRequestError("alter_acls needs at least one of deletes, creates or configs")
        if (self.scope is None) != (self.if_scope_unchanged_since is None):
            raise BadRequestError("scope and ifScopeUnchangedSince go together; give both or neither")


# --- configs (KIP-133) ----------------------------------------------------------------------------


@message("DescribeConfigsRequest", closed=True)
class DescribeConfigsRequest(Message):
    names: list[str] = wire(_TEXTS, default_factory=list, null_is_absent=True)


@message("AlterConfigsRequest", closed=True)
class AlterConfigsBody(Message):
    """``{"configs": {"super.users": "User:a;User:b", "x": null}, "validateOnly": true}``:
    null resets a setting to its default (KIP-133's delete).  ``forceReason`` forces a format
    downgrade that would widen access or lose bindings for an older reader, and is recorded in
    the log with the actor.

    Not called ``AlterConfigsRequest`` (its schema's name): what an alter-configs policy sees
    is :class:`store.settings.AlterConfigsRequest`, the one type of that name."""

    configs: dict[str, str | None] = wire(
        ConfigMap(non_empty=True), example={"allow.everyone.if.no.acl.found": "false"},
        description="name -> value; null resets to the default.",
    )  # fmt: skip
    validate_only: bool = wire(FLAG, default=False)
    force_reason: str | None = wire(
        NULLABLE_TEXT, default=None,
        description="Force lowering acl.format.version although an older reader would lose "
        "bindings or widen access; recorded with the actor in the log.",
    )  # fmt: skip


# --- the parsers the server calls (a whole body each) --------------------------------------------

authorize_request: Final = shape(AuthorizeRequest).parse
by_resource_type_request: Final = shape(ByResourceTypeRequest).parse
request_check_request: Final = shape(RequestCheckRequest).parse
offset_wait_request: Final = shape(OffsetWaitRequest).parse
create_request: Final = shape(CreateAclsRequest).parse
describe_request: Final = shape(DescribeAclsRequest).parse
delete_request: Final = shape(DeleteAclsRequest).parse
alter_acls_request: Final = shape(AlterAclsRequest).parse
alter_configs_request: Final = shape(AlterConfigsBody).parse


def describe_configs_request(body: Any) -> DescribeConfigsRequest:
    """No body describes every setting."""
    return shape(DescribeConfigsRequest).parse(body if body is not None else {})


def bindings(body: Any) -> list[AclBinding | InvalidItem]:
    """The bindings of a create request (:func:`create_request` without its actor)."""
    return create_request(body).items


def delete_filters(body: Any) -> list[AclBindingFilter]:
    """The filters of a delete request (:func:`delete_request` without its actor)."""
    return delete_request(body).filters
