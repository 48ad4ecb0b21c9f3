"""kafka-acls.sh's convenience roles in a desired-state file: ``producer``, ``consumer`` and
``idempotent``, expanded exactly as ``AclCommand`` expands ``--producer``, ``--consumer`` and
``--idempotent``.

The operations are read off the store's own expansions (:func:`store.kafka_apis.producer_bindings`,
:func:`store.kafka_apis.consumer_bindings`), as ``aclstore acls`` reads them, so the two can
never disagree: ``producer`` is WRITE, DESCRIBE, CREATE on each topic and WRITE, DESCRIBE on each
transactional id; ``idempotent`` (with ``producer`` only) IDEMPOTENT_WRITE on the LITERAL
``kafka-cluster``; ``consumer`` READ, DESCRIBE on each topic and READ on each group.  Roles
grant (ALLOW) only, as kafka-acls.sh's roles take ``--allow-principal`` only.  Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from store.acl import AclBinding, AclOperation, ResourceType
from store.kafka_apis import consumer_bindings, producer_bindings

ROLES: Final = ("producer", "consumer", "idempotent")


def _operations(bindings: Iterable[AclBinding]) -> dict[ResourceType, tuple[AclOperation, ...]]:
    ops: dict[ResourceType, dict[AclOperation, None]] = {}
    for b in bindings:
        ops.setdefault(b.resource_type, {})[b.operation] = None
    return {rt: tuple(o) for rt, o in ops.items()}


_PRODUCER: Final = _operations(
    producer_bindings(principal="User:role", topic="t", transactional_id="tx", idempotent=False)
)
_IDEMPOTENT: Final = {
    rt: ops
    for rt, ops in _operations(producer_bindings(principal="User:role", topic="t", idempotent=True)).items()
    if rt not in _PRODUCER
}
_CONSUMER: Final = _operations(consumer_bindings(principal="User:role", topic="t", group="g"))

ROLE_OPERATIONS: Final[dict[str, dict[ResourceType, tuple[AclOperation, ...]]]] = {
    "producer": _PRODUCER, "consumer": _CONSUMER, "idempotent": _IDEMPOTENT,
}  # fmt: skip
"""Per role, the operations it grants on each resource type it applies to."""


def role_problem(roles: Iterable[str], resource_types: Iterable[ResourceType]) -> str | None:
    """Why kafka-acls.sh would refuse these roles over resources of these types (None: fine),
    with its rule and the fix."""
    given, types = set(roles), set(resource_types)
    if "idempotent" in given and "producer" not in given:
        return "role idempotent goes with producer only (as --idempotent with --producer); add producer"
    if "producer" in given and ResourceType.TOPIC not in types:
        return "role producer needs a TOPIC resource (as --producer needs --topic); add one"
    if "consumer" in given and not {ResourceType.TOPIC, ResourceType.GROUP} <= types:
        return (
            "role consumer needs a TOPIC and a GROUP resource (as --consumer needs --topic and "
            "--group); add the missing one"
        )
    usable = {rt for role in given if role != "idempotent" for rt in ROLE_OPERATIONS[role]}
    extra = sorted(t.name for t in types - usable)
    if extra:
        return (
            f"role(s) {', '.join(sorted(given))} grant nothing on {', '.join(extra)} resources "
            f"(they apply to {', '.join(sorted(t.name for t in usable))}); list those under "
            "operations in an entry of their own"
            + ("; idempotent adds the CLUSTER binding itself" if ResourceType.CLUSTER in types else "")
        )
    return None


def role_operations(roles: Iterable[str], resource_type: ResourceType) -> tuple[AclOperation, ...]:
    """The operations ``roles`` grant on a resource of ``resource_type``, in the roles' order."""
    ops: dict[AclOperation, None] = {}
    for role in roles:
        if role != "idempotent":
            ops.update(dict.fromkeys(ROLE_OPERATIONS[role].get(resource_type, ())))
    return tuple(ops)
