"""KafkaPrincipal parsing and super.users, against Kafka's SecurityUtils / StandardAuthorizerTest."""

from __future__ import annotations

import pytest

from store.errors import InvalidConfigError, InvalidPrincipalError
from store.principal import KafkaPrincipal, java_trim, parse_super_users

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "principal_type", "name"),
    [
        ("User:alice", "User", "alice"),
        ("User:CN=a,O=b:c", "User", "CN=a,O=b:c"),  # split at the first colon only
        (":alice", "", "alice"),
        ("Group:", "Group", ""),
        ("User:*", "User", "*"),
    ],
)
def test_parse_splits_at_the_first_colon(text: str, principal_type: str, name: str) -> None:
    principal = KafkaPrincipal.parse(text)
    assert (principal.principal_type, principal.name) == (principal_type, name)
    assert str(principal) == text


@pytest.mark.parametrize("text", ["bob", ""])
def test_parse_refuses_text_without_a_colon(text: str) -> None:
    with pytest.raises(InvalidPrincipalError) as info:
        KafkaPrincipal.parse(text)
    assert info.value.message == (f"expected a string in format principalType:principalName but got {text}")


def test_equality_is_type_and_name() -> None:
    assert KafkaPrincipal.parse("User:a") == KafkaPrincipal.user("a")
    assert KafkaPrincipal.parse("User:a") != KafkaPrincipal.parse("Group:a")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, set()),
        (" ", set()),
        ("User:bob;User:alice ", {"User:bob", "User:alice"}),
        (";  User:bob  ;  User:alice ", {"User:bob", "User:alice"}),
        ("User:a;;User:a", {"User:a"}),
        ("User:x y", {"User:x y"}),
    ],
)
def test_super_users_as_kafka_parses_them(value: str | None, expected: set[str]) -> None:
    assert parse_super_users(value) == expected


def test_super_users_entry_without_colon_fails_with_kafkas_message() -> None:
    with pytest.raises(InvalidConfigError) as info:
        parse_super_users("bob;:alice")
    assert info.value.message == "expected a string in format principalType:principalName but got bob"


def test_java_trim_strips_control_chars_but_not_unicode_spaces() -> None:
    assert java_trim("\t\x01 User:a \n") == "User:a"
    assert java_trim("\u00a0User:a") == "\u00a0User:a"  # NBSP is not <= U+0020
    assert parse_super_users("\u00a0User:a") == {"\u00a0User:a"}
