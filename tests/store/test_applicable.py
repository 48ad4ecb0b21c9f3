"""The one applicability function, against KIP-290's MATCH filter and hand-worked cases.

The reference is ``ResourcePatternFilter.matches`` with pattern type MATCH (what
``ScanAclView`` reads through), written independently of :mod:`store.authorizer.applicable`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.acl import WILDCARD_RESOURCE, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType
from store.authorizer.applicable import applicable, applicable_patterns

pytestmark = pytest.mark.unit

LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def match_filter(name: str, patterns: set[tuple[PatternType, str]]) -> set[tuple[PatternType, str]]:
    """The patterns KIP-290's MATCH filter for the LITERAL resource ``name`` accepts."""
    wanted = ResourcePatternFilter(
        resource_type=ResourceType.GROUP, name=name, pattern_type=PatternType.MATCH
    )
    return {
        (pt, n)
        for pt, n in patterns
        if wanted.matches(ResourcePattern(resource_type=ResourceType.GROUP, name=n, pattern_type=pt))
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ab", [(LIT, "ab"), (PRE, ""), (PRE, "a"), (PRE, "ab"), (LIT, "*")]),
        ("*", [(LIT, "*"), (PRE, ""), (PRE, "*")]),  # the wildcard once, as the literal name
        ("*x", [(LIT, "*x"), (PRE, ""), (PRE, "*"), (PRE, "*x"), (LIT, "*")]),  # Kafka skips LIT *
        (  # sorts below "*": Kafka's scan loops or throws
            "!abc",
            [(LIT, "!abc"), (PRE, ""), (PRE, "!"), (PRE, "!a"), (PRE, "!ab"), (PRE, "!abc"), (LIT, "*")],
        ),
        ("", [(LIT, ""), (PRE, ""), (LIT, "*")]),
    ],
)
def test_every_pattern_of_a_name_hand_worked(name: str, expected: list[tuple[PatternType, str]]) -> None:
    assert applicable_patterns(name) == expected


def test_only_the_prefix_lengths_given_are_looked_up_in_ascending_order() -> None:
    assert applicable_patterns("orders-eu-1", [3, 7, 11, 12]) == [
        (LIT, "orders-eu-1"), (PRE, "ord"), (PRE, "orders-"), (PRE, "orders-eu-1"), (LIT, "*"),
    ]  # fmt: skip
    assert applicable_patterns("ab", []) == [(LIT, "ab"), (LIT, "*")]


def test_tables_give_their_entries_in_the_rules_order() -> None:
    literal = {"*": "wild", "!abc": "lit", "x": "other"}
    prefixed = {"!": "p1", "!ab": "p3", "!b": "other", "": "p0"}
    assert applicable("!abc", literal, prefixed) == ["lit", "p0", "p1", "p3", "wild"]
    assert applicable("!abc", literal, prefixed, [0, 1, 3]) == ["lit", "p0", "p1", "p3", "wild"]
    assert applicable("*", literal, prefixed) == ["wild", "p0"]
    assert applicable("zz", {}, {}) == []


_ALPHABET = st.sampled_from(["a", "b", "*", "!", " ", "-", "é", "\U0001f600"])
_NAMES = st.lists(_ALPHABET, max_size=5).map("".join)


@settings(max_examples=400, deadline=None)
@given(
    literals=st.sets(st.one_of(_NAMES, st.just(WILDCARD_RESOURCE)), max_size=8),
    prefixes=st.sets(_NAMES, max_size=8),
    name=_NAMES,
)
def test_the_patterns_found_are_those_the_match_filter_accepts(
    literals: set[str], prefixes: set[str], name: str
) -> None:
    patterns = {(LIT, n) for n in literals} | {(PRE, n) for n in prefixes}
    expected = match_filter(name, patterns)
    every = applicable_patterns(name)
    assert len(every) == len(set(every))  # each pattern once
    assert {p for p in every if p in patterns} == expected
    # looked up in tables, over all lengths or only those the tables hold
    literal = {n: (LIT, n) for n in literals}
    prefixed = {n: (PRE, n) for n in prefixes}
    lengths = sorted({len(n) for n in prefixes})
    assert set(applicable(name, literal, prefixed)) == expected
    found = applicable(name, literal, prefixed, lengths)
    assert set(found) == expected and len(found) == len(expected)
    assert found == [p for p in every if p in patterns]  # the same order
