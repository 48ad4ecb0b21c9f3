"""Requests of the sidecar API: JSON bodies to typed requests, pure functions, no I/O.

Each parser takes the decoded JSON body of one endpoint and returns a typed request over
:mod:`store.acl` and :mod:`store.authorizer` values, or raises
:class:`~replicator.contract.fields.BadRequestError` naming the field, the value and the fix
(the field readers are in :mod:`replicator.contract.fields`, bindings and filters in
:mod:`replicator.contract.bindings`).  An unknown field is refused by name: a typo must not
silently become a different question.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from replicator.contract.bindings import RESOURCE_NAME, InvalidItem, acl_filter, binding
from replicator.contract.fields import (
    LITERAL_ONLY,
    MAX_ACTIONS,
    SPECIFIC_OPS,
    SPECIFIC_TYPES,
    BadRequestError,
    array,
    check_principal,
    enum_value,
    flag,
    min_offset,
    obj,
    optional_text,
    show,
    text,
    texts,
    timeout_s,
)
from store.acl import AclBinding, AclBindingFilter, AclOperation, PatternType, ResourceType
from store.authorizer import Action
from store.kafka_apis import API_KEY_TABLE

API_KEYS: Final[Mapping[str, int]] = {row.api_name: row.api_key for row in API_KEY_TABLE}
"""Kafka API names (``PRODUCE``) to keys, from the API-key table (:mod:`store.kafka_apis`)."""
_API_NAMES: Final[Mapping[int, str]] = {row.api_key: row.api_name for row in API_KEY_TABLE}


class IdentityKind(enum.Enum):
    """How the caller named the identity to authorize."""

    PRINCIPAL = "principal"
    """``Type:name`` as Kafka's ACLs store it."""
    SSL_DISTINGUISHED_NAME = "sslDistinguishedName"
    """A TLS client certificate's subject, mapped by ``ssl.principal.mapping.rules``."""
    KERBEROS_PRINCIPAL = "kerberosPrincipal"
    """A Kerberos name, mapped by ``sasl.kerberos.principal.to.local.rules``."""


@dataclass(frozen=True, slots=True)
class Identity:
    """The identity of an authorize request, before principal mapping."""

    kind: IdentityKind
    text: str


@dataclass(frozen=True, slots=True)
class LogFlags:
    """``Action.logIfAllowed`` / ``logIfDenied`` (KIP-504): whether a decision is worth an audit
    record.  A broker clears them for checks that only filter (which topics to list), whose
    denials are expected; Kafka's own authorizers log those at DEBUG, not in the audit trail."""

    if_allowed: bool = True
    if_denied: bool = True


LOG_ALWAYS: Final = LogFlags()


@dataclass(frozen=True, slots=True)
class AuthorizeRequest:
    identity: Identity
    host: str
    actions: list[Action]
    min_offset: int | None
    explain: bool
    timeout_s: float | None
    log: tuple[LogFlags, ...] = ()
    """One per action (empty: log every decision)."""


@dataclass(frozen=True, slots=True)
class ByResourceTypeRequest:
    identity: Identity
    host: str
    operation: AclOperation
    resource_type: ResourceType
    min_offset: int | None
    explain: bool
    timeout_s: float | None


@dataclass(frozen=True, slots=True)
class RequestCheckRequest:
    """A request-level check: every ACL check the Kafka request ``api_key`` needs."""

    identity: Identity
    host: str
    api_key: int
    topics: tuple[str, ...]
    group: str | None
    groups: tuple[str, ...]
    transactional_id: str | None
    idempotent: bool
    follower: bool
    auto_create: bool
    broker_configs: bool
    min_offset: int | None
    explain: bool
    timeout_s: float | None


@dataclass(frozen=True, slots=True)
class OnBehalfOf:
    """The Kafka client an admin request is made for, by a broker's authorizer plugin.

    The authenticated caller (the plugin's credential) must hold CLUSTER_ACTION on the CLUSTER,
    as a forwarding broker must for KIP-590's envelope; the store then checks and records this
    principal, the broker-side caller, as the actor."""

    principal: str
    host: str


@dataclass(frozen=True, slots=True)
class CreateAclsRequest:
    items: list[AclBinding | InvalidItem]
    on_behalf_of: OnBehalfOf | None


@dataclass(frozen=True, slots=True)
class DescribeAclsRequest:
    acl_filter: AclBindingFilter
    min_offset: int | None
    on_behalf_of: OnBehalfOf | None = None


@dataclass(frozen=True, slots=True)
class DeleteAclsRequest:
    filters: list[AclBindingFilter]
    on_behalf_of: OnBehalfOf | None


@dataclass(frozen=True, slots=True)
class OffsetWaitRequest:
    """Wait until the replica has applied an offset above ``after`` (a long-poll).

    With ``subscriber``, the caller holds a decision cache under a lease of ``lease_s``
    (:mod:`replicator.leases`): the poll acknowledges ``after`` and answers with the next
    offset as soon as it is announced, before the replica makes it visible."""

    after: int
    timeout_s: float
    subscriber: str | None = None
    lease_s: float = 0.0


MAX_OFFSET_WAIT_MS: Final = 60_000
"""Bound of one long-poll: well under the server's idle timeout, so the connection stays up."""
MAX_LEASE_MS: Final = 10_000
"""The longest cache lease a long-poll may ask for (``replicator.leases.MAX_LEASE_S``)."""


# --- identities and actions -----------------------------------------------------------------

_IDENTITY_KEYS = tuple(kind.value for kind in IdentityKind)


def identity(data: Mapping[str, Any]) -> Identity:
    """Exactly one of ``principal``, ``sslDistinguishedName`` or ``kerberosPrincipal``."""
    given = [key for key in _IDENTITY_KEYS if data.get(key) is not None]
    if len(given) != 1:
        raise BadRequestError(
            'give exactly one identity: principal ("User:bob"), sslDistinguishedName '
            f'("CN=bob,OU=...") or kerberosPrincipal ("bob/host@REALM"); got {given or "none"}'
        )
    key = given[0]
    value = text(data, key, "")
    kind = IdentityKind(key)
    if kind is IdentityKind.PRINCIPAL:
        check_principal(value, "principal")
    return Identity(kind, value)


_LOG_KEYS = ("logIfAllowed", "logIfDenied")
_ACTION_KEYS = frozenset({"operation", "resourceType", RESOURCE_NAME, "patternType", *_LOG_KEYS})
_AUTHORIZE_KEYS = frozenset(
    {*_IDENTITY_KEYS, "host", "actions", "minOffset", "explain", "timeoutMs"}
)


def action(value: Any, path: str) -> Action:
    data = obj(value, path, _ACTION_KEYS)
    operation = enum_value(AclOperation, data.get("operation"), f"{path}.operation", SPECIFIC_OPS)
    resource_type = enum_value(
        ResourceType, data.get("resourceType"), f"{path}.resourceType", SPECIFIC_TYPES
    )
    name = text(data, RESOURCE_NAME, path)
    if data.get("patternType") is not None:
        enum_value(PatternType, data["patternType"], f"{path}.patternType", LITERAL_ONLY)
    return Action(operation, resource_type, name)


def log_flags(value: Any, path: str) -> LogFlags:
    """An action's ``logIfAllowed`` / ``logIfDenied``, each true when absent."""
    if not isinstance(value, dict) or not any(key in value for key in _LOG_KEYS):
        return LOG_ALWAYS
    flags = [True if value.get(key) is None else flag(value, key, path) for key in _LOG_KEYS]
    return LogFlags(if_allowed=flags[0], if_denied=flags[1])


def authorize_request(body: Any) -> AuthorizeRequest:
    data = obj(body, "", _AUTHORIZE_KEYS)
    items = array(data, "actions", "", limit=MAX_ACTIONS)
    actions = [action(item, f"actions[{i}]") for i, item in enumerate(items)]
    log = tuple(log_flags(item, f"actions[{i}]") for i, item in enumerate(items))
    return AuthorizeRequest(
        identity(data),
        text(data, "host", ""),
        actions,
        min_offset(data),
        flag(data, "explain", ""),
        timeout_s(data),
        () if all(f is LOG_ALWAYS for f in log) else log,
    )


_BY_TYPE_KEYS = frozenset(
    {*_IDENTITY_KEYS, "host", "operation", "resourceType", "minOffset", "explain", "timeoutMs"}
)


def by_resource_type_request(body: Any) -> ByResourceTypeRequest:
    data = obj(body, "", _BY_TYPE_KEYS)
    return ByResourceTypeRequest(
        identity(data),
        text(data, "host", ""),
        enum_value(AclOperation, data.get("operation"), "operation", SPECIFIC_OPS),
        enum_value(ResourceType, data.get("resourceType"), "resourceType", SPECIFIC_TYPES),
        min_offset(data),
        flag(data, "explain", ""),
        timeout_s(data),
    )


_REQUEST_CHECK_KEYS = frozenset(
    {*_IDENTITY_KEYS, "host", "apiKey", "topics", "group", "groups", "transactionalId",
     "idempotent", "follower", "autoCreate", "brokerConfigs", "minOffset", "explain", "timeoutMs"}
)  # fmt: skip


def api_key(value: Any, names: Mapping[str, int]) -> int:
    """A Kafka API key as its number (0) or its name (``PRODUCE``, ``Produce``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        key = names.get(value.upper().replace("-", "_"))
        if key is None and value.isdigit():
            key = int(value)
        if key is not None:
            return key
    known = ", ".join(sorted(names, key=names.__getitem__))
    raise BadRequestError(
        f"apiKey: {show(value)} is not a Kafka API key; use a number or one of {known}"
    )


def api_name(key: int) -> str:
    """The name of a Kafka API key (``0`` -> ``PRODUCE``), or the number as text."""
    return _API_NAMES.get(key, str(key))


def request_check_request(
    body: Any, api_names: Mapping[str, int] = API_KEYS
) -> RequestCheckRequest:
    data = obj(body, "", _REQUEST_CHECK_KEYS)
    return RequestCheckRequest(
        identity=identity(data),
        host=text(data, "host", ""),
        api_key=api_key(data.get("apiKey"), api_names),
        topics=texts(data, "topics", ""),
        group=optional_text(data, "group", ""),
        groups=texts(data, "groups", ""),
        transactional_id=optional_text(data, "transactionalId", ""),
        idempotent=flag(data, "idempotent", ""),
        follower=flag(data, "follower", ""),
        auto_create=flag(data, "autoCreate", ""),
        broker_configs=flag(data, "brokerConfigs", ""),
        min_offset=min_offset(data),
        explain=flag(data, "explain", ""),
        timeout_s=timeout_s(data),
    )


ON_BEHALF_OF: Final = "onBehalfOf"


def on_behalf_of(data: Mapping[str, Any]) -> OnBehalfOf | None:
    """``{"principal": "User:alice", "host": "10.0.0.1"}``, or None when absent."""
    value = data.get(ON_BEHALF_OF)
    if value is None:
        return None
    item = obj(value, ON_BEHALF_OF, frozenset({"principal", "host"}))
    principal = text(item, "principal", ON_BEHALF_OF)
    check_principal(principal, f"{ON_BEHALF_OF}.principal")
    return OnBehalfOf(principal, text(item, "host", ON_BEHALF_OF))


def create_request(body: Any) -> CreateAclsRequest:
    data = obj(body, "", frozenset({"bindings", ON_BEHALF_OF}))
    items = [binding(item, f"bindings[{i}]") for i, item in enumerate(array(data, "bindings", ""))]
    return CreateAclsRequest(items, on_behalf_of(data))


def bindings(body: Any) -> list[AclBinding | InvalidItem]:
    """The bindings of a create request (:func:`create_request` without its actor)."""
    return create_request(body).items


def describe_request(body: Any) -> DescribeAclsRequest:
    data = obj(body, "", frozenset({"filter", "minOffset", ON_BEHALF_OF}))
    return DescribeAclsRequest(
        acl_filter(data.get("filter"), "filter"), min_offset(data), on_behalf_of(data)
    )


def delete_request(body: Any) -> DeleteAclsRequest:
    data = obj(body, "", frozenset({"filters", ON_BEHALF_OF}))
    filters = [
        acl_filter(item, f"filters[{i}]") for i, item in enumerate(array(data, "filters", ""))
    ]
    return DeleteAclsRequest(filters, on_behalf_of(data))


def delete_filters(body: Any) -> list[AclBindingFilter]:
    """The filters of a delete request (:func:`delete_request` without its actor)."""
    return delete_request(body).filters


def offset_wait_request(body: Any) -> OffsetWaitRequest:
    """``{"after": 41, "timeoutMs": 30000}``: answer once the applied offset is above 41, or
    after 30 s with the offset as it is.  ``"subscriber": "broker-1-...", "leaseMs": 1000``
    make the poll a cache lease's renewal and acknowledgement."""
    data = obj(body, "", frozenset({"after", "timeoutMs", "subscriber", "leaseMs"}))
    after = data.get("after")
    if not isinstance(after, int) or isinstance(after, bool) or not -1 <= after < 2**63:
        raise BadRequestError(
            f"after must be the applied offset the caller knows (integer >= -1), got {show(after)}"
        )
    wait = data.get("timeoutMs")
    if (
        not isinstance(wait, int | float) or isinstance(wait, bool)
        or not 0 <= wait <= MAX_OFFSET_WAIT_MS
    ):  # fmt: skip
        raise BadRequestError(
            f"timeoutMs must be milliseconds in [0, {MAX_OFFSET_WAIT_MS}], got {show(wait)}"
        )
    subscriber = data.get("subscriber")
    if subscriber is not None and (
        not isinstance(subscriber, str) or not 0 < len(subscriber) <= 200
    ):
        raise BadRequestError(
            f"subscriber must name the cache holder (1 to 200 characters), got {show(subscriber)}"
        )
    lease = data.get("leaseMs", 0)
    if (
        not isinstance(lease, int) or isinstance(lease, bool) or not 0 <= lease <= MAX_LEASE_MS
    ):  # fmt: skip
        raise BadRequestError(
            f"leaseMs must be whole milliseconds in [0, {MAX_LEASE_MS}], got {show(lease)}"
        )
    if lease and subscriber is None:
        raise BadRequestError("leaseMs needs a subscriber naming the cache that holds the lease")
    return OffsetWaitRequest(after, float(wait) / 1000.0, subscriber, lease / 1000.0)


@dataclass(frozen=True, slots=True)
class AlterAclsRequest:
    """``/v1/acls/alter``: deletes, creates and settings written as one batch (a restore)."""

    deletes: list[AclBindingFilter]
    creates: list[AclBinding | InvalidItem]
    configs: dict[str, str | None]


def alter_acls_request(body: Any) -> AlterAclsRequest:
    """``{"deletes": [filter...], "creates": [binding...], "configs": {name: value|null}}``;
    each key optional, at least one change."""
    data = obj(body, "", frozenset({"deletes", "creates", "configs"}))
    deletes = [
        acl_filter(item, f"deletes[{i}]")
        for i, item in enumerate(array(data, "deletes", "") if "deletes" in data else [])
    ]
    creates = [
        binding(item, f"creates[{i}]")
        for i, item in enumerate(array(data, "creates", "") if "creates" in data else [])
    ]
    configs = data.get("configs", {})
    if not isinstance(configs, dict):
        raise BadRequestError(f"configs must be an object of name -> value (or null), got {show(configs)}")
    for key, value in configs.items():
        if value is not None and not isinstance(value, str):
            raise BadRequestError(f"configs.{key} must be a string or null, got {show(value)}")
    if not (deletes or creates or configs):
        raise BadRequestError("alter_acls needs at least one of deletes, creates or configs")
    return AlterAclsRequest(deletes, creates, dict(configs))


def describe_configs_request(body: Any) -> tuple[str, ...]:
    data = obj(body if body is not None else {}, "", frozenset({"names"}))
    return texts(data, "names", "")


def alter_configs_request(body: Any) -> tuple[dict[str, str | None], bool, str | None]:
    """``{"configs": {"super.users": "User:a;User:b", "x": null}, "validateOnly": true}``:
    the changes, ``validateOnly`` and ``forceReason``; null resets a setting to its default
    (KIP-133's delete).  ``forceReason`` forces a format downgrade that would widen access or
    lose bindings for an older reader, and is recorded in the log with the actor.

    A tuple, not a request class: what an alter-configs policy sees is
    :class:`store.settings.AlterConfigsRequest`, the one type of that name."""
    data = obj(body, "", frozenset({"configs", "validateOnly", "forceReason"}))
    configs = data.get("configs")
    if not isinstance(configs, dict) or not configs:
        raise BadRequestError(
            f"configs must be a non-empty object of name -> value (or null), got {show(configs)}"
        )
    for key, value in configs.items():
        if value is not None and not isinstance(value, str):
            raise BadRequestError(f"configs.{key} must be a string or null, got {show(value)}")
    return dict(configs), flag(data, "validateOnly", ""), optional_text(data, "forceReason", "")


