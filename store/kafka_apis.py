"""Which ACL checks each Kafka request needs, and the role expansions of ``kafka-acls.sh``.

:data:`API_KEY_TABLE` is the table "Protocol (API key) | Operation | Resource" of Kafka's
authorization documentation (``docs/security.html``, copied in
``shared/reference/kafka-authorization-docs.txt``), one :class:`ApiKeyRow` per line, with two
columns made explicit: *when* a row applies (a transactional produce, a follower fetch, broker
rather than topic configs...) and which rows are *fallbacks* for each other (CREATE on the
CLUSTER, else CREATE on the TOPIC).  :func:`checks_for` turns a request's details into the
concrete checks, as "all of these steps, each satisfied by any of its alternatives, tried in
order".

:func:`producer_bindings` and :func:`consumer_bindings` are the ``--producer`` and
``--consumer`` conveniences of ``kafka-acls.sh`` (``kafka.admin.AclCommand``
``getProducerResourceFilterToAcls`` / ``getConsumerResourceFilterToAcls``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from store.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.errors import InvalidRequestError

_Op = AclOperation
_Rt = ResourceType


class NameSource(enum.Enum):
    """Where a row's resource name comes from in the request."""

    CLUSTER = "cluster"  # always ``kafka-cluster``
    TOPICS = "topics"
    GROUP = "group"
    GROUPS = "groups"
    TRANSACTIONAL_ID = "transactional_id"
    TOKENS = "tokens"


class When(enum.Enum):
    """The request shape a row applies to (the docs' "Note" column, made checkable)."""

    ALWAYS = "always"
    IDEMPOTENT = "idempotent and not transactional"
    NON_TRANSACTIONAL = "no transactional id"
    FOLLOWER = "fetch from a follower replica"
    CONSUMER = "fetch from a consumer"
    AUTO_CREATE = "topic auto-creation"
    BROKER_CONFIGS = "broker configs"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKeyRow:
    """One line of the docs' table.  ``operation is None``: no ACL can control this API."""

    api_key: int
    api_name: str
    operation: AclOperation | None = None
    resource_type: ResourceType | None = None
    source: NameSource = NameSource.CLUSTER
    when: When = When.ALWAYS
    fallback: str | None = None  # rows of one API with the same label are alternatives
    required: bool = False  # the request must name this resource
    note: str = ""


def _row(
    key: int,
    name: str,
    op: AclOperation,
    rt: ResourceType,
    source: NameSource = NameSource.CLUSTER,
    *,
    when: When = When.ALWAYS,
    fallback: str | None = None,
    required: bool = False,
    note: str = "",
) -> ApiKeyRow:
    return ApiKeyRow(
        api_key=key, api_name=name, operation=op, resource_type=rt, source=source, when=when,
        fallback=fallback, required=required, note=note,
    )  # fmt: skip


_T, _G, _GS, _X = NameSource.TOPICS, NameSource.GROUP, NameSource.GROUPS, NameSource.TRANSACTIONAL_ID
_NOT_AUTHORIZABLE = "part of the handshake or authentication, before any authorization"
_TOKEN_RULES = "special rules, see 'Authentication using Delegation Tokens' (KIP-48)"

API_KEY_TABLE: tuple[ApiKeyRow, ...] = (
    _row(0, "PRODUCE", _Op.WRITE, _Rt.TRANSACTIONAL_ID, _X, note="transactional producer"),
    _row(0, "PRODUCE", _Op.IDEMPOTENT_WRITE, _Rt.CLUSTER, when=When.IDEMPOTENT),
    _row(0, "PRODUCE", _Op.WRITE, _Rt.TOPIC, _T),
    _row(1, "FETCH", _Op.CLUSTER_ACTION, _Rt.CLUSTER, when=When.FOLLOWER),
    _row(1, "FETCH", _Op.READ, _Rt.TOPIC, _T, when=When.CONSUMER),
    _row(2, "LIST_OFFSETS", _Op.DESCRIBE, _Rt.TOPIC, _T),
    _row(3, "METADATA", _Op.DESCRIBE, _Rt.TOPIC, _T),
    _row(3, "METADATA", _Op.CREATE, _Rt.CLUSTER, when=When.AUTO_CREATE, fallback="create"),
    _row(3, "METADATA", _Op.CREATE, _Rt.TOPIC, _T, when=When.AUTO_CREATE, fallback="create"),
    _row(4, "LEADER_AND_ISR", _Op.CLUSTER_ACTION, _Rt.CLUSTER),
    _row(5, "STOP_REPLICA", _Op.CLUSTER_ACTION, _Rt.CLUSTER),
    _row(6, "UPDATE_METADATA", _Op.CLUSTER_ACTION, _Rt.CLUSTER),
    _row(7, "CONTROLLED_SHUTDOWN", _Op.CLUSTER_ACTION, _Rt.CLUSTER),
    _row(8, "OFFSET_COMMIT", _Op.READ, _Rt.GROUP, _G, required=True, note="group first"),
    _row(8, "OFFSET_COMMIT", _Op.READ, _Rt.TOPIC, _T),
    _row(9, "OFFSET_FETCH", _Op.DESCRIBE, _Rt.GROUP, _G, required=True, note="group first"),
    _row(9, "OFFSET_FETCH", _Op.DESCRIBE, _Rt.TOPIC, _T),
    _row(10, "FIND_COORDINATOR", _Op.DESCRIBE, _Rt.GROUP, _G, note="group coordinator"),
    _row(10, "FIND_COORDINATOR", _Op.DESCRIBE, _Rt.TRANSACTIONAL_ID, _X, note="txn coordinator"),
    _row(11, "JOIN_GROUP", _Op.READ, _Rt.GROUP, _G, required=True),
    _row(12, "HEARTBEAT", _Op.READ, _Rt.GROUP, _G, required=True),
    _row(13, "LEAVE_GROUP", _Op.READ, _Rt.GROUP, _G, required=True),
    _row(14, "SYNC_GROUP", _Op.READ, _Rt.GROUP, _G, required=True),
    _row(15, "DESCRIBE_GROUPS", _Op.DESCRIBE, _Rt.GROUP, _GS),
    _row(16, "LIST_GROUPS", _Op.DESCRIBE, _Rt.CLUSTER, fallback="list",
         note="a failed check hides the group, never CLUSTER_AUTHORIZATION_FAILED"),
    _row(16, "LIST_GROUPS", _Op.DESCRIBE, _Rt.GROUP, _GS, fallback="list"),
    ApiKeyRow(api_key=17, api_name="SASL_HANDSHAKE", note=_NOT_AUTHORIZABLE),
    ApiKeyRow(api_key=18, api_name="API_VERSIONS", note=_NOT_AUTHORIZABLE),
    _row(19, "CREATE_TOPICS", _Op.CREATE, _Rt.CLUSTER, fallback="create"),
    _row(19, "CREATE_TOPICS", _Op.CREATE, _Rt.TOPIC, _T, fallback="create"),
    _row(20, "DELETE_TOPICS", _Op.DELETE, _Rt.TOPIC, _T),
    _row(21, "DELETE_RECORDS", _Op.DELETE, _Rt.TOPIC, _T),
    _row(22, "INIT_PRODUCER_ID", _Op.WRITE, _Rt.TRANSACTIONAL_ID, _X),
    _row(22, "INIT_PRODUCER_ID", _Op.IDEMPOTENT_WRITE, _Rt.CLUSTER, when=When.NON_TRANSACTIONAL),
    _row(23, "OFFSET_FOR_LEADER_EPOCH", _Op.CLUSTER_ACTION, _Rt.CLUSTER, fallback="epoch"),
    _row(23, "OFFSET_FOR_LEADER_EPOCH", _Op.DESCRIBE, _Rt.TOPIC, _T, fallback="epoch"),
    _row(24, "ADD_PARTITIONS_TO_TXN", _Op.WRITE, _Rt.TRANSACTIONAL_ID, _X, required=True),
    _row(24, "ADD_PARTITIONS_TO_TXN", _Op.WRITE, _Rt.TOPIC, _T),
    _row(25, "ADD_OFFSETS_TO_TXN", _Op.WRITE, _Rt.TRANSACTIONAL_ID, _X, required=True),
    _row(25, "ADD_OFFSETS_TO_TXN", _Op.READ, _Rt.GROUP, _G, required=True),
    _row(26, "END_TXN", _Op.WRITE, _Rt.TRANSACTIONAL_ID, _X, required=True),
    _row(27, "WRITE_TXN_MARKERS", _Op.CLUSTER_ACTION, _Rt.CLUSTER),
    _row(28, "TXN_OFFSET_COMMIT", _Op.WRITE, _Rt.TRANSACTIONAL_ID, _X, required=True),
    _row(28, "TXN_OFFSET_COMMIT", _Op.READ, _Rt.GROUP, _G, required=True),
    _row(28, "TXN_OFFSET_COMMIT", _Op.READ, _Rt.TOPIC, _T),
    _row(29, "DESCRIBE_ACLS", _Op.DESCRIBE, _Rt.CLUSTER),
    _row(30, "CREATE_ACLS", _Op.ALTER, _Rt.CLUSTER),
    _row(31, "DELETE_ACLS", _Op.ALTER, _Rt.CLUSTER),
    _row(32, "DESCRIBE_CONFIGS", _Op.DESCRIBE_CONFIGS, _Rt.CLUSTER, when=When.BROKER_CONFIGS),
    _row(32, "DESCRIBE_CONFIGS", _Op.DESCRIBE_CONFIGS, _Rt.TOPIC, _T),
    _row(33, "ALTER_CONFIGS", _Op.ALTER_CONFIGS, _Rt.CLUSTER, when=When.BROKER_CONFIGS),
    _row(33, "ALTER_CONFIGS", _Op.ALTER_CONFIGS, _Rt.TOPIC, _T),
    _row(34, "ALTER_REPLICA_LOG_DIRS", _Op.ALTER, _Rt.CLUSTER),
    _row(35, "DESCRIBE_LOG_DIRS", _Op.DESCRIBE, _Rt.CLUSTER, note="empty response on failure"),
    ApiKeyRow(api_key=36, api_name="SASL_AUTHENTICATE", note=_NOT_AUTHORIZABLE),
    _row(37, "CREATE_PARTITIONS", _Op.ALTER, _Rt.TOPIC, _T),
    ApiKeyRow(api_key=38, api_name="CREATE_DELEGATION_TOKEN", note=_TOKEN_RULES),
    ApiKeyRow(api_key=39, api_name="RENEW_DELEGATION_TOKEN", note=_TOKEN_RULES),
    ApiKeyRow(api_key=40, api_name="EXPIRE_DELEGATION_TOKEN", note=_TOKEN_RULES),
    _row(41, "DESCRIBE_DELEGATION_TOKEN", _Op.DESCRIBE, _Rt.DELEGATION_TOKEN, NameSource.TOKENS),
    _row(42, "DELETE_GROUPS", _Op.DELETE, _Rt.GROUP, _GS),
    _row(43, "ELECT_PREFERRED_LEADERS", _Op.CLUSTER_ACTION, _Rt.CLUSTER),
    _row(44, "INCREMENTAL_ALTER_CONFIGS", _Op.ALTER_CONFIGS, _Rt.CLUSTER, when=When.BROKER_CONFIGS),
    _row(44, "INCREMENTAL_ALTER_CONFIGS", _Op.ALTER_CONFIGS, _Rt.TOPIC, _T),
    _row(45, "ALTER_PARTITION_REASSIGNMENTS", _Op.ALTER, _Rt.CLUSTER),
    _row(46, "LIST_PARTITION_REASSIGNMENTS", _Op.DESCRIBE, _Rt.CLUSTER),
    _row(47, "OFFSET_DELETE", _Op.DELETE, _Rt.GROUP, _G, required=True),
    _row(47, "OFFSET_DELETE", _Op.READ, _Rt.TOPIC, _T),
)  # fmt: skip

_DELEGATION_TOKEN_KEYS = frozenset({38, 39, 40})


class UnknownApiKeyError(InvalidRequestError):
    """The API key is not in Kafka's authorization table."""


class NotAclControlledError(InvalidRequestError):
    """The API is governed by rules that are not ACL checks (delegation tokens, KIP-48)."""


class MissingRequestDetailError(InvalidRequestError):
    """The request lacks a detail its checks need (the group of a JOIN_GROUP, say)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One authorize call: may the principal do ``operation`` on this resource?"""

    operation: AclOperation
    resource_type: ResourceType
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckStep:
    """Satisfied when any alternative is allowed; tried in order (the docs' fallbacks)."""

    any_of: tuple[Check, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestDetails:
    """What :func:`checks_for` needs to know about the request."""

    topics: Sequence[str] = ()
    group: str | None = None
    groups: Sequence[str] = ()
    transactional_id: str | None = None
    idempotent: bool = False
    follower: bool = False
    auto_create: bool = False
    broker_configs: bool = False
    tokens: Sequence[str] = ()

    def applies(self, when: When) -> bool:
        return {
            When.ALWAYS: True,
            When.IDEMPOTENT: self.idempotent and self.transactional_id is None,
            When.NON_TRANSACTIONAL: self.transactional_id is None,
            When.FOLLOWER: self.follower,
            When.CONSUMER: not self.follower,
            When.AUTO_CREATE: self.auto_create,
            When.BROKER_CONFIGS: self.broker_configs,
        }[when]

    def names(self, source: NameSource) -> tuple[str, ...]:
        single = {NameSource.GROUP: self.group, NameSource.TRANSACTIONAL_ID: self.transactional_id}
        if source is NameSource.CLUSTER:
            return (CLUSTER_NAME,)
        if source in single:
            value = single[source]
            return () if value is None else (value,)
        many = {NameSource.TOPICS: self.topics, NameSource.GROUPS: self.groups,
                NameSource.TOKENS: self.tokens}  # fmt: skip
        return tuple(many[source])


def rows_for(api_key: int) -> tuple[ApiKeyRow, ...]:
    """The table rows of one API key, in the docs' order."""
    rows = tuple(row for row in API_KEY_TABLE if row.api_key == api_key)
    if not rows:
        known = ", ".join(str(key) for key in sorted({row.api_key for row in API_KEY_TABLE}))
        raise UnknownApiKeyError(f"API key {api_key} is not in Kafka's authorization table "
                                 f"(known keys: {known})")
    return rows


def checks_for(
    api_key: int,
    *,
    topics: Sequence[str] = (),
    group: str | None = None,
    groups: Sequence[str] = (),
    transactional_id: str | None = None,
    idempotent: bool = False,
    follower: bool = False,
    auto_create: bool = False,
    broker_configs: bool = False,
    tokens: Sequence[str] = (),
) -> tuple[CheckStep, ...]:
    """The checks a request needs: every step must pass; a step passes when any alternative does.

    ``()`` means the API is not subject to authorization (SASL_HANDSHAKE, API_VERSIONS,
    SASL_AUTHENTICATE).  Fallback rows (CREATE on the CLUSTER, else on the TOPIC) give one step
    per named resource with the cluster alternative first, as Kafka tries them.
    """
    details = RequestDetails(
        topics=topics, group=group, groups=groups, transactional_id=transactional_id,
        idempotent=idempotent, follower=follower, auto_create=auto_create,
        broker_configs=broker_configs, tokens=tokens,
    )  # fmt: skip
    rows = rows_for(api_key)
    if api_key in _DELEGATION_TOKEN_KEYS:
        raise NotAclControlledError(
            f"{rows[0].api_name} ({api_key}) follows {_TOKEN_RULES}; it is not an ACL check"
        )
    steps: list[CheckStep] = []
    done_fallbacks: set[str] = set()
    for row in rows:
        if row.operation is None or not details.applies(row.when):
            continue
        if row.fallback is None:
            names = details.names(row.source)
            if row.required and not names:
                raise MissingRequestDetailError(
                    f"{row.api_name} ({api_key}) needs `{row.source.value}` to check "
                    f"{row.operation.name} on {_resource_name(row)}"
                )
            steps.extend(CheckStep(any_of=(_check(row, name),)) for name in names)
        elif row.fallback not in done_fallbacks:
            done_fallbacks.add(row.fallback)
            steps.extend(_fallback_steps(rows, row.fallback, details))
    return tuple(steps)


def _fallback_steps(
    rows: tuple[ApiKeyRow, ...], label: str, details: RequestDetails
) -> list[CheckStep]:
    alternatives = [row for row in rows if row.fallback == label]
    per_name = next(row for row in alternatives if row.source is not NameSource.CLUSTER)
    return [
        CheckStep(any_of=tuple(
            _check(row, CLUSTER_NAME if row.source is NameSource.CLUSTER else name)
            for row in alternatives
        ))
        for name in details.names(per_name.source)
    ]  # fmt: skip


def _check(row: ApiKeyRow, name: str) -> Check:
    assert row.operation is not None and row.resource_type is not None
    return Check(operation=row.operation, resource_type=row.resource_type, name=name)


def _resource_name(row: ApiKeyRow) -> str:
    return row.resource_type.name if row.resource_type is not None else "?"


# --- kafka-acls.sh --producer / --consumer ---------------------------------------------------


def producer_bindings(
    *,
    principal: str,
    topic: str,
    transactional_id: str | None = None,
    idempotent: bool = False,
    host: str = WILDCARD_HOST,
    pattern_type: PatternType = PatternType.LITERAL,
    permission_type: AclPermissionType = AclPermissionType.ALLOW,
) -> list[AclBinding]:
    """``kafka-acls.sh --producer``: WRITE, DESCRIBE, CREATE on the topic; WRITE, DESCRIBE on
    the transactional id when given; IDEMPOTENT_WRITE on the cluster with ``--idempotent``.

    ``pattern_type`` (``--resource-pattern-type``) applies to the topic and the transactional
    id; the cluster binding is always LITERAL ``kafka-cluster``.  Sorted in DescribeAcls order.
    """

    def bind(rt: ResourceType, name: str, op: AclOperation, pt: PatternType) -> AclBinding:
        return AclBinding.of(rt, name, pt, principal, host, op, permission_type)

    bindings = [
        bind(ResourceType.TOPIC, topic, op, pattern_type)
        for op in (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE)
    ]
    if transactional_id is not None:
        bindings += [
            bind(ResourceType.TRANSACTIONAL_ID, transactional_id, op, pattern_type)
            for op in (AclOperation.WRITE, AclOperation.DESCRIBE)
        ]
    if idempotent:
        bindings.append(
            bind(ResourceType.CLUSTER, CLUSTER_NAME, AclOperation.IDEMPOTENT_WRITE,
                 PatternType.LITERAL)
        )  # fmt: skip
    return sorted(bindings)


def consumer_bindings(
    *,
    principal: str,
    topic: str,
    group: str,
    host: str = WILDCARD_HOST,
    pattern_type: PatternType = PatternType.LITERAL,
    permission_type: AclPermissionType = AclPermissionType.ALLOW,
) -> list[AclBinding]:
    """``kafka-acls.sh --consumer``: READ, DESCRIBE on the topic and READ on the group.

    ``kafka-acls.sh`` refuses ``--consumer`` without ``--group``; so does this function.
    """
    if not group:
        raise MissingRequestDetailError("--consumer needs a group: pass group='<consumer group>'")
    bindings = [
        AclBinding.of(ResourceType.TOPIC, topic, pattern_type, principal, host, op, permission_type)
        for op in (AclOperation.READ, AclOperation.DESCRIBE)
    ]
    bindings.append(
        AclBinding.of(ResourceType.GROUP, group, pattern_type, principal, host, AclOperation.READ,
                      permission_type)
    )  # fmt: skip
    return sorted(bindings)
