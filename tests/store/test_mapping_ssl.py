"""SslPrincipalMapper: Kafka's SslPrincipalMapperTest expectations restated, plus replacement
edge cases whose expected values were worked by hand from java.util.regex's rules (and checked
once against Kafka 4.3.1's class on the JVM while writing them)."""

from __future__ import annotations

import pytest

from store.mapping.java_regex import java_exception_is
from store.mapping.ssl import InvalidSslMappingRule, NoMatchingRule, SslPrincipalMapper

pytestmark = pytest.mark.unit

KAFKA_TEST_RULES = ", ".join(
    [
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT",
    ]
)


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules_parse(rules: str) -> None:
    assert SslPrincipalMapper(rules).rules


@pytest.mark.parametrize(
    ("rules", "unmatched"),
    [
        ("default", "default"),
        ("DEFAUL", "DEFAUL"),
        ("DEFAULT/L", "/L"),
        ("DEFAULT/U", "/U"),
        ("RULE:CN=(.*?),OU=ServiceUsers.*/$1", "RULE:CN=(.*?)"),
        ("rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "rule:^CN=(.*?)"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U", "/U"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?)"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/U", "RULE:^CN=(.*?)"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/LU", "RULE:^CN=(.*?)"),
        ("RULE:a/b/Lx", "x"),
    ],
)
def test_invalid_rules_name_the_unmatched_text(rules: str, unmatched: str) -> None:
    with pytest.raises(InvalidSslMappingRule) as caught:
        SslPrincipalMapper(rules)
    assert caught.value.message.endswith(f"unmatched substring: `{unmatched}`")
    assert java_exception_is(caught.value, "IllegalArgumentException")


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
        ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
        ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
        ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
        ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
    ],
)
def test_first_matching_rule_wins(name: str, short: str) -> None:
    assert SslPrincipalMapper(KAFKA_TEST_RULES).get_name(name) == short


@pytest.mark.parametrize(
    ("expected", "rules"),
    [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
        ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
        ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
        ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
        ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
        (
            "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, "
            "/DEFAULT, DEFAULT]",
            "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, "
            "/DEFAULT/,DEFAULT",
        ),
    ],
)
def test_rules_split_and_print_as_kafka(expected: str, rules: str) -> None:
    assert str(SslPrincipalMapper(rules)) == f"SslPrincipalMapper(rules = {expected})"


def test_none_means_the_default_rule() -> None:
    assert str(SslPrincipalMapper(None)) == "SslPrincipalMapper(rules = [DEFAULT])"


def test_escaped_comma_with_whitespace() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.get_name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_no_matching_rule_lists_the_rules() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRule) as caught:
        mapper.get_name("OU=Other,CN=x")
    assert caught.value.message == (
        "No rules apply to OU=Other,CN=x, rules [RULE:^CN=(.*?),OU=ServiceUsers.*$/$1]"
    )


@pytest.mark.parametrize(
    ("rules", "name", "short"),
    [
        # The rule must match the whole name; then String.replaceAll runs over it, so a pattern
        # that can also match empty replaces once more at the end.
        ("RULE:([a-z]+)/<$1>/", "abc", "<abc>"),
        ("RULE:([a-z]*)/<$1>/", "abc", "<abc><>"),
        # matches() backtracks to `ab`, but replaceAll's first find takes `a`.
        ("RULE:(a|ab)/X/", "ab", "Xb"),
        # $n to a missing group is escaped to a literal by Kafka; `\$` is a literal dollar.
        ("RULE:(a)/x$2y/", "a", "x$2y"),
        ("RULE:^CN=([^,]+).*$/\\$1/", "CN=a,O=b", "$1"),
        # $12 with one group is group 1 then "2"; $02 is group 0 then "2".
        ("RULE:(a)/$12/", "a", "a2"),
        ("RULE:(a)/$02/", "a", "a2"),
        # A group that did not take part contributes nothing.
        ("RULE:(a)(b)?/[$1$2]/", "a", "[a]"),
        ("RULE:(?<who>[a-z]+)/${who}!/", "abc", "abc!"),
        # Case flags use Locale.ENGLISH: ß upper-cases to SS.
        ("RULE:(.*)/$1/U", "straße", "STRASSE"),
        # Java's '.' stops at \r; so the first rule fails and DEFAULT answers.
        ("RULE:a.b/x/,DEFAULT", "a\rb", "a\rb"),
        ("RULE:a*+a/x/,DEFAULT", "aaa", "aaa"),
        ("RULE:\\Qa.b\\E/x/", "a.b", "x"),
        ("RULE:\\p{Alpha}+/$0/U", "abC", "ABC"),
        # Java's \w is ASCII.
        ("RULE:\\w+/x/,DEFAULT", "é", "é"),
    ],
)
def test_replacement_follows_java(rules: str, name: str, short: str) -> None:
    assert SslPrincipalMapper(rules).get_name(name) == short


@pytest.mark.parametrize(
    ("rules", "java_exception"),
    [
        ("RULE:a/$1/", "IndexOutOfBoundsException"),  # no groups: Kafka escapes nothing
        ("RULE:(a)/$/", "IllegalArgumentException"),
        ("RULE:(a)/$x/", "IllegalArgumentException"),
        ("RULE:(a)/${zz}/", "IllegalArgumentException"),
        # Kafka's escape step inserts its second backslash one char early: `\$\5$6`.
        ("RULE:(a)/$5$6/", "IndexOutOfBoundsException"),
    ],
)
def test_bad_replacements_fail_when_applied(rules: str, java_exception: str) -> None:
    mapper = SslPrincipalMapper(rules)
    with pytest.raises(Exception) as caught:
        mapper.get_name("a")
    assert java_exception_is(caught.value, java_exception)


@pytest.mark.parametrize("rules", ["RULE:(a/b/", "RULE:a{x}/y/", "RULE:[]a]/x/"])
def test_bad_patterns_are_pattern_syntax_errors(rules: str) -> None:
    with pytest.raises(InvalidSslMappingRule) as caught:
        SslPrincipalMapper(rules)
    assert java_exception_is(caught.value, "PatternSyntaxException")
    assert java_exception_is(caught.value, "IllegalArgumentException")


@pytest.mark.parametrize("rules", ["RULE:[a-z&&[^b]]/x/", "RULE:(?s)a.b/x/", "RULE:\\p{L}/x/"])
def test_untranslatable_java_constructs_are_refused_not_misread(rules: str) -> None:
    with pytest.raises(InvalidSslMappingRule, match="not supported"):
        SslPrincipalMapper(rules)
