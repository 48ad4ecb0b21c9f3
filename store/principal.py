"""Kafka principals and the ``super.users`` setting.

``KafkaPrincipal`` mirrors ``org.apache.kafka.common.security.auth.KafkaPrincipal``: a
principal type and a name, printed as ``Type:name``.  Text is parsed as Kafka's
``SecurityUtils.parseKafkaPrincipal`` does (split at the *first* colon, so names may hold
colons), and ``super.users`` as ``StandardAuthorizer.getConfiguredSuperUsers`` does.
Pure values, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self

from store.errors import InvalidConfigError, InvalidPrincipalError

USER_TYPE = "User"
"""``KafkaPrincipal.USER_TYPE``: the type of every principal the built-in authenticators make."""

SUPER_USERS_CONFIG = "super.users"


class PrincipalFormatError(InvalidPrincipalError):
    """Text that is not ``principalType:principalName`` (Kafka: ``IllegalArgumentException``)."""


class SuperUsersConfigError(InvalidConfigError):
    """A ``super.users`` entry without a colon; the message is Kafka's."""


def _format_message(text: str | None) -> str:
    # Kafka's wording, printing Java's "null" for a missing value.
    shown = "null" if text is None else text
    return f"expected a string in format principalType:principalName but got {shown}"


def java_trim(text: str) -> str:
    """``String.trim()``: strip every char <= U+0020 at both ends (not Unicode whitespace)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaPrincipal:
    """An authenticated identity: ``principal_type`` (``User``, ``Group``...) and ``name``.

    Equality is type and name, as Kafka's ``KafkaPrincipal.equals``; ``str()`` is the
    ``Type:name`` form that ACL entries and ``super.users`` store.
    """

    principal_type: str
    name: str

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse ``Type:name``, splitting at the first colon (``SecurityUtils.parseKafkaPrincipal``).

        ``"User:CN=a:b"`` is type ``User``, name ``CN=a:b``; ``":x"`` and ``"x:"`` parse (empty
        type or name); text without a colon, or empty, is refused.
        """
        if not isinstance(text, str) or not text:
            raise PrincipalFormatError(_format_message(None if text is None else str(text)))
        principal_type, colon, name = text.partition(":")
        if not colon:
            raise PrincipalFormatError(_format_message(text))
        return cls(principal_type=principal_type, name=name)

    @classmethod
    def user(cls, name: str) -> Self:
        return cls(principal_type=USER_TYPE, name=name)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


def parse_super_users(value: object) -> frozenset[str]:
    """Parse a ``super.users`` value as ``StandardAuthorizer.getConfiguredSuperUsers``.

    ``None`` means none; otherwise the value's text is split on ``;``, each part trimmed
    (Java ``trim``), empty parts skipped, and each remaining part must parse as a principal.
    The set holds the trimmed texts, compared later with ``str(principal)``.
    """
    if value is None:
        return frozenset()
    text = value if isinstance(value, str) else _java_to_string(value)
    users: set[str] = set()
    for part in text.split(";"):
        entry = java_trim(part)
        if not entry:
            continue
        try:
            KafkaPrincipal.parse(entry)
        except PrincipalFormatError as exc:
            raise SuperUsersConfigError(exc.message) from exc
        users.add(entry)
    return frozenset(users)


def super_users_text(users: Iterable[str]) -> str:
    """The ``super.users`` value that parses back to ``users``."""
    return ";".join(sorted(users))


def _java_to_string(value: object) -> str:
    """``Object.toString()`` for the scalar values a config map may hold."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
