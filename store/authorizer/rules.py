"""The decision rules: Kafka KRaft ``StandardAuthorizer`` semantics, exactly.

``authorize`` follows ``StandardAuthorizerData.authorize``/``findAclRule``:

1. a non-LITERAL action is refused (``IllegalArgumentException`` in Kafka);
2. a principal listed in ``super.users`` is allowed, even before the ACLs are loaded and
   against any DENY;
3. before the ACLs are loaded everyone else fails (``AuthorizerNotReadyException``);
4. the ACLs that apply to the resource are the LITERAL one of the exact name, the LITERAL
   ``*`` and every PREFIXED one whose name is a prefix of the resource name; of those, an
   ACL matches the request when its principal is the request's or ``User:*`` (of any
   principal type), its host is ``*`` or the exact address text, and its operation covers
   the requested one (ALL covers all; an ALLOW of READ/WRITE/DELETE/ALTER covers DESCRIBE,
   an ALLOW of ALTER_CONFIGS covers DESCRIBE_CONFIGS; a DENY covers only its operation);
5. any matching DENY denies; else any matching ALLOW allows; else, when no ACL at all (of
   any principal) applies to the resource, ``allow.everyone.if.no.acl.found`` decides;
   otherwise denied.

Deliberate differences: Kafka finds the applicable ACLs with a range scan over names sorted
in reverse, which goes wrong in two places (both shown by ``tests/store/test_differential.py``
against Kafka 4.3.1):

* it loops forever or throws ``StringIndexOutOfBoundsException`` when an ACL name that sorts
  below ``*`` (GROUP PREFIXED ``!b`` against resource ``!abc``, say) is reached while
  scanning the wildcard section;
* it takes the LITERAL ``*`` ACL for a literal prefix of a resource name that starts with
  ``*`` (``*x``, possible for groups and transactional ids) and skips it, so the wildcard
  does not apply there.

We look up the exact name, ``*`` and each prefix of the name instead, which gives the answer
the rule above intends in both cases.

``authorize_by_resource_type`` is the ``Authorizer.authorizeByResourceType`` default method
(KIP-679), answered from the principal's own ACLs instead of a scan of all of them.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable, Sequence

from store.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.authorizer.config import AuthorizerConfig
from store.authorizer.decision import (
    ALLOWED,
    DEFAULT_ALLOW_DECISION,
    DEFAULT_DENY_DECISION,
    DENIED,
    NO_UNDOMINATED_ALLOW_DECISION,
    RESOURCE_HAS_ACLS_DECISION,
    SUPER_USER_DECISION,
    Action,
    Decision,
    DecisionRule,
    InvalidActionError,
    find_result,
)
from store.authorizer.memory_index import AclTables, PatternAcls, TypeBucket
from store.authorizer.view import AclView
from store.errors import AuthorizerNotReadyError
from store.principal import KafkaPrincipal

PROBE_RESOURCE_NAME = "hardcode"
"""The resource name ``Authorizer.authorizeByResourceType`` probes with ``authorize`` first."""

_LITERAL = PatternType.LITERAL
_NOT_READY = (
    "the authorizer has not loaded its ACLs yet (AuthorizerNotReadyException): only super.users "
    "are served until the replica has caught up; retry once it reports ready"
)


class _Requester:
    """The request's principal and host, reduced to the texts ACLs are compared with."""

    __slots__ = ("acl_principal", "hosts", "principals", "text")

    def __init__(self, principal: KafkaPrincipal | str, host: str) -> None:
        parsed = KafkaPrincipal.parse(principal) if isinstance(principal, str) else principal
        self.text = str(parsed)
        # An ACL's principal is parsed at its first colon, so a principal whose *type* holds
        # a colon can never equal one: only User:* ACLs match it (as in Kafka).
        own = WILDCARD_PRINCIPAL if ":" in parsed.principal_type else self.text
        self.acl_principal = own
        self.principals = (own,) if own == WILDCARD_PRINCIPAL else (own, WILDCARD_PRINCIPAL)
        self.hosts = (host,) if host == WILDCARD_HOST else (host, WILDCARD_HOST)


def _check_literal(action: Action) -> None:
    if action.pattern_type is not _LITERAL:
        raise InvalidActionError(
            f"Only literal resources are supported. Got: {action.pattern_type.name} "
            f"(authorize {action.resource_type.name} {action.name!r} as a LITERAL name)"
        )


def authorize(
    view: AclView,
    config: AuthorizerConfig,
    principal: KafkaPrincipal | str,
    host: str,
    actions: Sequence[Action],
    *,
    loading_complete: bool = True,
) -> list[Decision]:
    """Decide each action against one snapshot of ``view`` (``Authorizer.authorize``).

    ``host`` is the client address as text, compared exactly (Kafka compares
    ``InetAddress.getHostAddress()``; names are never resolved).
    """
    for action in actions:
        _check_literal(action)
    requester = _Requester(principal, host)
    if requester.text in config.super_users:
        return [SUPER_USER_DECISION] * len(actions)
    if not loading_complete:
        raise AuthorizerNotReadyError(_NOT_READY)
    default = DEFAULT_ALLOW_DECISION if config.allow_everyone_if_no_acl_found else DEFAULT_DENY_DECISION
    indexed = view.indexed()
    if indexed is not None:
        return _authorize_indexed(indexed.tables, requester, actions, default)
    return [_authorize_generic(view, requester, host, action, default) for action in actions]


def _authorize_indexed(
    tables: AclTables, requester: _Requester, actions: Sequence[Action], default: Decision
) -> list[Decision]:
    """The fast path: a few dict lookups per action, no allocation beyond the result list."""
    literal, prefixed, lengths = tables.literal, tables.prefixed, tables.prefix_lengths
    principals, hosts = requester.principals, requester.hosts
    decisions: list[Decision] = []
    for action in actions:
        rt, name, bit = action.resource_type, action.name, action.op_bit
        patterns: list[PatternAcls] = []
        found = literal[rt].get(name)
        if found is not None:
            patterns.append(found)
        by_prefix = prefixed[rt]
        if by_prefix:
            for length in lengths[rt]:
                if length > len(name):
                    break
                found = by_prefix.get(name[:length])
                if found is not None:
                    patterns.append(found)
        if name != WILDCARD_RESOURCE:
            found = literal[rt].get(WILDCARD_RESOURCE)
            if found is not None:
                patterns.append(found)
        if not patterns:
            decisions.append(default)
        else:
            decisions.append(_decide(patterns, principals, hosts, bit))
    return decisions


def _decide(
    patterns: list[PatternAcls], principals: tuple[str, ...], hosts: tuple[str, ...], bit: int
) -> Decision:
    allow = None
    for pattern in patterns:
        grants = pattern.grants
        for principal in principals:
            by_host = grants.get(principal)
            if by_host is None:
                continue
            for host in hosts:
                grant = by_host.get(host)
                if grant is None:
                    continue
                if grant.deny_mask & bit:
                    return grant.decision_for(bit, DENIED)
                if allow is None and grant.allow_mask & bit:
                    allow = grant
    if allow is not None:
        return allow.decision_for(bit, ALLOWED)
    return RESOURCE_HAS_ACLS_DECISION


def _authorize_generic(
    view: AclView, requester: _Requester, host: str, action: Action, default: Decision
) -> Decision:
    """Any AclView: apply ``find_result`` to every binding that applies to the resource."""
    has_acls = False
    allow: AclBinding | None = None
    for binding in view.matching_acls(action.resource_type, action.name):
        has_acls = True
        result = find_result(binding, requester.acl_principal, host, action.operation)
        if result is DENIED:
            return Decision(DENIED, DecisionRule.MATCHING_ACL, binding)
        if result is ALLOWED and allow is None:
            allow = binding
    if allow is not None:
        return Decision(ALLOWED, DecisionRule.MATCHING_ACL, allow)
    return RESOURCE_HAS_ACLS_DECISION if has_acls else default


# --- authorizeByResourceType (KIP-679) ----------------------------------------------------


def check_by_resource_type_args(operation: AclOperation, resource_type: ResourceType) -> None:
    """``SecurityUtils.authorizeByResourceTypeCheckArgs``, with Kafka's messages."""
    if resource_type is ResourceType.ANY:
        raise InvalidActionError("Must specify a non-filter resource type for authorizeByResourceType")
    if resource_type is ResourceType.UNKNOWN:
        raise InvalidActionError("Unknown resource type")
    if operation is AclOperation.ANY:
        raise InvalidActionError("Must specify a non-filter operation type for authorizeByResourceType")
    if operation is AclOperation.UNKNOWN:
        raise InvalidActionError("Unknown operation type")


def authorize_by_resource_type(
    view: AclView,
    config: AuthorizerConfig,
    principal: KafkaPrincipal | str,
    host: str,
    operation: AclOperation,
    resource_type: ResourceType,
    *,
    loading_complete: bool = True,
) -> Decision:
    """May ``principal`` do ``operation`` on at least one resource of ``resource_type``?

    Exactly Kafka's ``Authorizer.authorizeByResourceType`` default method:

    1. argument checks; 2. ``authorize`` of the resource named ``"hardcode"`` (so super users
    pass, a not-ready authorizer fails, and ACLs or the no-ACL default that apply to that
    name count); 3. over the ACLs of this type whose principal is the request's or
    ``User:*``, whose host is the request's or ``*`` and whose operation is the requested
    one or ALL (no implication here): a LITERAL ``*`` DENY denies; a LITERAL ``*`` ALLOW
    allows; else some ALLOW must not be dominated: a LITERAL ALLOW is dominated by a LITERAL
    DENY of the same name, and any ALLOW by a PREFIXED DENY whose (non-empty) name is a
    prefix of its name.  Answered from the principal's own ACLs, not a scan of all ACLs.
    """
    check_by_resource_type_args(operation, resource_type)
    probe = authorize(
        view,
        config,
        principal,
        host,
        [Action(operation, resource_type, PROBE_RESOURCE_NAME)],
        loading_complete=loading_complete,
    )[0]
    if probe.allowed:
        return probe
    requester = _Requester(principal, host)
    ops = tuple(dict.fromkeys((int(operation), int(AclOperation.ALL))))
    indexed = view.indexed()
    if indexed is not None:
        buckets = [
            bucket
            for p in requester.principals
            if (acls := indexed.principal_acls(resource_type, p)) is not None
            for h in requester.hosts
            for op in ops
            if (bucket := acls.buckets.get((h, op))) is not None
        ]
        return _by_type_from_buckets(buckets)
    return _by_type_generic(view, requester, resource_type, operation)


def _dominated(name: str, deny_prefixed: list[dict[str, AclBinding]]) -> bool:
    return _covering_prefix(name, deny_prefixed) is not None


def _covering_prefix(name: str, deny_prefixed: list[dict[str, AclBinding]]) -> str | None:
    """The shortest PREFIXED DENY name that is a prefix of ``name``, or None.

    Kafka grows the prefix one char at a time from length 1: an empty PREFIXED DENY never
    dominates, and the whole name counts as a prefix of itself.
    """
    for end in range(1, len(name) + 1):
        prefix = name[:end]
        for denies in deny_prefixed:
            if prefix in denies:
                return prefix
    return None


def _after_prefix_range(names: list[str], prefix: str, start: int) -> int:
    """The index after the run of sorted ``names`` (from ``start``) that begin with ``prefix``."""
    last = ord(prefix[-1])
    if last < sys.maxunicode:
        return bisect.bisect_left(names, prefix[:-1] + chr(last + 1), start)
    index = start
    while index < len(names) and names[index].startswith(prefix):
        index += 1
    return index


def _first_undominated(
    names: list[str],
    deny_literal: list[dict[str, AclBinding]],
    deny_prefixed: list[dict[str, AclBinding]],
) -> str | None:
    """The first of the sorted ALLOW ``names`` no DENY dominates; skips dominated ranges."""
    index = 0
    while index < len(names):
        name = names[index]
        covering = _covering_prefix(name, deny_prefixed) if deny_prefixed else None
        if covering is not None:
            index = _after_prefix_range(names, covering, index)
        elif any(name in denies for denies in deny_literal):
            index += 1
        else:
            return name
    return None


def _by_type_from_buckets(buckets: list[TypeBucket]) -> Decision:
    for bucket in buckets:
        wildcard_deny = bucket.deny_literal.get(WILDCARD_RESOURCE)
        if wildcard_deny is not None:
            return Decision(DENIED, DecisionRule.MATCHING_ACL, wildcard_deny)
    for bucket in buckets:
        wildcard_allow = bucket.allow_literal.get(WILDCARD_RESOURCE)
        if wildcard_allow is not None:
            return Decision(ALLOWED, DecisionRule.MATCHING_ACL, wildcard_allow)
    deny_literal = [b.deny_literal for b in buckets if b.deny_literal]
    deny_prefixed = [b.deny_prefixed for b in buckets if b.deny_prefixed]
    for bucket in buckets:
        if bucket.allow_literal:
            name = _first_undominated(bucket.sorted_allow_literal(), deny_literal, deny_prefixed)
            if name is not None:
                return Decision(ALLOWED, DecisionRule.MATCHING_ACL, bucket.allow_literal[name])
        if bucket.allow_prefixed:
            # a LITERAL DENY never dominates a PREFIXED ALLOW
            name = _first_undominated(bucket.sorted_allow_prefixed(), [], deny_prefixed)
            if name is not None:
                return Decision(ALLOWED, DecisionRule.MATCHING_ACL, bucket.allow_prefixed[name])
    return NO_UNDOMINATED_ALLOW_DECISION


def _by_type_generic(
    view: AclView, requester: _Requester, resource_type: ResourceType, operation: AclOperation
) -> Decision:
    """The same rule over any AclView, reading ``acls_for_principal``."""
    bindings: Iterable[AclBinding] = (
        b for p in requester.principals for b in view.acls_for_principal(resource_type, p)
    )
    deny_literal: dict[str, AclBinding] = {}
    deny_prefixed: dict[str, AclBinding] = {}
    allows: list[AclBinding] = []
    wildcard_allow: AclBinding | None = None
    for binding in bindings:
        if binding.host not in requester.hosts:
            continue
        if binding.operation is not operation and binding.operation is not AclOperation.ALL:
            continue
        literal = binding.pattern_type is PatternType.LITERAL
        if not literal and binding.pattern_type is not PatternType.PREFIXED:
            continue
        if binding.permission_type is AclPermissionType.DENY:
            if literal and binding.name == WILDCARD_RESOURCE:
                return Decision(DENIED, DecisionRule.MATCHING_ACL, binding)
            (deny_literal if literal else deny_prefixed)[binding.name] = binding
        elif binding.permission_type is AclPermissionType.ALLOW:
            if literal and binding.name == WILDCARD_RESOURCE:
                wildcard_allow = wildcard_allow or binding
            else:
                allows.append(binding)
    if wildcard_allow is not None:
        return Decision(ALLOWED, DecisionRule.MATCHING_ACL, wildcard_allow)
    prefixed = [deny_prefixed] if deny_prefixed else []
    for binding in allows:
        if binding.pattern_type is PatternType.LITERAL and binding.name in deny_literal:
            continue
        if not _dominated(binding.name, prefixed):
            return Decision(ALLOWED, DecisionRule.MATCHING_ACL, binding)
    return NO_UNDOMINATED_ALLOW_DECISION
