"""``ssl.principal.mapping.rules``: Kafka's ``SslPrincipalMapper`` (KIP-371).

Maps the RFC 2253 distinguished name of a TLS client certificate (see
:mod:`store.mapping.x500`) to the short name that becomes the ``User:`` principal.  The value
is a comma-separated list of ``DEFAULT`` (the name unchanged) and ``RULE:pattern/replacement/``
with an optional ``L`` or ``U`` (lower or upper case the result).  The first rule whose pattern
matches the *whole* name wins; no match is :class:`NoMatchingRule`.

Splitting, parsing, ``toString`` and the error messages follow
``org.apache.kafka.common.security.ssl.SslPrincipalMapper`` exactly, including its quirks:
the split is a regex scan (a comma inside a ``RULE:`` body stays in the rule, see the
"rules rule" case of ``SslPrincipalMapperTest``), empty list items are ignored, and the
replacement is applied with ``String.replaceAll`` of the same pattern over the name (so a
pattern that can match empty replaces once more at the end) after ``$n`` references to missing
groups were escaped (the
``escapeLiteralBackReferences`` step Kafka took from Apache NiFi, reproduced with its offset
quirk when it escapes more than one reference).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from store.errors import InvalidConfigError
from store.mapping.errors import NoMatchingRule
from store.mapping.java_case import java_lower_case
from store.mapping.java_regex import JAVA_DOLLAR, JavaPattern, JavaRegexError, compile_java
from store.principal import java_trim

DEFAULT_SSL_PRINCIPAL_MAPPING_RULES = "DEFAULT"

# Kafka's RULE_PATTERN, with Java's '.' (no line terminators) spelled out for Python.
_ANY = "[^\\n\\r\\u0085\\u2028\\u2029]"
_RULE_PATTERN = (
    "(DEFAULT)|RULE:((\\\\.|[^\\\\/])*)/((\\\\.|[^\\\\/])*)/([LU]?)" + _ANY + "*?|(" + _ANY + "*?)"
)
_JAVA_SPACE = "[ \\t\\n\\x0b\\f\\r]"
_RULE_SPLITTER = re.compile(
    _JAVA_SPACE + "*(" + _RULE_PATTERN + ")" + _JAVA_SPACE + "*(," + _JAVA_SPACE + "*|" + JAVA_DOLLAR + ")"
)
_RULE_PARSER = re.compile(_RULE_PATTERN)
_BACK_REFERENCE = re.compile(r"\$([0-9]+)")


class InvalidSslMappingRule(InvalidConfigError):
    """``ssl.principal.mapping.rules`` holds a rule Kafka refuses (``IllegalArgumentException``)."""

    kafka_exception = "IllegalArgumentException"




@dataclass(frozen=True, slots=True)
class SslRule:
    """One parsed rule; ``pattern is None`` is ``DEFAULT``."""

    pattern: JavaPattern | None = None
    replacement: str = ""
    to_lower_case: bool = False
    to_upper_case: bool = False

    def apply(self, distinguished_name: str) -> str | None:
        """The short name, or None when this rule does not match the whole name."""
        if self.pattern is None:
            return distinguished_name
        if not self.pattern.matches(distinguished_name):
            return None
        replacement = _escape_literal_back_references(self.replacement, self.pattern.group_count)
        result = self.pattern.replace_all(distinguished_name, replacement)
        if self.to_lower_case:
            return java_lower_case(result)
        if self.to_upper_case:
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        text = "RULE:" + self.pattern.source + "/" + self.replacement
        if self.to_lower_case:
            return text + "/L"
        if self.to_upper_case:
            return text + "/U"
        return text


def _escape_literal_back_references(replacement: str, group_count: int) -> str:
    """Turn ``$n`` with no group ``n`` into a literal ``\\$n`` (after Kafka/NiFi).

    ``$123`` with 12 groups means group 12 then "3"; leading-zero references are left alone.
    The insertion offsets come from the *original* text, as in Kafka, so a second escape in
    the same replacement lands one character early per earlier escape.
    """
    if group_count == 0:
        return replacement
    value = replacement
    for found in _BACK_REFERENCE.finditer(replacement):
        digits = found.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        while index > group_count and index >= 10:
            index //= 10
        if index > group_count:
            group_start = found.start(1)
            value = value[: group_start - 1] + "\\" + value[group_start - 1 :]
    return value


def split_rules(rules: str | None) -> list[str]:
    """Kafka's ``splitRules``: successive RULE_SPLITTER finds over the trimmed value."""
    text = java_trim(DEFAULT_SSL_PRINCIPAL_MAPPING_RULES if rules is None else rules)
    items: list[str] = []
    pos = 0
    while pos <= len(text):
        found = _RULE_SPLITTER.search(text, pos)
        if found is None:
            break
        items.append(found.group(1))
        # Java resumes one char later after an empty match (see JavaPattern.find_all).
        pos = found.end() + 1 if found.end() == found.start() else found.end()
    return items


def parse_rule(rule: str) -> SslRule | None:
    """Parse one list item; None for an empty item, which Kafka ignores."""
    parsed = _RULE_PARSER.match(rule)
    if parsed is None:  # unreachable: the last alternative matches the empty string
        raise InvalidSslMappingRule(f"Invalid rule: {rule}")
    if parsed.end() != len(rule):
        raise InvalidSslMappingRule(
            f"Invalid rule: `{rule}`, unmatched substring: `{rule[parsed.end():]}`"
        )
    if parsed.group(1) is not None:
        return SslRule()
    if parsed.group(2) is None:
        return None
    try:
        pattern = compile_java(parsed.group(2))
    except JavaRegexError as exc:  # Kafka lets Pattern.compile's exception through
        error = InvalidSslMappingRule(f"Invalid rule: `{rule}`: {exc.message}")
        error.kafka_exception = exc.kafka_exception
        raise error from exc
    flag = parsed.group(6)
    return SslRule(
        pattern=pattern,
        replacement=parsed.group(4),
        to_lower_case=flag == "L",
        to_upper_case=flag == "U",
    )


class SslPrincipalMapper:
    """The parsed ``ssl.principal.mapping.rules`` (``None`` means Kafka's default, ``DEFAULT``)."""

    def __init__(self, rules: str | None = DEFAULT_SSL_PRINCIPAL_MAPPING_RULES) -> None:
        parsed = (parse_rule(item) for item in split_rules(rules))
        self.rules: tuple[SslRule, ...] = tuple(rule for rule in parsed if rule is not None)

    def get_name(self, distinguished_name: str) -> str:
        """The short name of the first rule that matches; :class:`NoMatchingRule` if none."""
        for rule in self.rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule(
            f"No rules apply to {distinguished_name}, rules {_java_list(self.rules)}"
        )

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = {_java_list(self.rules)})"

    def __repr__(self) -> str:
        return str(self)


def _java_list(items: tuple[SslRule, ...]) -> str:
    return "[" + ", ".join(str(item) for item in items) + "]"
