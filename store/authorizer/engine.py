"""The decision procedure: Kafka's ``StandardAuthorizerData.findAclRule``, written once.

Every decision is taken here, over the grant summaries of the patterns that apply to the
resource (:mod:`.grants`, found by :func:`~store.authorizer.applicable.applicable`), whoever
supplies them: the in-memory index, the replica's RocksDB view, the scanning reference view,
the history questions (through those views) and the access diff (over its regions).  The
rule order:

1. a principal listed in ``super.users`` is allowed, against any DENY;
2. of the ACLs that apply to the resource, those whose principal is the request's or
   ``User:*`` and whose host is the request's or ``*`` match; a matching DENY of an
   operation denies it (deny wins), else a matching ALLOW of it allows it (an ALLOW of
   READ/WRITE/DELETE/ALTER also allows DESCRIBE, an ALLOW of ALTER_CONFIGS also
   DESCRIBE_CONFIGS; ALL covers every operation: :data:`~store.authorizer.decision.COVERED`);
3. when no ACL at all (of any principal) applies to the resource,
   ``allow.everyone.if.no.acl.found`` decides; otherwise the operation is denied.

:func:`find_rule` is the procedure over any set of requested operations (one bit for a
request, every bit for the access diff); :func:`decide` answers a request's actions, each
with the ACL or rule that decided it (rule 1 is its caller's, once per request:
:func:`store.authorizer.rules.authorize`), :func:`allowed_operations` every operation of a
requester at once.  Pure, no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar

from store.acl import WILDCARD_HOST, WILDCARD_PRINCIPAL, ResourceType
from store.authorizer.config import AuthorizerConfig
from store.authorizer.decision import (
    ALL_OPERATIONS_MASK,
    ALLOWED,
    DENIED,
    RESOURCE_HAS_ACLS_DECISION,
    Action,
    Decision,
)
from store.authorizer.grants import PatternAcls
from store.principal import KafkaPrincipal


class GrantMasks(Protocol):
    """What the procedure reads of one (pattern, principal, host): the operations its ACLs
    allow and deny, as bits (:class:`~store.authorizer.grants.Grant`)."""

    @property
    def allow_mask(self) -> int: ...

    @property
    def deny_mask(self) -> int: ...


G = TypeVar("G", bound=GrantMasks)
G_co = TypeVar("G_co", bound=GrantMasks, covariant=True)


class PatternGrants(Protocol[G_co]):
    """The ACLs of one pattern (or of several, merged): ``grants[principal][host]``."""

    @property
    def grants(self) -> Mapping[str, Mapping[str, G_co]]: ...


class Requester:
    """The request's principal and host, reduced to the texts ACLs are compared with."""

    __slots__ = ("hosts", "principals", "text")

    def __init__(self, principal: KafkaPrincipal | str, host: str) -> None:
        parsed = KafkaPrincipal.parse(principal) if isinstance(principal, str) else principal
        self.text = str(parsed)
        # An ACL's principal is parsed at its first colon, so a principal whose *type* holds
        # a colon can never equal one: only User:* ACLs match it (as in Kafka).
        own = WILDCARD_PRINCIPAL if ":" in parsed.principal_type else self.text
        # acl_principals(own), acl_hosts(host), without the calls: once per request
        self.principals = (own,) if own == WILDCARD_PRINCIPAL else (own, WILDCARD_PRINCIPAL)
        self.hosts = (host,) if host == WILDCARD_HOST else (host, WILDCARD_HOST)


def find_rule(
    patterns: Sequence[PatternGrants[G]],
    principals: tuple[str, ...],
    hosts: tuple[str, ...],
    operations: int,
) -> tuple[int, G | None, G | None]:
    """Rule 2 for the requested ``operations`` (bits) over the ``patterns`` that apply.

    Returns the operations allowed, the first grant (in pattern, principal, host order) that
    allows one of them and the first that denies one.  Stops at the first DENY once every
    requested operation is denied (for one operation: at the first DENY of it).
    """
    deny = 0
    unallowed = operations  # the requested operations no matching ALLOW covers yet
    allowing: G | None = None
    denying: G | None = None
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
                if grant.deny_mask & operations:
                    deny |= grant.deny_mask
                    if denying is None:
                        denying = grant
                        if not operations & ~deny:
                            return 0, allowing, grant
                if unallowed and grant.allow_mask & unallowed:
                    unallowed &= ~grant.allow_mask
                    if allowing is None:
                        allowing = grant
    return operations & ~unallowed & ~deny, allowing, denying


def decide(
    applicable_acls: Callable[[ResourceType, str], Sequence[PatternAcls]],
    requester: Requester,
    actions: Sequence[Action],
    no_acl: Decision,
) -> list[Decision]:
    """Rules 2 and 3 for each action (rule 1, super users, is the caller's, once per
    request): ``no_acl`` when no pattern applies to its resource, else the decision of the
    ACL that decided it, else RESOURCE_HAS_ACLS.  ``applicable_acls`` is the view's
    (:meth:`~store.authorizer.view.DecisionView.applicable_acls`)."""
    principals, hosts = requester.principals, requester.hosts
    decisions: list[Decision] = []
    for action in actions:
        patterns = applicable_acls(action.resource_type, action.name)
        if not patterns:
            decisions.append(no_acl)
            continue
        bit = action.op_bit
        allowed, allowing, denying = find_rule(patterns, principals, hosts, bit)
        if allowed and allowing is not None:
            decisions.append(allowing.decision_for(bit, ALLOWED))
        elif denying is not None:
            decisions.append(denying.decision_for(bit, DENIED))
        else:
            decisions.append(RESOURCE_HAS_ACLS_DECISION)
    return decisions


@functools.lru_cache(maxsize=4096)
def requester(principal: KafkaPrincipal | str, host: str) -> Requester:
    """The :class:`Requester` of ``principal`` from ``host``, built once for the requests that
    repeat them (a broker's clients do): parsing and comparing texts is most of what a
    decision over the in-memory index costs besides its few lookups."""
    return Requester(principal, host)


def acl_principals(principal: str) -> tuple[str, ...]:
    """The ACL principals that match a request of ``principal`` (its text): itself, ``User:*``."""
    return (principal,) if principal == WILDCARD_PRINCIPAL else (principal, WILDCARD_PRINCIPAL)


def acl_hosts(host: str) -> tuple[str, ...]:
    """The ACL hosts that match a request from ``host`` (its text): itself, ``*``."""
    return (host,) if host == WILDCARD_HOST else (host, WILDCARD_HOST)


def allowed_operations(
    patterns: Sequence[PatternGrants[G]],
    principals: tuple[str, ...],
    hosts: tuple[str, ...],
    config: AuthorizerConfig,
) -> int:
    """Every operation (bits) a requester is allowed on a resource the ``patterns`` apply
    to: rules 1, 2 and 3 at once.  ``principals`` and ``hosts`` are the request's as
    :func:`acl_principals` and :func:`acl_hosts` give them (the request's own text first)."""
    if principals[0] in config.super_users:
        return ALL_OPERATIONS_MASK
    if not patterns:
        return ALL_OPERATIONS_MASK if config.allow_everyone_if_no_acl_found else 0
    return find_rule(patterns, principals, hosts, ALL_OPERATIONS_MASK)[0]
