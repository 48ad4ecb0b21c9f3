"""ACL bindings and filters as JSON, both ways: the shape every ACL endpoint shares.

Field names follow KIP-290's change notification (``resourceType``, ``patternType``) and
KIP-140's describe filters.  The resource name is ``resourceName`` on the wire, as in the
authorize actions and Kafka's ``DescribeAcls`` (``ResourceName``), while change records and
:class:`store.acl.ResourcePattern` say ``name``: :data:`RESOURCE_NAME` is the one place the
two meet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from replicator.contract.fields import (
    ALL_OPS,
    ALL_PATTERNS,
    ALL_PERMS,
    ALL_TYPES,
    BadRequestError,
    E,
    enum_value,
    join,
    obj,
    optional_text,
    text,
)
from store.acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType

RESOURCE_NAME: Final = "resourceName"
"""The wire name of ``ResourcePattern.name`` (change records and the model say ``name``)."""


@dataclass(frozen=True, slots=True)
class InvalidItem:
    """A binding that cannot even be built (an ANY/MATCH value): its per-item error (KIP-140)."""

    message: str
    raw: dict[str, Any]


BINDING_KEYS = frozenset(
    {
        "resourceType",
        RESOURCE_NAME,
        "patternType",
        "principal",
        "host",
        "operation",
        "permissionType",
    }
)


def binding(value: Any, path: str) -> AclBinding | InvalidItem:
    """A binding to create.  Names Kafka knows but that only filters use (ANY, MATCH) make a
    per-item error, as ``KafkaAdminClient.createAcls`` fails that one binding (KIP-140)."""
    data = obj(value, path, BINDING_KEYS)
    resource_type = enum_value(
        ResourceType, data.get("resourceType"), f"{path}.resourceType", ALL_TYPES
    )
    pattern_type = enum_value(
        PatternType, data.get("patternType", "LITERAL"), f"{path}.patternType", ALL_PATTERNS
    )
    operation = enum_value(AclOperation, data.get("operation"), f"{path}.operation", ALL_OPS)
    permission = enum_value(
        AclPermissionType, data.get("permissionType", "ALLOW"), f"{path}.permissionType", ALL_PERMS
    )
    name = text(data, RESOURCE_NAME, path)
    principal = text(data, "principal", path)
    host = text(data, "host", path, default="*")
    for label, member in (
        ("Resource type", resource_type),
        ("Resource pattern type", pattern_type),
        ("Operation", operation),
        ("Permission type", permission),
    ):
        if member.name in ("ANY", "MATCH"):
            return InvalidItem(f"Invalid ACL creation: {label} is {member.name}", dict(data))
    return AclBinding.of(resource_type, name, pattern_type, principal, host, operation, permission)


def acl_filter(value: Any, path: str) -> AclBindingFilter:
    """A KIP-140 filter: a missing field or null matches anything; ``"*"`` is a literal name."""
    data = obj(value if value is not None else {}, path, BINDING_KEYS)

    def member(cls: type[E], key: str, allowed: frozenset[E], default: str) -> E:
        return enum_value(cls, data.get(key) or default, join(path, key), allowed)

    return AclBindingFilter.of(
        member(ResourceType, "resourceType", ALL_TYPES, "ANY"),
        optional_text(data, RESOURCE_NAME, path),
        member(PatternType, "patternType", ALL_PATTERNS, "ANY"),
        optional_text(data, "principal", path),
        optional_text(data, "host", path),
        member(AclOperation, "operation", ALL_OPS, "ANY"),
        member(AclPermissionType, "permissionType", ALL_PERMS, "ANY"),
    )


def binding_json(b: AclBinding) -> dict[str, str]:
    return {
        "resourceType": b.resource_type.name,
        RESOURCE_NAME: b.name,
        "patternType": b.pattern_type.name,
        "principal": b.principal,
        "host": b.host,
        "operation": b.operation.name,
        "permissionType": b.permission_type.name,
    }


def filter_json(f: AclBindingFilter) -> dict[str, str | None]:
    pf, ef = f.pattern_filter, f.entry_filter
    return {
        "resourceType": pf.resource_type.name,
        RESOURCE_NAME: pf.name,
        "patternType": pf.pattern_type.name,
        "principal": ef.principal,
        "host": ef.host,
        "operation": ef.operation.name,
        "permissionType": ef.permission_type.name,
    }


def binding_from_json(data: Mapping[str, Any]) -> AclBinding:
    """The inverse of :func:`binding_json` for answers we produced (clients, tests)."""
    item = binding(data, "binding")
    if isinstance(item, InvalidItem):
        raise BadRequestError(item.message)
    return item


