"""Conversion to and from confluent-kafka-python's ``AclBinding`` / ``AclBindingFilter``.

Both sides use Kafka's int8 codes, so values map by code.  confluent-kafka names CLUSTER
``BROKER`` (code 4) and has no DELEGATION_TOKEN or USER resource type and no CREATE_TOKENS or
DESCRIBE_TOKENS operation (librdkafka cannot send them): converting those raises
:class:`UnsupportedByClientError` rather than silently changing the ACL.
"""

from __future__ import annotations

from typing import Any

import confluent_kafka.admin

from store.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from store.errors import InvalidRequestError

# confluent-kafka re-exports these without ``__all__``; read them as Any for strict mypy.
_ck: Any = confluent_kafka.admin
CkAclBinding: Any = _ck.AclBinding
CkAclBindingFilter: Any = _ck.AclBindingFilter
CkAclOperation: Any = _ck.AclOperation
CkAclPermissionType: Any = _ck.AclPermissionType
CkResourcePatternType: Any = _ck.ResourcePatternType
CkResourceType: Any = _ck.ResourceType


class UnsupportedByClientError(InvalidRequestError):
    """A value confluent-kafka (librdkafka) has no enum member for."""


def _to_client(enum_cls: Any, value: ResourceType | AclOperation | AclPermissionType | PatternType) -> Any:
    try:
        return enum_cls(int(value))
    except ValueError:
        raise UnsupportedByClientError(
            f"confluent-kafka has no {enum_cls.__name__} for {type(value).__name__}.{value.name}: "
            "manage such ACLs with Kafka's Java AdminClient or kafka-acls.sh"
        ) from None


def _code(value: Any) -> int:
    # confluent-kafka enums hold librdkafka's codes, which are Kafka's int8 codes.
    return int(value.value)


def _client_fields(
    pattern: ResourcePattern | ResourcePatternFilter, entry: AccessControlEntry | AccessControlEntryFilter
) -> tuple[Any, ...]:
    """The seven constructor arguments of confluent-kafka's binding and filter, in its order."""
    return (
        _to_client(CkResourceType, pattern.resource_type),
        pattern.name,
        _to_client(CkResourcePatternType, pattern.pattern_type),
        entry.principal,
        entry.host,
        _to_client(CkAclOperation, entry.operation),
        _to_client(CkAclPermissionType, entry.permission_type),
    )


def _our_fields(
    client: Any,
) -> tuple[ResourceType, Any, PatternType, Any, Any, AclOperation, AclPermissionType]:
    """The seven fields of a confluent-kafka binding or filter, as ``AclBinding.of`` takes them."""
    return (
        ResourceType.from_code(_code(client.restype)),
        client.name,
        PatternType.from_code(_code(client.resource_pattern_type)),
        client.principal,
        client.host,
        AclOperation.from_code(_code(client.operation)),
        AclPermissionType.from_code(_code(client.permission_type)),
    )


def to_confluent(binding: AclBinding) -> Any:
    """Our binding as a ``confluent_kafka.admin.AclBinding``."""
    return CkAclBinding(*_client_fields(binding.pattern, binding.entry))


def from_confluent(binding: Any) -> AclBinding:
    """A ``confluent_kafka.admin.AclBinding`` as ours (``BROKER`` becomes CLUSTER)."""
    if isinstance(binding, CkAclBindingFilter) or not isinstance(binding, CkAclBinding):
        raise TypeError(f"expected confluent_kafka.admin.AclBinding, got {type(binding).__name__}")
    return AclBinding.of(*_our_fields(binding))


def to_confluent_filter(acl_filter: AclBindingFilter) -> Any:
    """Our filter as a ``confluent_kafka.admin.AclBindingFilter`` (None stays "any")."""
    return CkAclBindingFilter(*_client_fields(acl_filter.pattern_filter, acl_filter.entry_filter))


def from_confluent_filter(acl_filter: Any) -> AclBindingFilter:
    """A ``confluent_kafka.admin.AclBindingFilter`` as ours."""
    if not isinstance(acl_filter, CkAclBindingFilter):
        raise TypeError(f"expected confluent_kafka.admin.AclBindingFilter, got {type(acl_filter).__name__}")
    return AclBindingFilter.of(*_our_fields(acl_filter))
