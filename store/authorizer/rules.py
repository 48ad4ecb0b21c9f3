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

We look up the exact name, ``*`` and each prefix of the name instead
(:mod:`store.authorizer.applicable`), which gives the answer the rule above intends in both
cases.  Steps 4 and 5 are the one decision procedure (:mod:`store.authorizer.engine`), over
the grant summaries the view supplies (:class:`~store.authorizer.view.DecisionView`).

``authorize_by_resource_type`` is the ``Authorizer.authorizeByResourceType`` default method
(KIP-679), answered from the principal's own ACLs instead of a scan of all of them.
"""

from __future__ import annotations

import bisect
import functools
import sys
from collections.abc import Sequence
from typing import NoReturn

from store.acl import WILDCARD_RESOURCE, AclBinding, AclOperation, PatternType, ResourceType
from store.authorizer.config import AuthorizerConfig
from store.authorizer.decision import (
    ALLOWED,
    DEFAULT_ALLOW_DECISION,
    DEFAULT_DENY_DECISION,
    DENIED,
    NO_UNDOMINATED_ALLOW_DECISION,
    SUPER_USER_DECISION,
    Action,
    Decision,
    DecisionRule,
    InvalidActionError,
)
from store.authorizer.engine import decide, requester
from store.authorizer.principal_acls import TypeBucket
from store.authorizer.view import DecisionView
from store.errors import AuthorizerNotReadyError
from store.principal import KafkaPrincipal

PROBE_RESOURCE_NAME = "hardcode"
"""The resource name ``Authorizer.authorizeByResourceType`` probes with ``authorize`` first."""

_LITERAL = PatternType.LITERAL
_NOT_READY = (
    "the authorizer has not loaded its ACLs yet (AuthorizerNotReadyException): only super.users "
    "are served until the replica has caught up; retry once it reports ready"
)


def _refuse_non_literal(action: Action) -> NoReturn:
    raise InvalidActionError(
        f"Only literal resources are supported. Got: {action.pattern_type.name} "
        f"(authorize {action.resource_type.name} {action.name!r} as a LITERAL name)"
    )


def authorize(
    view: DecisionView,
    config: AuthorizerConfig,
    principal: KafkaPrincipal | str,
    host: str,
    actions: Sequence[Action],
    *,
    loading_complete: bool = True,
) -> list[Decision]:
    """Decide each action against one snapshot of ``view`` (``Authorizer.authorize``).

    ``host`` is the client address as text, compared exactly (Kafka compares
    ``InetAddress.getHostAddress()``; names are never resolved).  Each action is decided by
    the one procedure (:func:`store.authorizer.engine.decide`) over the grant summaries of
    the patterns the view finds applicable.
    """
    for action in actions:
        if action.pattern_type is not _LITERAL:
            _refuse_non_literal(action)
    asking = requester(principal, host)
    if asking.text in config.super_users:
        return [SUPER_USER_DECISION] * len(actions)
    if not loading_complete:
        raise AuthorizerNotReadyError(_NOT_READY)
    no_acl = DEFAULT_ALLOW_DECISION if config.allow_everyone_if_no_acl_found else DEFAULT_DENY_DECISION
    of_asking = functools.partial(view.applicable_acls_of, asking.principals)
    return decide(of_asking, asking, actions, no_acl)


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
    view: DecisionView,
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
    asking = requester(principal, host)
    ops = tuple(dict.fromkeys((int(operation), int(AclOperation.ALL))))
    buckets = [
        bucket
        for p in asking.principals
        if (acls := view.principal_acls(resource_type, p)) is not None
        for h in asking.hosts
        for op in ops
        if (bucket := acls.buckets.get((h, op))) is not None
    ]
    return _by_type_from_buckets(buckets)


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
