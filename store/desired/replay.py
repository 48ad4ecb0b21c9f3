"""Recently seen requests replayed against a plan: which would be answered otherwise.

Each request seen in the audit trail (principal, host, operation, resource, how often, the
answer audited) is decided with Kafka's decision rules twice: over the live bindings and over
the bindings the plan leaves; a request whose decision differs flips.  Deciding "now" rather
than trusting the audited answer keeps flips caused by changes since the audit out of the
plan's account.  Pure: values in, rows out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from store.acl import AclBinding, AclOperation, ResourceType
from store.authorizer import Action, AuthorizerConfig, InMemoryAclIndex, authorize


@dataclass(frozen=True, slots=True)
class SeenRequest:
    """One distinct request of the audit trail in the window: how often it was audited, with
    which answer, and the last time."""

    principal: str
    host: str
    operation: AclOperation
    resource_type: ResourceType
    resource_name: str
    audited: str
    count: int
    last_seen_ms: int


@dataclass(frozen=True, slots=True)
class Flip:
    request: SeenRequest
    now: str
    planned: str


def replay(
    seen: Iterable[SeenRequest], live: Iterable[AclBinding], planned: Iterable[AclBinding],
    config: AuthorizerConfig,
) -> list[Flip]:  # fmt: skip
    """The seen requests whose decision the plan changes, most often seen first."""
    now_view, planned_view = InMemoryAclIndex(live), InMemoryAclIndex(planned)
    flips = []
    for r in seen:
        action = [Action(r.operation, r.resource_type, r.resource_name)]
        before = authorize(now_view, config, r.principal, r.host, action)[0].result.value
        after = authorize(planned_view, config, r.principal, r.host, action)[0].result.value
        if before != after:
            flips.append(Flip(r, before, after))
    return sorted(flips, key=lambda f: (-f.request.count, f.request.principal, f.request.resource_name))
