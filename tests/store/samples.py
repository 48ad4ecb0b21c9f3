"""Sample bindings and events for the store's codec and event tests (``tests.store.samples``)."""

from __future__ import annotations

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.events import AclCreated

SAMPLE_TIME_MS = 1_700_000_000_000


def binding(
    rt: ResourceType = ResourceType.TOPIC,
    name: str = "orders",
    pt: PatternType = PatternType.LITERAL,
    op: AclOperation = AclOperation.READ,
    perm: AclPermissionType = AclPermissionType.ALLOW,
) -> AclBinding:
    """``User:alice`` from any host, READ ALLOW on LITERAL TOPIC ``orders`` unless told."""
    return AclBinding.of(rt, name, pt, "User:alice", "*", op, perm)


def created(b: AclBinding, **kw: int) -> AclCreated:
    """``b`` created by ``User:admin`` in request ``req-1`` at :data:`SAMPLE_TIME_MS`."""
    return AclCreated(binding=b, actor="User:admin", request_id="req-1", time_ms=SAMPLE_TIME_MS, **kw)
