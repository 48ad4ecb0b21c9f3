"""The ACL model: Kafka's int8 codes, name parsing, DescribeAcls order and filter semantics.

Expectations are KIP-140 / KIP-290 and Kafka's classes (AclOperation.fromString,
StandardAcl.compareTo, ResourcePatternFilter.matches), worked by hand.
"""

from __future__ import annotations

import pytest

from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

pytestmark = pytest.mark.unit

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType


def test_int8_codes_are_kafkas() -> None:
    assert [(m.name, int(m)) for m in RT] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("TOPIC", 2),
        ("GROUP", 3),
        ("CLUSTER", 4),
        ("TRANSACTIONAL_ID", 5),
        ("DELEGATION_TOKEN", 6),
        ("USER", 7),
    ]
    assert int(OP.DESCRIBE_TOKENS) == 14 and int(OP.IDEMPOTENT_WRITE) == 12 and int(OP.ALL) == 2
    assert [int(m) for m in PERM] == [0, 1, 2, 3]
    assert [(m.name, int(m)) for m in PT][-2:] == [("LITERAL", 3), ("PREFIXED", 4)]


def test_unknown_codes_and_names_decode_to_unknown() -> None:
    assert RT.from_code(99) is RT.UNKNOWN and OP.from_code(-1) is OP.UNKNOWN
    assert OP.parse("frobnicate") is OP.UNKNOWN


@pytest.mark.parametrize("text", ["DescribeConfigs", "DESCRIBE_CONFIGS", "describe_configs"])
def test_operation_names_parse_as_kafka_does(text: str) -> None:
    assert OP.parse(text) is OP.DESCRIBE_CONFIGS


def test_pattern_type_parsing_is_case_sensitive() -> None:
    assert PT.parse("PREFIXED") is PT.PREFIXED
    assert PT.parse("prefixed") is PT.UNKNOWN


def b(
    rt: ResourceType,
    name: str,
    pt: PatternType = PT.LITERAL,
    op: AclOperation = OP.READ,
    principal: str = "User:a",
    perm: AclPermissionType = PERM.ALLOW,
) -> AclBinding:
    return AclBinding.of(rt, name, pt, principal, "*", op, perm)


def test_describe_order_is_type_then_reverse_name_then_pattern_and_operation() -> None:
    shuffled = [
        b(RT.GROUP, "g"),
        b(RT.TOPIC, "a"),
        b(RT.TOPIC, "b", PT.PREFIXED),
        b(RT.TOPIC, "b", PT.LITERAL, OP.WRITE),
        b(RT.TOPIC, "b", PT.LITERAL, OP.READ),
        b(RT.TOPIC, "ab"),
    ]
    assert sorted(shuffled) == [
        b(RT.TOPIC, "b", PT.LITERAL, OP.READ),
        b(RT.TOPIC, "b", PT.LITERAL, OP.WRITE),
        b(RT.TOPIC, "b", PT.PREFIXED),
        b(RT.TOPIC, "ab"),
        b(RT.TOPIC, "a"),
        b(RT.GROUP, "g"),
    ]


def test_names_compare_as_java_utf16_strings() -> None:
    # U+FF5E (one UTF-16 unit) sorts above U+1F600 (a surrogate pair starting 0xD83D) in Java,
    # the opposite of code-point order; reverse-name order puts the larger first.
    emoji, fullwidth = b(RT.TOPIC, "\U0001f600"), b(RT.TOPIC, "\uff5e")
    assert sorted([emoji, fullwidth]) == [fullwidth, emoji]


def test_resource_pattern_refuses_filter_only_values_in_kafkas_order() -> None:
    with pytest.raises(TypeError):
        ResourcePattern(resource_type=RT.TOPIC, name=None, pattern_type=PT.ANY)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="patternType must not be MATCH"):
        ResourcePattern(resource_type=RT.TOPIC, name="x", pattern_type=PT.MATCH)
    with pytest.raises(ValueError, match="resourceType must not be ANY"):
        ResourcePattern(resource_type=RT.ANY, name="x")
    assert ResourcePattern(resource_type=RT.UNKNOWN, name="x").is_unknown


def pf(name: str | None, pt: PatternType, rt: ResourceType = RT.TOPIC) -> ResourcePatternFilter:
    return ResourcePatternFilter(resource_type=rt, name=name, pattern_type=pt)


def rp(name: str, pt: PatternType = PT.LITERAL) -> ResourcePattern:
    return ResourcePattern(resource_type=RT.TOPIC, name=name, pattern_type=pt)


@pytest.mark.parametrize(
    ("flt", "pattern", "expected"),
    [
        (pf(None, PT.ANY), rp("x", PT.PREFIXED), True),
        (pf("*", PT.LITERAL), rp("x"), False),  # "*" in a filter is an exact string
        (pf("*", PT.LITERAL), rp("*"), True),
        (pf("x", PT.ANY), rp("x", PT.PREFIXED), True),  # ANY: exact name, any pattern type
        (pf("xy", PT.ANY), rp("x", PT.PREFIXED), False),
        (pf("xy", PT.MATCH), rp("x", PT.PREFIXED), True),  # MATCH: the patterns that apply
        (pf("xy", PT.MATCH), rp("xy", PT.PREFIXED), True),
        (pf("x", PT.MATCH), rp("xy", PT.PREFIXED), False),
        (pf("xy", PT.MATCH), rp("*"), True),
        (pf("xy", PT.MATCH), rp("x"), False),
        (pf("xy", PT.MATCH, RT.GROUP), rp("xy"), False),
    ],
)
def test_pattern_filter_semantics(
    flt: ResourcePatternFilter, pattern: ResourcePattern, expected: bool
) -> None:
    assert flt.matches(pattern) is expected


def test_entry_filter_fields_are_exact_or_any() -> None:
    binding = AclBinding.of(RT.TOPIC, "t", PT.LITERAL, "User:bob", "*", OP.ALL, PERM.ALLOW)
    assert AclBindingFilter.of(RT.ANY, None, PT.ANY, "User:bob", None, OP.ANY, PERM.ALLOW).matches(binding)
    # READ in a filter does not match an ALL ACL, and User:* in a filter is exact
    assert not AclBindingFilter.of(RT.ANY, None, PT.ANY, None, None, OP.READ, PERM.ANY).matches(binding)
    assert not AclBindingFilter.of(RT.ANY, None, PT.ANY, "User:*", None, OP.ANY, PERM.ANY).matches(binding)


def test_indefinite_fields_use_kafkas_wording() -> None:
    assert AclBindingFilter().find_indefinite_field() == "Resource type is ANY."
    entry_only = AclBindingFilter.of(RT.TOPIC, "t", PT.LITERAL, "User:a", "*", OP.ANY, PERM.ALLOW)
    assert entry_only.find_indefinite_field() == "Operation is ANY"
    exact = b(RT.TOPIC, "t").to_filter()
    assert exact.matches_at_most_one() and exact.find_indefinite_field() is None
