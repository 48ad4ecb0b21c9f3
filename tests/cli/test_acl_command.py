"""kafka-acls.sh options to bindings and filters (``cli.acl_command``), no store needed.

Expected values are worked out by hand from ``AclCommand``'s rules: principals x operations x
hosts, hosts defaulting to ``*``, ``--cluster`` as LITERAL ``kafka-cluster``.
"""

from __future__ import annotations

import pytest

from cli import acl_command as ac
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)

pytestmark = pytest.mark.unit


def opts(action: str, **values: object) -> ac.AclOptions:
    names = {
        "allow_principals": "allow-principal",
        "deny_principals": "deny-principal",
        "allow_hosts": "allow-host",
        "deny_hosts": "deny-host",
        "operations": "operation",
        "list_principals": "principal",
    }
    explicit = frozenset(names.get(k, k.replace("_", "-")) for k, v in values.items() if v)
    return ac.AclOptions(action=action, explicit=explicit, **values)  # type: ignore[arg-type]


def fields(bindings: list[AclBinding]) -> set[tuple[str, ...]]:
    return {b.fields() for b in bindings}


def test_allow_and_deny_over_several_resources() -> None:
    o = opts(
        "add",
        allow_principals=["User:a"],
        deny_principals=[" User:b "],
        deny_hosts=["10.0.0.9"],
        operations=["All", "describe"],
        topics=["t"],
        groups=["g"],
        cluster=True,
    )
    plans = ac.bindings_to_add(o)
    assert [p.resource_type for p, _ in plans] == [
        ResourceType.TOPIC,
        ResourceType.CLUSTER,
        ResourceType.GROUP,
    ]
    topic = fields(plans[0][1])
    assert topic == {
        ("TOPIC", "t", "LITERAL", "User:a", "*", "ALL", "ALLOW"),
        ("TOPIC", "t", "LITERAL", "User:a", "*", "DESCRIBE", "ALLOW"),
        ("TOPIC", "t", "LITERAL", "User:b", "10.0.0.9", "ALL", "DENY"),
        ("TOPIC", "t", "LITERAL", "User:b", "10.0.0.9", "DESCRIBE", "DENY"),
    }
    assert {f[1] for f in fields(plans[1][1])} == {"kafka-cluster"}
    # READ is not an operation of the CLUSTER resource: refused as kafka-acls.sh does.
    with pytest.raises(ac.AclCommandError, match="ResourceType CLUSTER only supports operations"):
        ac.bindings_to_add(opts("add", allow_principals=["User:a"], operations=["Read"], cluster=True))


def test_operations_default_to_all_and_are_checked_per_resource_type() -> None:
    ((_, bindings),) = ac.bindings_to_add(opts("add", allow_principals=["User:a"], groups=["g"]))
    assert [b.operation for b in bindings] == [AclOperation.ALL]
    with pytest.raises(ac.AclCommandError, match="ResourceType GROUP only supports operations"):
        ac.bindings_to_add(opts("add", allow_principals=["User:a"], groups=["g"], operations=["Write"]))


def test_producer_with_idempotence_and_transactional_id() -> None:
    o = opts(
        "add",
        allow_principals=["User:p"],
        producer=True,
        idempotent=True,
        topics=["t"],
        transactional_ids=["tx"],
        resource_pattern_type="prefixed",
    )
    got = fields([b for _, bindings in ac.bindings_to_add(o) for b in bindings])
    assert got == {
        ("TOPIC", "t", "PREFIXED", "User:p", "*", "WRITE", "ALLOW"),
        ("TOPIC", "t", "PREFIXED", "User:p", "*", "DESCRIBE", "ALLOW"),
        ("TOPIC", "t", "PREFIXED", "User:p", "*", "CREATE", "ALLOW"),
        ("TRANSACTIONAL_ID", "tx", "PREFIXED", "User:p", "*", "WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", "tx", "PREFIXED", "User:p", "*", "DESCRIBE", "ALLOW"),
        # kafka-acls.sh adds the cluster resource only for LITERAL, but --idempotent always
        # adds IDEMPOTENT_WRITE on the LITERAL kafka-cluster.
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:p", "*", "IDEMPOTENT_WRITE", "ALLOW"),
    }


def test_remove_without_principals_is_one_filter_per_resource_and_asks_first() -> None:
    (plan,) = ac.remove_plans(opts("remove", topics=["t"], resource_pattern_type="match"))
    assert plan.filters == [
        AclBindingFilter(
            pattern_filter=ResourcePatternFilter(
                resource_type=ResourceType.TOPIC, name="t", pattern_type=PatternType.MATCH
            )
        )
    ]
    assert plan.confirmation() == (
        "Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePattern(resourceType=TOPIC, name=t, patternType=MATCH)`? (y/n)"
    )
    (plan,) = ac.remove_plans(opts("remove", topics=["t"], deny_principals=["User:x"], operations=["Write"]))
    (only,) = plan.filters
    assert only.entry_filter.principal == "User:x"
    assert only.entry_filter.permission_type is AclPermissionType.DENY


def test_list_filters() -> None:
    assert ac.list_filters(opts("list")) == [AclBindingFilter()]
    (f,) = ac.list_filters(opts("list", topics=["*"]))
    assert (f.pattern_filter.name, f.pattern_filter.pattern_type) == ("*", PatternType.LITERAL)


@pytest.mark.parametrize(
    ("text", "operation"),
    [
        ("Read", AclOperation.READ),
        ("READ", AclOperation.READ),
        ("read", AclOperation.READ),
        (" Write ", AclOperation.WRITE),
        ("DescribeConfigs", AclOperation.DESCRIBE_CONFIGS),
        ("describeconfigs", AclOperation.DESCRIBE_CONFIGS),
        ("DESCRIBECONFIGS", AclOperation.DESCRIBE_CONFIGS),
        # SecurityUtils.operation knows PascalCase names and their upper case, nothing else.
        ("DESCRIBE_CONFIGS", AclOperation.UNKNOWN),
        ("describe_configs", AclOperation.UNKNOWN),
        ("Reed", AclOperation.UNKNOWN),
        ("Any", AclOperation.ANY),
        # Trimmed with Java's trim: chars <= U+0020 go (control chars too), Unicode spaces stay.
        ("Describe\x01", AclOperation.DESCRIBE),
        ("\x0b\tRead\r\n", AclOperation.READ),
        ("Read\u00a0", AclOperation.UNKNOWN),
        ("\u2003All", AclOperation.UNKNOWN),
        ("\x85Read", AclOperation.UNKNOWN),
    ],
)
def test_operation_names_as_kafkas_security_utils(text: str, operation: AclOperation) -> None:
    assert ac.parse_operation(text) is operation


def test_names_principals_and_hosts_are_trimmed_as_java_trims_them() -> None:
    """AclCommand trims every value with ``String.trim`` but transactional ids: U+0001 goes, a
    no-break space (U+00A0), U+2003 and U+0085 stay (Python's ``strip`` does the opposite)."""
    o = opts(
        "add",
        allow_principals=["\u00a0User:x", "\x01User:y\r"],
        allow_hosts=["\x0b10.0.0.1\u00a0", "\t10.0.0.2\x1f"],
        operations=["\x1fAll\x01"],
        topics=["name\u00a0", "\x01\x1fname"],
        groups=["\u2003g\x85"],
        transactional_ids=["\x01tx\u00a0"],
        delegation_tokens=["\ttok\n"],
        user_principals=["\x01User:Fred\u00a0"],
    )
    plans = ac.bindings_to_add(o)
    assert [(p.resource_type.name, p.name) for p, _ in plans] == [
        ("TOPIC", "name\u00a0"),
        ("TOPIC", "name"),
        ("GROUP", "\u2003g\x85"),
        ("TRANSACTIONAL_ID", "\x01tx\u00a0"),
        ("DELEGATION_TOKEN", "tok"),
        ("USER", "User:Fred\u00a0"),
    ]
    assert {(b.principal, b.host) for b in plans[0][1]} == {
        (principal, host)
        for principal in ("\u00a0User:x", "User:y")
        for host in ("10.0.0.1\u00a0", "10.0.0.2")
    }
    assert {b.operation for _, bindings in plans for b in bindings} == {AclOperation.ALL}
    assert ac.list_principals(opts("list", list_principals=["\x01User:y\t", "\u00a0User:x"])) == [
        "User:y",
        "\u00a0User:x",
    ]
    with pytest.raises(ac.AclExecutionError, match=r"but got $"):  # nothing is left of it
        ac.bindings_to_add(opts("add", allow_principals=["\x01\x1f"], topics=["t"]))


def test_unknown_and_any_operations_fail_as_in_kafka() -> None:
    for name in ("Reed", "DESCRIBE_CONFIGS"):
        with pytest.raises(ac.AclCommandError) as refused:
            ac.bindings_to_add(opts("add", allow_principals=["User:a"], operations=[name], topics=["t"]))
        assert refused.value.message == (
            "ResourceType TOPIC only supports operations [ALL, READ, WRITE, CREATE, DELETE, ALTER, "
            "DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS]"
        )
    with pytest.raises(ac.AclExecutionError, match=r"^operation must not be ANY$"):
        ac.bindings_to_add(opts("add", allow_principals=["User:a"], operations=["Any"], topics=["t"]))
    # Without principals there are no entries, so nothing to check (a removal of everything).
    (plan,) = ac.remove_plans(opts("remove", operations=["Reed"], topics=["t"]))
    assert plan.entries == []
    # Kafka 4.3 lets a group carry config ACLs (KIP-848's group configs).
    ((_, bindings),) = ac.bindings_to_add(
        opts("add", allow_principals=["User:a"], operations=["DescribeConfigs"], groups=["g"])
    )
    assert fields(bindings) == {("GROUP", "g", "LITERAL", "User:a", "*", "DESCRIBE_CONFIGS", "ALLOW")}


def test_pattern_types_as_kafkas_converter() -> None:
    assert ac.parse_pattern_type("Prefixed") is PatternType.PREFIXED
    assert ac.parse_pattern_type("MATCH") is PatternType.MATCH
    with pytest.raises(ac.AclExecutionError) as refused:
        ac.parse_pattern_type("bogus")
    assert refused.value.message == "Cannot parse argument 'bogus' of option resource-pattern-type"
    assert refused.value.cause == "Value [bogus] is not one of [ANY|MATCH|LITERAL|PREFIXED]"
    with pytest.raises(ac.AclExecutionError) as refused:
        ac.parse_pattern_type("unknown")
    assert refused.value.cause == "Unknown resource-pattern-type: unknown"
