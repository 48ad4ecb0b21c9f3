"""Validation of new ACL bindings and of delete filters, with Kafka's rules and messages.

A CreateAcls request meets three checks in Kafka, in this order (``ValidationLayer``):

* ``ADMIN_CLIENT`` — ``KafkaAdminClient.createAcls`` refuses a binding with an ANY or UNKNOWN
  field before sending it ("Invalid ACL creation: Operation is UNKNOWN");
* ``BROKER`` — ``AclApis.handleCreateAcls`` refuses a CLUSTER resource not named
  ``kafka-cluster``, then an empty name;
* ``CONTROLLER`` — ``AclControlManager.validateNewAcl`` refuses UNKNOWN/ANY fields, an empty
  name and a principal without a colon.

Each failure is a KIP-50 error from :mod:`store.errors` (``InvalidResourceError``,
``InvalidOperationError``, ``InvalidPrincipalError``, ``InvalidAclError``) carrying
``INVALID_REQUEST``, the code Kafka puts in the CreateAcls response.  ``plan_create_acls`` and
``plan_delete_acls`` are the pure per-item logic of CreateAcls/DeleteAcls over a snapshot.
"""

from __future__ import annotations

import enum
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

from store.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.errors import (
    InvalidAclError,
    InvalidOperationError,
    InvalidPrincipalError,
    InvalidRequestError,
    InvalidResourceError,
)


class ValidationLayer(enum.Enum):
    """Where in Kafka's CreateAcls path a check runs; each layer includes those after it."""

    ADMIN_CLIENT = "admin_client"
    BROKER = "broker"
    CONTROLLER = "controller"


class InvalidFilterError(InvalidRequestError):
    """A DeleteAcls filter with an UNKNOWN field (``AclControlManager.validateFilter``)."""


def check_admin_client(binding: AclBinding) -> None:
    """``KafkaAdminClient.createAcls``: no indefinite (ANY/UNKNOWN/null) field."""
    indefinite = binding.to_filter().find_indefinite_field()
    if indefinite is None:
        return
    message = f"Invalid ACL creation: {indefinite}"
    if indefinite.startswith("Operation"):
        raise InvalidOperationError(message)
    if indefinite.startswith("Permission"):
        raise InvalidAclError(message)
    if indefinite.startswith(("Principal", "Host")):
        raise InvalidPrincipalError(message)
    raise InvalidResourceError(message)


def check_broker(binding: AclBinding) -> None:
    """``AclApis.handleCreateAcls``: CLUSTER is named ``kafka-cluster``; no empty name."""
    pattern = binding.pattern
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise InvalidResourceError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if pattern.name == "":
        raise InvalidResourceError("Invalid empty resource name")


_INVALID_RESOURCE_TYPES = frozenset({ResourceType.UNKNOWN, ResourceType.ANY})
_VALID_PATTERN_TYPES = frozenset({PatternType.LITERAL, PatternType.PREFIXED})
_INVALID_OPERATIONS = frozenset({AclOperation.UNKNOWN, AclOperation.ANY})
_VALID_PERMISSION_TYPES = frozenset({AclPermissionType.DENY, AclPermissionType.ALLOW})


def check_controller(binding: AclBinding) -> None:
    """``AclControlManager.validateNewAcl``, check by check in Kafka's order."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type in _INVALID_RESOURCE_TYPES:
        raise InvalidResourceError(f"Invalid resourceType {pattern.resource_type.name}")
    if pattern.pattern_type not in _VALID_PATTERN_TYPES:
        raise InvalidResourceError(f"Invalid patternType {pattern.pattern_type.name}")
    if entry.operation in _INVALID_OPERATIONS:
        raise InvalidOperationError(f"Invalid operation {entry.operation.name}")
    if entry.permission_type not in _VALID_PERMISSION_TYPES:
        raise InvalidAclError(f"Invalid permissionType {entry.permission_type.name}")
    if not pattern.name:
        raise InvalidResourceError("Resource name should not be empty")
    if ":" not in entry.principal:
        raise InvalidPrincipalError(
            f"Could not parse principal from `{entry.principal}` (no colon is present "
            "separating the principal type from the principal name)"
        )


def validate_new_acl(binding: AclBinding, *, layer: ValidationLayer = ValidationLayer.BROKER) -> None:
    """Run Kafka's CreateAcls checks from ``layer`` on; raise the first failure.

    The default, BROKER, is what a CreateAcls request to a Kafka broker meets (any client).
    """
    if layer is ValidationLayer.ADMIN_CLIENT:
        check_admin_client(binding)
    if layer in (ValidationLayer.ADMIN_CLIENT, ValidationLayer.BROKER):
        check_broker(binding)
    check_controller(binding)


def validate_filter(acl_filter: AclBindingFilter) -> None:
    """``AclControlManager.validateFilter``: a delete filter may not hold UNKNOWN."""
    if acl_filter.pattern_filter.is_unknown:
        raise InvalidFilterError("Unknown patternFilter.")
    if acl_filter.entry_filter.is_unknown:
        raise InvalidFilterError("Unknown entryFilter.")


@dataclass(frozen=True, slots=True)
class CreatePlan:
    """Per-binding outcome of a CreateAcls request and the bindings it must write.

    ``results[i]`` is None (success) or the error for ``bindings[i]``.  ``new_bindings``
    excludes bindings already present and repeats within the request, as
    ``AclControlManager.createAcls`` writes no record for them (they still succeed).
    """

    results: list[InvalidAclError | None]
    new_bindings: list[AclBinding]


def plan_create_acls(
    existing: Container[AclBinding],
    bindings: Sequence[AclBinding],
    *,
    layer: ValidationLayer = ValidationLayer.BROKER,
) -> CreatePlan:
    results: list[InvalidAclError | None] = []
    new: dict[AclBinding, None] = {}
    for binding in bindings:
        try:
            validate_new_acl(binding, layer=layer)
        except InvalidAclError as exc:
            results.append(exc)
            continue
        if binding not in existing:
            new.setdefault(binding, None)
        results.append(None)
    return CreatePlan(results=results, new_bindings=list(new))


@dataclass(frozen=True, slots=True)
class DeletePlan:
    """Per-filter outcome of a DeleteAcls request and the bindings it must remove.

    ``results[i]`` lists what filter ``i`` matched among the bindings as they were before
    the request (so two filters may report the same binding), or its validation error.
    ``removed`` holds each matched binding once: one removal event each.
    """

    results: list[list[AclBinding] | InvalidFilterError]
    removed: list[AclBinding]


def plan_delete_acls(existing: Iterable[AclBinding], filters: Sequence[AclBindingFilter]) -> DeletePlan:
    snapshot = sorted(existing)
    results: list[list[AclBinding] | InvalidFilterError] = []
    removed: dict[AclBinding, None] = {}
    for acl_filter in filters:
        try:
            validate_filter(acl_filter)
        except InvalidFilterError as exc:
            results.append(exc)
            continue
        matched = [binding for binding in snapshot if acl_filter.matches(binding)]
        removed.update(dict.fromkeys(matched))
        results.append(matched)
    return DeletePlan(results=results, removed=list(removed))
