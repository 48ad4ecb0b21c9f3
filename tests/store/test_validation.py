"""New-binding and filter validation: Kafka's checks, their order per layer, and the plans.

Expected messages are Kafka's texts from AclControlManager.validateNewAcl, AclApis and
KafkaAdminClient.createAcls (read from Kafka 4.3.1's sources).
"""

from __future__ import annotations

import pytest

from store.acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType
from store.errors import (
    AuthorizationError,
    InvalidAclError,
    InvalidOperationError,
    InvalidPrincipalError,
    InvalidResourceError,
    KafkaErrorCode,
)
from store.validation import (
    InvalidFilterError,
    ValidationLayer,
    plan_create_acls,
    plan_delete_acls,
    validate_filter,
    validate_new_acl,
)

pytestmark = pytest.mark.unit

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType
CONTROLLER, BROKER, CLIENT = ValidationLayer.CONTROLLER, ValidationLayer.BROKER, ValidationLayer.ADMIN_CLIENT


def acl(
    rt: ResourceType = RT.TOPIC,
    name: str = "t",
    pt: PatternType = PT.LITERAL,
    principal: str = "User:a",
    op: AclOperation = OP.READ,
    perm: AclPermissionType = PERM.ALLOW,
) -> AclBinding:
    return AclBinding.of(rt, name, pt, principal, "*", op, perm)


@pytest.mark.parametrize("layer", list(ValidationLayer))
def test_a_valid_binding_passes_every_layer(layer: ValidationLayer) -> None:
    validate_new_acl(acl(RT.CLUSTER, "kafka-cluster", op=OP.ALTER), layer=layer)
    validate_new_acl(acl(pt=PT.PREFIXED, principal="Group:ops"), layer=layer)


@pytest.mark.parametrize(
    ("binding", "error", "message"),
    [
        (acl(rt=RT.UNKNOWN), InvalidResourceError, "Invalid resourceType UNKNOWN"),
        (acl(pt=PT.UNKNOWN), InvalidResourceError, "Invalid patternType UNKNOWN"),
        (acl(op=OP.UNKNOWN), InvalidOperationError, "Invalid operation UNKNOWN"),
        (acl(perm=PERM.UNKNOWN), InvalidAclError, "Invalid permissionType UNKNOWN"),
        (acl(name=""), InvalidResourceError, "Resource name should not be empty"),
        (
            acl(principal="alice"),
            InvalidPrincipalError,
            "Could not parse principal from `alice` (no colon is present separating the "
            "principal type from the principal name)",
        ),
        # the controller checks enums before the name: an empty name with UNKNOWN op
        (acl(name="", op=OP.UNKNOWN), InvalidOperationError, "Invalid operation UNKNOWN"),
    ],
)
def test_controller_checks(binding: AclBinding, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        validate_new_acl(binding, layer=CONTROLLER)
    assert str(info.value) == message


def test_controller_accepts_a_cluster_with_another_name() -> None:
    """Only the broker checks the CLUSTER name; validateNewAcl does not."""
    validate_new_acl(acl(RT.CLUSTER, "foobar"), layer=CONTROLLER)
    with pytest.raises(InvalidResourceError, match="only valid name for the CLUSTER resource"):
        validate_new_acl(acl(RT.CLUSTER, "foobar"), layer=BROKER)


def test_broker_checks_cluster_name_before_empty_name() -> None:
    with pytest.raises(InvalidResourceError) as info:
        validate_new_acl(acl(RT.CLUSTER, ""), layer=BROKER)
    assert str(info.value) == "The only valid name for the CLUSTER resource is kafka-cluster"
    with pytest.raises(InvalidResourceError) as info:
        validate_new_acl(acl(name=""))
    assert str(info.value) == "Invalid empty resource name"


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (acl(op=OP.UNKNOWN), "Invalid ACL creation: Operation is UNKNOWN"),
        (acl(perm=PERM.UNKNOWN), "Invalid ACL creation: Permission type is UNKNOWN"),
        (acl(rt=RT.UNKNOWN), "Invalid ACL creation: Resource type is UNKNOWN."),
        (acl(pt=PT.UNKNOWN, op=OP.UNKNOWN), "Invalid ACL creation: Resource pattern type is UNKNOWN."),
    ],
)
def test_admin_client_refuses_indefinite_fields_first(binding: AclBinding, message: str) -> None:
    with pytest.raises(InvalidAclError) as info:
        validate_new_acl(binding, layer=CLIENT)
    assert str(info.value) == message


def test_errors_are_kip50_and_carry_invalid_request() -> None:
    with pytest.raises(AuthorizationError) as info:
        validate_new_acl(acl(principal="nocolon"))
    assert info.value.error_code is KafkaErrorCode.INVALID_REQUEST


def test_validate_filter() -> None:
    validate_filter(AclBindingFilter.of(RT.ANY, "*", PT.LITERAL, "User:*", "*", OP.ANY, PERM.ANY))
    with pytest.raises(InvalidFilterError, match=r"^Unknown patternFilter\.$"):
        validate_filter(AclBindingFilter.of(RT.UNKNOWN, None, PT.LITERAL, None, None, OP.ANY, PERM.ANY))
    with pytest.raises(InvalidFilterError, match=r"^Unknown entryFilter\.$"):
        validate_filter(AclBindingFilter.of(RT.ANY, None, PT.MATCH, None, None, OP.UNKNOWN, PERM.ANY))


def test_plan_create_skips_existing_and_repeated_bindings() -> None:
    present, new, bad = acl(name="a"), acl(name="b"), acl(name="")
    plan = plan_create_acls({present}, [present, new, bad, new])
    assert [r is None for r in plan.results] == [True, True, False, True]
    assert isinstance(plan.results[2], InvalidResourceError)
    assert plan.new_bindings == [new]


def test_plan_delete_matches_the_snapshot_before_the_request() -> None:
    a, b = acl(name="a"), acl(name="b", pt=PT.PREFIXED)
    everything = AclBindingFilter()
    only_a = a.to_filter()
    unknown = AclBindingFilter.of(RT.ANY, None, PT.UNKNOWN, None, None, OP.ANY, PERM.ANY)
    plan = plan_delete_acls([a, b], [everything, only_a, unknown])
    assert plan.results[0] == [b, a]  # Kafka order: names in reverse
    assert plan.results[1] == [a]  # still reported though the first filter removed it
    assert isinstance(plan.results[2], InvalidFilterError)
    assert plan.removed == [b, a]  # one removal each
