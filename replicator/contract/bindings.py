"""ACL bindings and filters on the wire: the shape every ACL endpoint shares.

Field names follow KIP-290's change notification (``resourceType``, ``patternType``) and
KIP-140's describe filters.  The resource name is ``resourceName`` on the wire, as in the
authorize actions and Kafka's ``DescribeAcls`` (``ResourceName``), while change records and
:class:`store.acl.ResourcePattern` say ``name``: :data:`RESOURCE_NAME` is the one place the
two meet.

:class:`BindingJson` and :class:`FilterJson` declare the two shapes; :data:`BINDING` and
:data:`FILTER` read them into the store's :class:`~store.acl.AclBinding` and
:class:`~store.acl.AclBindingFilter` and write those back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from replicator.contract.declare import Message, message, shape, wire
from replicator.contract.fields import (
    ALL_OPS,
    ALL_PATTERNS,
    ALL_PERMS,
    ALL_TYPES,
    BadRequestError,
)
from replicator.contract.kinds import NULLABLE_TEXT, TEXT, Converted, KafkaEnum
from store.acl import (
    ANY_FILTER,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

RESOURCE_NAME: Final = "resourceName"
"""The wire name of ``ResourcePattern.name`` (change records and the model say ``name``)."""


@dataclass(frozen=True, slots=True)
class InvalidItem:
    """A binding that cannot even be built (an ANY/MATCH value): its per-item error (KIP-140)."""

    message: str
    raw: dict[str, Any]


_ENUMS_FIRST: Final = ("resource_type", "pattern_type", "operation", "permission_type")


@message("AclBinding", closed=True, read_first=_ENUMS_FIRST)
class BindingJson(Message):
    """An ACL binding as the API writes it (``AclBinding``: a pattern and an entry).  Its
    enum fields are read first: their errors name what a binding must have."""

    resource_type: ResourceType = wire(KafkaEnum(ResourceType, ALL_TYPES))
    resource_name: str = wire(TEXT, name=RESOURCE_NAME)
    pattern_type: PatternType = wire(
        KafkaEnum(PatternType, ALL_PATTERNS), default=PatternType.LITERAL
    )
    principal: str = wire(TEXT, example="User:bob")
    host: str = wire(TEXT, default="*")
    operation: AclOperation = wire(KafkaEnum(AclOperation, ALL_OPS))
    permission_type: AclPermissionType = wire(
        KafkaEnum(AclPermissionType, ALL_PERMS), default=AclPermissionType.ALLOW
    )


_FILTER_TEXT: Final = (
    "KIP-140 filter: a missing or null field matches anything; '*' is a literal name. "
    "patternType MATCH finds every pattern that applies to the name."
)


@message("AclBindingFilter", closed=True, description=_FILTER_TEXT)
class FilterJson(Message):
    """An ACL binding filter: each field absent or null matches anything (ANY)."""

    resource_type: ResourceType = wire(
        KafkaEnum(ResourceType, ALL_TYPES, falsy=ResourceType.ANY), default=ResourceType.ANY,
        null_is_absent=True,
    )  # fmt: skip
    resource_name: str | None = wire(NULLABLE_TEXT, default=None, name=RESOURCE_NAME)
    pattern_type: PatternType = wire(
        KafkaEnum(PatternType, ALL_PATTERNS, falsy=PatternType.ANY), default=PatternType.ANY,
        null_is_absent=True,
    )  # fmt: skip
    principal: str | None = wire(NULLABLE_TEXT, default=None)
    host: str | None = wire(NULLABLE_TEXT, default=None)
    operation: AclOperation = wire(
        KafkaEnum(AclOperation, ALL_OPS, falsy=AclOperation.ANY), default=AclOperation.ANY,
        null_is_absent=True,
    )  # fmt: skip
    permission_type: AclPermissionType = wire(
        KafkaEnum(AclPermissionType, ALL_PERMS, falsy=AclPermissionType.ANY),
        default=AclPermissionType.ANY, null_is_absent=True,
    )  # fmt: skip


def _binding(item: BindingJson, raw: Any) -> AclBinding | InvalidItem:
    """Names Kafka knows but that only filters use (ANY, MATCH) make a per-item error, as
    ``KafkaAdminClient.createAcls`` fails that one binding (KIP-140)."""
    for label, member in (
        ("Resource type", item.resource_type),
        ("Resource pattern type", item.pattern_type),
        ("Operation", item.operation),
        ("Permission type", item.permission_type),
    ):
        if member.name in ("ANY", "MATCH"):
            return InvalidItem(f"Invalid ACL creation: {label} is {member.name}", dict(raw))
    return AclBinding.of(
        item.resource_type, item.resource_name, item.pattern_type, item.principal, item.host,
        item.operation, item.permission_type,
    )  # fmt: skip


def _binding_json(b: AclBinding | InvalidItem) -> BindingJson | dict[str, Any]:
    if isinstance(b, InvalidItem):
        return b.raw  # echoed as the caller sent it
    return BindingJson(
        resource_type=b.resource_type, resource_name=b.name, pattern_type=b.pattern_type,
        principal=b.principal, host=b.host, operation=b.operation,
        permission_type=b.permission_type,
    )  # fmt: skip


def _filter(item: FilterJson, raw: Any) -> AclBindingFilter:
    return AclBindingFilter.of(
        item.resource_type, item.resource_name, item.pattern_type, item.principal, item.host,
        item.operation, item.permission_type,
    )  # fmt: skip


def _filter_json(f: AclBindingFilter) -> FilterJson:
    pf, ef = f.pattern_filter, f.entry_filter
    return FilterJson(
        resource_type=pf.resource_type, resource_name=pf.name, pattern_type=pf.pattern_type,
        principal=ef.principal, host=ef.host, operation=ef.operation,
        permission_type=ef.permission_type,
    )  # fmt: skip


BINDING_OR_INVALID: Final = Converted(shape(BindingJson), _binding, _binding_json)
"""A binding to create: an :class:`InvalidItem` for an ANY or MATCH value (its own error)."""


def _valid(item: BindingJson, raw: Any) -> AclBinding:
    out = _binding(item, raw)
    if isinstance(out, InvalidItem):
        raise BadRequestError(out.message)
    return out


BINDING: Final = Converted(shape(BindingJson), _valid, _binding_json)
"""A binding as answers carry it (always a whole one)."""
FILTER: Final = Converted(shape(FilterJson), _filter, _filter_json, null=ANY_FILTER)
"""A filter; null, as each of its fields, matches anything."""


def binding(value: Any, path: str) -> AclBinding | InvalidItem:
    """A binding to create, read from JSON (errors name ``path``)."""
    return BINDING_OR_INVALID.read(value, "", path)


def acl_filter(value: Any, path: str) -> AclBindingFilter:
    """A KIP-140 filter: a missing field or null matches anything; ``"*"`` is a literal name."""
    return FILTER.read(value, "", path)


def binding_json(b: AclBinding) -> dict[str, Any]:
    return BINDING.write(b)  # type: ignore[no-any-return]


def filter_json(f: AclBindingFilter) -> dict[str, Any]:
    return FILTER.write(f)  # type: ignore[no-any-return]


def binding_from_json(data: Mapping[str, Any]) -> AclBinding:
    """The inverse of :func:`binding_json` for answers we produced (clients, tests)."""
    return BINDING.read(dict(data), "", "binding")
