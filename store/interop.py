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
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
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


def to_confluent(binding: AclBinding) -> Any:
    """Our binding as a ``confluent_kafka.admin.AclBinding``."""
    return CkAclBinding(
        _to_client(CkResourceType, binding.resource_type),
        binding.name,
        _to_client(CkResourcePatternType, binding.pattern_type),
        binding.principal,
        binding.host,
        _to_client(CkAclOperation, binding.operation),
        _to_client(CkAclPermissionType, binding.permission_type),
    )


def from_confluent(binding: Any) -> AclBinding:
    """A ``confluent_kafka.admin.AclBinding`` as ours (``BROKER`` becomes CLUSTER)."""
    if isinstance(binding, CkAclBindingFilter) or not isinstance(binding, CkAclBinding):
        raise TypeError(f"expected confluent_kafka.admin.AclBinding, got {type(binding).__name__}")
    return AclBinding.of(
        ResourceType.from_code(_code(binding.restype)),
        binding.name,
        PatternType.from_code(_code(binding.resource_pattern_type)),
        binding.principal,
        binding.host,
        AclOperation.from_code(_code(binding.operation)),
        AclPermissionType.from_code(_code(binding.permission_type)),
    )


def to_confluent_filter(acl_filter: AclBindingFilter) -> Any:
    """Our filter as a ``confluent_kafka.admin.AclBindingFilter`` (None stays "any")."""
    pf, ef = acl_filter.pattern_filter, acl_filter.entry_filter
    return CkAclBindingFilter(
        _to_client(CkResourceType, pf.resource_type),
        pf.name,
        _to_client(CkResourcePatternType, pf.pattern_type),
        ef.principal,
        ef.host,
        _to_client(CkAclOperation, ef.operation),
        _to_client(CkAclPermissionType, ef.permission_type),
    )


def from_confluent_filter(acl_filter: Any) -> AclBindingFilter:
    """A ``confluent_kafka.admin.AclBindingFilter`` as ours."""
    if not isinstance(acl_filter, CkAclBindingFilter):
        raise TypeError(f"expected confluent_kafka.admin.AclBindingFilter, got {type(acl_filter).__name__}")
    return AclBindingFilter.of(
        ResourceType.from_code(_code(acl_filter.restype)),
        acl_filter.name,
        PatternType.from_code(_code(acl_filter.resource_pattern_type)),
        acl_filter.principal,
        acl_filter.host,
        AclOperation.from_code(_code(acl_filter.operation)),
        AclPermissionType.from_code(_code(acl_filter.permission_type)),
    )
