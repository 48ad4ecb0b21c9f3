"""``sasl.kerberos.principal.to.local.rules``: Kafka's ``KerberosShortNamer`` and ``KerberosName``.

A Kerberos principal ``service/host@REALM`` is turned into the short name that becomes the
``User:`` principal (the ``auth_to_local`` scheme of MIT Kerberos, plus Kafka's ``/L`` and
``/U`` case flags).  Each rule is ``DEFAULT`` (the first component, when the realm is the
default realm) or ``RULE:[n:format](match)s/from/to/g`` with every part after ``]`` optional:

* ``[n:format]`` applies only to names of ``n`` components and builds a string from the
  format, where ``$0`` is the realm and ``$1``, ``$2`` the components;
* ``(match)`` must match that whole string (a Java regex);
* ``s/from/to/`` replaces the first match of ``from`` (all matches with ``g``) using Java's
  replacement syntax (``$1`` is a group of ``from``);
* a result still holding ``/`` or ``@`` is refused (``NoMatchingRule``, "Non-simple name").

Parsing, ``toString`` and errors follow ``org.apache.kafka.common.security.kerberos``
``KerberosShortNamer``, ``KerberosRule``, ``KerberosName``, ``NoMatchingRule`` and
``BadFormatString``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from store.errors import InvalidConfigError, InvalidPrincipalError, StoreError
from store.mapping.errors import NoMatchingRule
from store.mapping.java_case import java_lower_case
from store.mapping.java_regex import JavaPattern, JavaRegexError, compile_java

_RULE_PARSER = re.compile(
    r"((DEFAULT)|((RULE:\[([0-9]*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)))"
)
_PARAMETER = re.compile(r"([^$]*)(\$([0-9]*))?")
_NON_SIMPLE = re.compile(r"[/@]")
_NAME_PARSER = re.compile(r"([^/@]*)(/([^/@]*))?@([^/@]*)")
_INT_MAX = 2**31 - 1


class InvalidKerberosRule(InvalidConfigError):
    """A ``sasl.kerberos.principal.to.local.rules`` entry Kafka refuses."""

    kafka_exception = "IllegalArgumentException"



class BadFormatString(StoreError):
    """A rule's ``[n:format]`` refers to a missing component or has a bare ``$``."""

    kafka_exception = "BadFormatString"


class MalformedKerberosName(InvalidPrincipalError):
    """``KerberosName.parse`` refuses a name with ``@`` that is not ``service[/host]@REALM``."""

    kafka_exception = "IllegalArgumentException"


@dataclass(frozen=True, slots=True)
class KerberosName:
    """``service/host@REALM``; ``host`` and ``realm`` may be absent."""

    service_name: str
    host_name: str | None = None
    realm: str | None = None

    @classmethod
    def parse(cls, principal_name: str) -> KerberosName:
        """Kafka's ``KerberosName.parse``: a name without ``@`` is taken whole as the service."""
        parsed = _NAME_PARSER.fullmatch(principal_name)
        if parsed is None:
            if "@" in principal_name:
                raise MalformedKerberosName(f"Malformed Kerberos name: {principal_name}")
            return cls(principal_name)
        return cls(parsed.group(1), parsed.group(3), parsed.group(4))

    def __str__(self) -> str:
        text = self.service_name
        if self.host_name is not None:
            text += "/" + self.host_name
        if self.realm is not None:
            text += "@" + self.realm
        return text


def _java_parse_int(digits: str) -> int:
    """``Integer.parseInt`` of ASCII digits, with Java's message on failure."""
    if not digits or int(digits) > _INT_MAX:
        raise ValueError(f'For input string: "{digits}"')
    return int(digits)


def replace_parameters(format_: str, params: Sequence[str]) -> str:
    """Expand ``$n`` in a rule's format: ``$0`` the realm, ``$1``.. the components."""
    out: list[str] = []
    start = 0
    while start < len(format_):
        found = _PARAMETER.match(format_, start)
        assert found is not None  # the pattern always matches at least one char here
        out.append(found.group(1))
        digits = found.group(3)
        if digits is not None:
            try:
                number = _java_parse_int(digits)
            except ValueError as exc:
                raise BadFormatString(f"bad format in username mapping in {digits}") from exc
            if number >= len(params):
                raise BadFormatString(
                    f"index {number} from {format_} is outside of the valid range 0 to "
                    f"{len(params) - 1}"
                )
            out.append(params[number])
        start = found.end()
    return "".join(out)


@dataclass(frozen=True, slots=True)
class KerberosRule:
    """One parsed rule (Kafka's ``KerberosRule``); ``is_default`` is the ``DEFAULT`` rule."""

    default_realm: str
    is_default: bool = False
    num_of_components: int = 0
    format: str = ""
    match: JavaPattern | None = None
    from_pattern: JavaPattern | None = None
    to_pattern: str = ""
    repeat: bool = False
    to_lower_case: bool = False
    to_upper_case: bool = False

    def apply(self, params: Sequence[str]) -> str | None:
        """The short name for ``[realm, component...]``, or None when the rule does not apply."""
        result: str | None = None
        if self.is_default:
            if self.default_realm == params[0]:
                result = params[1]
        elif len(params) - 1 == self.num_of_components:
            base = replace_parameters(self.format, params)
            if self.match is None or self.match.matches(base):
                if self.from_pattern is None:
                    result = base
                elif self.repeat:
                    result = self.from_pattern.replace_all(base, self.to_pattern)
                else:
                    result = self.from_pattern.replace_first(base, self.to_pattern)
        if result is not None and _NON_SIMPLE.search(result):
            raise NoMatchingRule(f"Non-simple name {result} after auth_to_local rule {self}")
        if result is not None and self.to_lower_case:
            return java_lower_case(result)
        if result is not None and self.to_upper_case:
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.is_default:
            return "DEFAULT"
        text = f"RULE:[{self.num_of_components}:{self.format}]"
        if self.match is not None:
            text += f"({self.match.source})"
        if self.from_pattern is not None:
            text += f"s/{self.from_pattern.source}/{self.to_pattern}/" + ("g" if self.repeat else "")
        if self.to_lower_case:
            text += "/L"
        if self.to_upper_case:
            text += "/U"
        return text


def parse_rule(default_realm: str, rule: str) -> KerberosRule:
    """Parse one rule as ``KerberosShortNamer.parseRules`` does, with Kafka's messages."""
    parsed = _RULE_PARSER.match(rule)
    if parsed is None:
        raise InvalidKerberosRule(f"Invalid rule: {rule}")
    if parsed.end() != len(rule):
        raise InvalidKerberosRule(
            f"Invalid rule: `{rule}`, unmatched substring: `{rule[parsed.end():]}`"
        )
    if parsed.group(2) is not None:
        return KerberosRule(default_realm, is_default=True)
    try:
        components = _java_parse_int(parsed.group(5))
    except ValueError as exc:  # Kafka lets Integer.parseInt's NumberFormatException through
        error = InvalidKerberosRule(str(exc))
        error.kafka_exception = "NumberFormatException"
        raise error from exc
    try:
        match = None if parsed.group(8) is None else compile_java(parsed.group(8))
        from_pattern = None if parsed.group(10) is None else compile_java(parsed.group(10))
    except JavaRegexError as exc:  # and Pattern.compile's
        error = InvalidKerberosRule(f"Invalid rule: `{rule}`: {exc.message}")
        error.kafka_exception = exc.kafka_exception
        raise error from exc
    return KerberosRule(
        default_realm,
        num_of_components=components,
        format=parsed.group(6),
        match=match,
        from_pattern=from_pattern,
        to_pattern=parsed.group(11) or "",
        repeat=parsed.group(12) == "g",
        to_lower_case=parsed.group(13) == "L",
        to_upper_case=parsed.group(13) == "U",
    )


class KerberosShortNamer:
    """The parsed rules; ``rules=None`` means Kafka's default ``["DEFAULT"]``."""

    def __init__(self, default_realm: str, rules: Sequence[str] | None = None) -> None:
        texts = ["DEFAULT"] if rules is None else list(rules)
        self.default_realm = default_realm
        self.rules: tuple[KerberosRule, ...] = tuple(
            parse_rule(default_realm, text) for text in texts
        )

    def short_name(self, name: KerberosName | str) -> str:
        """The short name of ``name`` (parsed with :meth:`KerberosName.parse` if a string)."""
        kerberos_name = KerberosName.parse(name) if isinstance(name, str) else name
        if kerberos_name.host_name is None:
            if kerberos_name.realm is None:
                return kerberos_name.service_name  # already simple
            params = [kerberos_name.realm, kerberos_name.service_name]
        else:
            # KerberosName.parse never gives a host without a realm; Kafka would pass null.
            params = [kerberos_name.realm or "", kerberos_name.service_name, kerberos_name.host_name]
        for rule in self.rules:
            result = rule.apply(params)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {kerberos_name}, rules {self._rules_text()}")

    def _rules_text(self) -> str:
        return "[" + ", ".join(str(rule) for rule in self.rules) + "]"

    def __str__(self) -> str:
        return f"KerberosShortNamer(principalToLocalRules = {self._rules_text()})"

    def __repr__(self) -> str:
        return str(self)
