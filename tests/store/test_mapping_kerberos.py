"""KerberosShortNamer / KerberosName: Kafka's KerberosNameTest expectations restated, plus the
auth_to_local edge cases (format errors, non-simple names, realms) worked by hand from
KerberosRule's code paths."""

from __future__ import annotations

import pytest

from store.mapping.java_regex import java_exception_is
from store.mapping.kerberos import (
    BadFormatString,
    InvalidKerberosRule,
    KerberosName,
    KerberosShortNamer,
    MalformedKerberosName,
    NoMatchingRule,
)

pytestmark = pytest.mark.unit

REALM = "REALM.COM"


def _case_rules(flag: str) -> list[str]:
    return [
        f"RULE:[1:$1]/{flag}",
        f"RULE:[2:$1](Test.*)s/ABC///{flag}",
        f"RULE:[2:$1](ABC.*)s/ABC/XYZ/g/{flag}",
        f"RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/{flag}",
        f"RULE:[2:$1]/{flag}",
        "DEFAULT",
    ]


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("App.service-name/example.com@REALM.COM", ("App.service-name", "example.com", REALM)),
        ("App.service-name@REALM.COM", ("App.service-name", None, REALM)),
        ("user/host@REALM.COM", ("user", "host", REALM)),
        ("a/b", ("a/b", None, None)),  # no '@': taken whole as the service name
        ("@R", ("", None, "R")),
    ],
)
def test_kerberos_name_parse(text: str, parts: tuple[str, str | None, str | None]) -> None:
    name = KerberosName.parse(text)
    assert (name.service_name, name.host_name, name.realm) == parts
    assert str(name) == text


@pytest.mark.parametrize("text", ["a@b@c", "a/b/c@R"])
def test_malformed_kerberos_name(text: str) -> None:
    with pytest.raises(MalformedKerberosName, match=f"Malformed Kerberos name: {text}"):
        KerberosName.parse(text)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("App.service-name/example.com@REALM.COM", "service-name"),
        ("App.service-name@REALM.COM", "service-name"),
        ("user/host@REALM.COM", "user"),
    ],
)
def test_kafka_parse_example(name: str, short: str) -> None:
    rules = [
        "RULE:[1:$1](App\\..*)s/App\\.(.*)/$1/g",
        "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g",
        "DEFAULT",
    ]
    assert KerberosShortNamer(REALM, rules).short_name(name) == short


@pytest.mark.parametrize(
    ("name", "lower", "upper"),
    [
        ("User@REALM.COM", "user", "USER"),
        ("TestABC/host@FOO.COM", "test", "TEST"),
        ("ABC_User_ABC/host@FOO.COM", "xyz_user_xyz", "XYZ_USER_XYZ"),
        ("App.SERVICE-name/example.com@REALM.COM", "service-name", "SERVICE-NAME"),
        ("User/root@REALM.COM", "user", "USER"),
    ],
)
def test_case_flags(name: str, lower: str, upper: str) -> None:
    assert KerberosShortNamer(REALM, _case_rules("L")).short_name(name) == lower
    assert KerberosShortNamer(REALM, _case_rules("U")).short_name(name) == upper


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("default", "Invalid rule: default"),
        ("DEFAUL", "Invalid rule: DEFAUL"),
        ("DEFAULT/L", "Invalid rule: `DEFAULT/L`, unmatched substring: `/L`"),
        ("DEFAULT/g", "Invalid rule: `DEFAULT/g`, unmatched substring: `/g`"),
        ("rule:[1:$1]", "Invalid rule: rule:[1:$1]"),
        ("rule:[1:$1]/L/U", "Invalid rule: rule:[1:$1]/L/U"),
        ("rule:[1:$1]/U/L", "Invalid rule: rule:[1:$1]/U/L"),
        ("rule:[1:$1]/LU", "Invalid rule: rule:[1:$1]/LU"),
        ("RULE:[1:$1/L", "Invalid rule: RULE:[1:$1/L"),
        ("RULE:[1:$1]/l", "Invalid rule: `RULE:[1:$1]/l`, unmatched substring: `l`"),
        (
            "RULE:[2:$1](ABC.*)s/ABC/XYZ/L/g",
            "Invalid rule: `RULE:[2:$1](ABC.*)s/ABC/XYZ/L/g`, unmatched substring: `/g`",
        ),
    ],
)
def test_invalid_rules(rule: str, message: str) -> None:
    with pytest.raises(InvalidKerberosRule) as caught:
        KerberosShortNamer(REALM, [rule])
    assert caught.value.message == message
    assert java_exception_is(caught.value, "IllegalArgumentException")


@pytest.mark.parametrize(
    ("rule", "java_exception"),
    [
        ("RULE:[:$1]", "NumberFormatException"),  # Integer.parseInt("")
        ("RULE:[99999999999:$1]", "NumberFormatException"),
        ("RULE:[1:$1](a(b)", "PatternSyntaxException"),
    ],
)
def test_rules_kafka_fails_on_with_java_exceptions(rule: str, java_exception: str) -> None:
    with pytest.raises(InvalidKerberosRule) as caught:
        KerberosShortNamer(REALM, [rule])
    assert java_exception_is(caught.value, java_exception)
    assert java_exception_is(caught.value, "IllegalArgumentException")


def test_to_string_prints_canonical_rules() -> None:
    rules = [*_case_rules("L"), "RULE:[1:$1]s/b/c/", "RULE:[1:$1]/"]
    assert str(KerberosShortNamer(REALM, rules)) == (
        "KerberosShortNamer(principalToLocalRules = [RULE:[1:$1]/L, RULE:[2:$1](Test.*)s/ABC///L, "
        "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L, RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/L, "
        "RULE:[2:$1]/L, DEFAULT, RULE:[1:$1]s/b/c/, RULE:[1:$1]])"
    )
    assert str(KerberosShortNamer(REALM, None)) == (
        "KerberosShortNamer(principalToLocalRules = [DEFAULT])"
    )


@pytest.mark.parametrize(
    ("rules", "name", "short"),
    [
        (["RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//", "DEFAULT"], "user@MYDOMAIN.COM", "user"),
        (["RULE:[2:$1;$2](^.*;admin$)s/;admin$//", "DEFAULT"], "joe/admin@REALM.COM", "joe"),
        (["RULE:[1:$1]s/a/b/g"], "banana@X", "bbnbnb"),
        (["RULE:[1:$1]s/a/b/"], "banana@X", "bbnana"),  # without g only the first match
        (["RULE:[2:$2$1$0]s/(.)(.)/$2$1/g/U"], "ab/cd@R", "DCBAR"),
        (["RULE:[1:$1]s/x*/-/g"], "abc@R", "-a-b-c-"),  # empty matches, Java style
        (["RULE:[1:$1]s/a/\\$/"], "abc@R", "$bc"),
        (["DEFAULT"], "alice/host@REALM.COM", "alice"),
        (["DEFAULT"], "plain", "plain"),  # no realm, no host: returned as is, rules unused
        (["RULE:[1:$1](b.*)", "DEFAULT"], "abc@REALM.COM", "abc"),  # match fails: next rule
    ],
)
def test_short_names(rules: list[str], name: str, short: str) -> None:
    assert KerberosShortNamer(REALM, rules).short_name(name) == short


@pytest.mark.parametrize(
    ("rules", "name", "error", "message"),
    [
        (
            ["RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//", "DEFAULT"],
            "svc/host@MYDOMAIN.COM",
            NoMatchingRule,
            "No rules apply to svc/host@MYDOMAIN.COM, rules "
            "[RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//, DEFAULT]",
        ),
        (
            ["RULE:[1:$1/x]"],
            "a@R",
            NoMatchingRule,
            "Non-simple name a/x after auth_to_local rule RULE:[1:$1/x]",
        ),
        (
            ["RULE:[1:$1]s/a/@/L"],
            "abc@R",
            NoMatchingRule,
            "Non-simple name @bc after auth_to_local rule RULE:[1:$1]s/a/@//L",
        ),
        (
            ["RULE:[1:$2]"],
            "a@R",
            BadFormatString,
            "index 2 from $2 is outside of the valid range 0 to 1",
        ),
        (["RULE:[1:x$1$]"], "a@R", BadFormatString, "bad format in username mapping in "),
    ],
)
def test_mapping_errors(
    rules: list[str], name: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        KerberosShortNamer(REALM, rules).short_name(name)
    assert str(caught.value) == message


def test_default_needs_the_default_realm() -> None:
    namer = KerberosShortNamer("", ["DEFAULT"])
    assert namer.short_name("a@") == "a"
    with pytest.raises(NoMatchingRule):
        KerberosShortNamer(REALM, ["DEFAULT"]).short_name("a@")
