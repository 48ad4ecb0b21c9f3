"""Which archived intervals a point-in-time question reads: the patterns that can match the
resource, against KIP-290's MATCH filter (independent of the applicability function)."""

from __future__ import annotations

import random

import pytest

from jobs.common.events import ACL_CREATED, HistoryEvent, binding_identity
from jobs.history.questions import applies_to
from jobs.history.validity import Validity
from store.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)

pytestmark = pytest.mark.unit

NAMES = ["", "a", "ab", "abc", "*", "*x", "!a", "!ab", "b"]


def interval(binding: AclBinding) -> Validity:
    event = HistoryEvent(offset=1, time_ms=1, type=ACL_CREATED, binding=binding)
    return Validity(id=binding_identity(binding), opened=event)


def test_the_intervals_read_are_those_of_the_patterns_the_match_filter_accepts() -> None:
    rng = random.Random(29)
    for _ in range(3000):
        rt = rng.choice([ResourceType.TOPIC, ResourceType.GROUP])
        binding = AclBinding.of(
            rng.choice([ResourceType.TOPIC, ResourceType.GROUP]), rng.choice(NAMES),
            rng.choice([PatternType.LITERAL, PatternType.PREFIXED, PatternType.UNKNOWN]),
            "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW,
        )  # fmt: skip
        name = rng.choice(NAMES) + rng.choice(["", "c", "bc"])
        match = ResourcePatternFilter(resource_type=rt, name=name, pattern_type=PatternType.MATCH)
        expected = binding.pattern_type.is_specific and match.matches(binding.pattern)
        assert applies_to(rt, name)(interval(binding)) is expected, (binding, rt, name)


def test_settings_always_count() -> None:
    setting = HistoryEvent(offset=1, time_ms=1, type="CONFIG_ALTERED", config_name="super.users")
    assert applies_to(ResourceType.TOPIC, "t")(Validity(id="setting|super.users", opened=setting))
