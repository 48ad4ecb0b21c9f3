"""A desired-state scope on the wire (:class:`store.desired.Scope`): what an apply owns.

``/v1/acls/alter`` takes one with ``ifScopeUnchangedSince``: the node refuses the write when a
binding in the scope changed after that offset (optimistic concurrency on the log)."""

from __future__ import annotations

from typing import Any, Final

from replicator.contract.declare import Message, message, shape, wire
from replicator.contract.fields import SPECIFIC_TYPES, BadRequestError
from replicator.contract.kinds import FLAG, PRINCIPAL, TEXT, Array, Converted, KafkaEnum
from store.acl import ResourceType
from store.desired.scope import ResourcePrefix, Scope


@message("ResourcePrefix", closed=True)
class ResourcePrefixJson(Message):
    """The bindings of a resource type whose pattern name starts with ``prefix``."""

    resource_type: ResourceType = wire(KafkaEnum(ResourceType, SPECIFIC_TYPES))
    prefix: str = wire(TEXT)


@message(
    "Scope", closed=True,
    description="A binding is in the scope when its principal is listed, or its resource type "
    "and pattern name match a resource prefix, or all is true.",
)  # fmt: skip
class ScopeJson(Message):
    everything: bool = wire(FLAG, default=False, name="all")
    principals: list[str] = wire(Array(PRINCIPAL), default_factory=list)
    resources: list[ResourcePrefixJson] = wire(Array(shape(ResourcePrefixJson)), default_factory=list)

    def check(self, path: str) -> None:
        if not (self.everything or self.principals or self.resources):
            raise BadRequestError(f"{path or 'scope'}: owns nothing; give all, principals or resources")


def _scope(item: ScopeJson, raw: Any) -> Scope:
    return Scope(
        everything=item.everything, principals=frozenset(item.principals),
        resource_prefixes=frozenset(ResourcePrefix(r.resource_type, r.prefix) for r in item.resources),
    )  # fmt: skip


def _scope_json(scope: Scope) -> ScopeJson:
    return ScopeJson(
        everything=scope.everything, principals=sorted(scope.principals),
        resources=[ResourcePrefixJson(resource_type=p.resource_type, prefix=p.prefix)
                   for p in sorted(scope.resource_prefixes)],
    )  # fmt: skip


SCOPE: Final = Converted(shape(ScopeJson), _scope, _scope_json)


def scope_json(scope: Scope) -> dict[str, Any]:
    """A scope as its JSON object (the ``Scope`` schema)."""
    return _scope_json(scope).to_json()


def scope_of_json(value: Any, path: str = "scope") -> Scope:
    """A ``Scope`` JSON object read and checked (BadRequestError naming the fix)."""
    return _scope(shape(ScopeJson).parse(value), value)
