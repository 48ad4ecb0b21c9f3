"""What the authorizer is asked (``Action``) and what it answers (``Decision``).

Mirrors ``org.apache.kafka.server.authorizer.Action`` / ``AuthorizationResult`` and the
``MatchingRule`` kinds of Kafka's ``StandardAuthorizerData`` (SuperUser, DefaultAllow,
DefaultDeny, MatchingAcl), so every answer can say why.  Also the single-ACL rule
``find_result`` (``StandardAuthorizerData.findResult``) and the operation implication
tables it uses.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from store.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.errors import InvalidRequestError


class AuthorizationResult(enum.Enum):
    """``org.apache.kafka.server.authorizer.AuthorizationResult``."""

    ALLOWED = "ALLOWED"
    DENIED = "DENIED"

    def __str__(self) -> str:
        return self.value


ALLOWED = AuthorizationResult.ALLOWED
DENIED = AuthorizationResult.DENIED


class DecisionRule(enum.Enum):
    """Why a decision came out as it did."""

    SUPER_USER = "the principal is in super.users"
    MATCHING_ACL = "an ACL decided it (see Decision.binding)"
    DEFAULT_ALLOW = "no ACL matches the resource; allow.everyone.if.no.acl.found=true"
    DEFAULT_DENY = "no ACL matches the resource"
    RESOURCE_HAS_ACLS = "the resource has ACLs, but none for this principal, host and operation"
    NO_UNDOMINATED_ALLOW = (
        "no ALLOW ACL of this resource type that a DENY does not dominate (authorizeByResourceType)"
    )


class InvalidActionError(InvalidRequestError):
    """An authorize request Kafka refuses with ``IllegalArgumentException``."""


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorization answer and its reason: ``binding`` when ``rule`` is MATCHING_ACL."""

    result: AuthorizationResult
    rule: DecisionRule
    binding: AclBinding | None = None
    _mark: int = field(default=0, init=False, repr=False, compare=False)
    """Scratch state of whoever holds this very object, as :attr:`AclBinding._mark` (not
    compared, hashed or pickled; 0 on a new object): the audit emitter's usage period in which
    it last looked at this decision.  An index keeps one ready-made decision per binding, so a
    request's decisions are checked by one pass over them, not over their bindings."""

    def __reduce__(self) -> tuple[Any, ...]:
        return Decision, (self.result, self.rule, self.binding)

    @property
    def allowed(self) -> bool:
        return self.result is ALLOWED

    def __str__(self) -> str:
        why = str(self.binding) if self.binding is not None else self.rule.name
        return f"{self.result.value} ({why})"


SUPER_USER_DECISION = Decision(ALLOWED, DecisionRule.SUPER_USER)
DEFAULT_ALLOW_DECISION = Decision(ALLOWED, DecisionRule.DEFAULT_ALLOW)
DEFAULT_DENY_DECISION = Decision(DENIED, DecisionRule.DEFAULT_DENY)
RESOURCE_HAS_ACLS_DECISION = Decision(DENIED, DecisionRule.RESOURCE_HAS_ACLS)
NO_UNDOMINATED_ALLOW_DECISION = Decision(DENIED, DecisionRule.NO_UNDOMINATED_ALLOW)


class Action:
    """One thing to authorize: an operation on a resource (``server.authorizer.Action``).

    Only LITERAL actions can be authorized (Kafka refuses others).  The operation bit and
    resource-type index are computed once here so the decision loop does no enum work.
    """

    __slots__ = ("name", "op_bit", "operation", "pattern_type", "resource_type")

    operation: AclOperation
    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    op_bit: int

    def __init__(
        self,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        pattern_type: PatternType = PatternType.LITERAL,
    ) -> None:
        self.operation = operation
        self.resource_type = resource_type
        self.name = name
        self.pattern_type = pattern_type
        self.op_bit = 1 << int(operation)

    def __repr__(self) -> str:
        return (
            f"Action({self.operation.name}, {self.resource_type.name}, {self.name!r}, "
            f"{self.pattern_type.name})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Action):
            return NotImplemented
        return (self.operation, self.resource_type, self.name, self.pattern_type) == (
            other.operation,
            other.resource_type,
            other.name,
            other.pattern_type,
        )

    def __hash__(self) -> int:
        return hash((int(self.operation), int(self.resource_type), self.name, int(self.pattern_type)))


# --- operation implication (StandardAuthorizerData.IMPLIES_DESCRIBE / _DESCRIBE_CONFIGS) ----

IMPLIES_DESCRIBE = frozenset(
    {
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    }
)
"""ALLOW of one of these grants DESCRIBE too.  DENY implies nothing."""
IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})
"""ALLOW of one of these grants DESCRIBE_CONFIGS too."""

ALL_OPERATIONS_MASK = (1 << (max(AclOperation) + 1)) - 1
"""Every operation bit, UNKNOWN included: an ALL ACL matches any requested operation."""


def _covered(operation: AclOperation, permission: AclPermissionType) -> int:
    if operation is AclOperation.ALL:
        return ALL_OPERATIONS_MASK
    mask = 1 << int(operation)
    if permission is AclPermissionType.ALLOW:
        if operation in IMPLIES_DESCRIBE:
            mask |= 1 << AclOperation.DESCRIBE
        if operation in IMPLIES_DESCRIBE_CONFIGS:
            mask |= 1 << AclOperation.DESCRIBE_CONFIGS
    return mask


COVERED: tuple[tuple[int, ...], ...] = tuple(
    tuple(_covered(op, perm) for op in AclOperation) for perm in AclPermissionType
)
"""``COVERED[permission code][operation code]``: :func:`covered_operations` as a table."""


def covered_operations(operation: AclOperation, permission: AclPermissionType) -> int:
    """The bit set of requested operations an ACL of ``operation``/``permission`` applies to.

    ALL covers every operation; an ALLOW of READ/WRITE/DELETE/ALTER also covers DESCRIBE
    and an ALLOW of ALTER_CONFIGS also covers DESCRIBE_CONFIGS.  Nothing else is implied:
    an ALLOW of READ does not cover an *action* of ALL (only an ALL ACL does), and a DENY
    covers its own operation only.
    """
    return COVERED[permission][operation]


def find_result(
    binding: AclBinding, principal: str, host: str, operation: AclOperation
) -> AuthorizationResult | None:
    """Does this one ACL apply to the request, and how (``StandardAuthorizerData.findResult``).

    The resource is assumed to match already.  ``principal`` is the ``Type:name`` text; the
    ACL applies when its principal is that text or ``User:*``, its host is ``*`` or the
    exact ``host`` text, and its operation covers ``operation``.  None when it does not apply.
    Permission types other than ALLOW count as DENY, as in Kafka.
    """
    acl_principal = binding.entry.principal
    if acl_principal != principal and acl_principal != WILDCARD_PRINCIPAL:
        return None
    acl_host = binding.entry.host
    if acl_host != WILDCARD_HOST and acl_host != host:
        return None
    permission = binding.entry.permission_type
    if not covered_operations(binding.entry.operation, permission) & (1 << int(operation)):
        return None
    return ALLOWED if permission is AclPermissionType.ALLOW else DENIED
