"""Differential test: our principal mapping against Kafka 4.3.1's own classes.

``tests/java/KafkaMappingHarness.java`` (compiled at test time against the Kafka jars by
:func:`devtools.java.compile_harness`) answers thousands of seeded-random cases with
``SslPrincipalMapper``, ``KerberosShortNamer``/``KerberosName`` and ``X500Principal.getName()``;
ours must give the same short name, or fail with the same Java exception (and, for Kafka's
own errors, the same message).  The generators build realistic inputs from small grammars:

* ``ssl.principal.mapping.rules``: lists of ``RULE:pattern/replacement/[LU]`` and ``DEFAULT``,
  patterns over DN attributes with capturing, lazy, possessive, named and non-capturing
  groups, ``(?i)``, ``\\Q..\\E`` and POSIX classes, replacements with ``$n`` (also beyond the
  group count: Kafka's literal back-reference escaping), ``${name}`` and ``\\$``;
* ``sasl.kerberos.principal.to.local.rules``: ``RULE:[n:fmt](regex)s/pat/repl/g/L|U`` with
  every optional part, ``DEFAULT``, and names with and without host and realm;
* distinguished names with escaped specials, ``\\xx`` hex pairs, quoted values, multi-valued
  RDNs, ``#hex`` DER values, OIDs and non-ASCII text, fed to ``X500Principal`` alone and, as
  Kafka's ``DefaultKafkaPrincipalBuilder`` does, before the SSL rules.

A small share of the rules use a Java construct :mod:`store.mapping.java_regex` deliberately
refuses (class intersection, nested classes, Unicode properties, ``\\G``, flags other than
``i``): those cases must raise our typed refusal (``JavaRegexUnsupported``), whatever Kafka says.
Syntax-error messages are Python's, not Java's (documented), so for ``PatternSyntaxException``
and ``X500Principal``'s ``IllegalArgumentException`` only the exception class is compared.

No broker is needed, only the jars (hence the ``kafka`` mark).
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devtools.java import SHORT_RUN_JVM_OPTIONS, compile_harness, run_harness
from devtools.maven import kafka_classpath
from store.mapping import KerberosName, KerberosShortNamer, SslPrincipalMapper, x500_get_name
from store.mapping.java_regex import JavaRegexUnsupported, java_exception_is

pytestmark = pytest.mark.kafka

SEED = int(os.environ.get("ACLSTORE_MAPPING_DIFF_SEED", "371"))
SSL_CASES = 2500
KERBEROS_CASES = 2000
X500_CASES = 1500
REFUSED_SHARE = 0.03
HARNESS = Path(__file__).resolve().parents[1] / "java" / "KafkaMappingHarness.java"


@dataclass(frozen=True)
class Case:
    payload: dict[str, Any]
    refused: bool = False  # uses a Java construct java_regex refuses on purpose


# --- distinguished names ----------------------------------------------------------------------

KEYWORDS = ["CN"] * 6 + ["OU"] * 3 + ["O", "O", "L", "ST", "C", "DC", "DC", "UID", "STREET"]
KEYWORDS += ["EMAILADDRESS", "SERIALNUMBER", "T", "S", "OID.2.5.4.3", "2.5.4.11", "1.2.3.4", "cn", "Ou"]
WORDS = [
    "alice", "Bob", "kafka-broker-1", "svc.orders", "ServiceUsers", "Example Org", "ACME, Inc.",
    "a+b", "x=y", "O'Brien", "#1", "100%", "München", "José", "東京", "straße", "ΟΔΟΣ", "İstanbul",
    "<tag>", 'say "hi"', "semi;colon", "back\\slash", "US", "example", "com", "a", "",
]  # fmt: skip
_DN_SPECIALS = ',+<>;"\\=#'


def _escape_value(rng: random.Random, value: str) -> str:
    """One RFC 2253 spelling of ``value``: backslash escapes, some chars as ``\\xx`` UTF-8 hex."""
    out: list[str] = []
    for i, char in enumerate(value):
        roll = rng.random()
        if roll < 0.08 and char not in " ":
            out.append("".join(f"\\{byte:02x}" for byte in char.encode()))
        elif char in _DN_SPECIALS or (char == " " and (i == 0 or i == len(value) - 1)):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _der_value(rng: random.Random, value: str) -> str:
    """``#hex``: the value as a DER string (UTF8, Printable, IA5, T61, BMP) or an OCTET STRING."""
    tag, data = rng.choice(
        [(0x0C, value.encode()), (0x13, value.encode("ascii", "replace")),
         (0x16, value.encode("ascii", "replace")), (0x14, value.encode("latin-1", "replace")),
         (0x1E, value.encode("utf-16-be")), (0x04, value.encode())]
    )  # fmt: skip
    length = bytes([len(data)]) if len(data) < 0x80 else bytes([0x81, len(data)])
    return "#" + (bytes([tag]) + length + data).hex()


def _ava(rng: random.Random) -> str:
    keyword = rng.choice(KEYWORDS)
    value = rng.choice(WORDS)
    style = rng.random()
    if style < 0.65:
        text = _escape_value(rng, value)
    elif style < 0.8:
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    elif style < 0.9:
        text = _der_value(rng, value)
    else:
        text = rng.choice([" ", "  "]) + _escape_value(rng, value) + rng.choice(["", " "])
    space = rng.choice(["", "", "", " "])
    return f"{keyword}{space}={space}{text}"


def random_dn(rng: random.Random) -> str:
    rdns = []
    for _ in range(rng.randint(1, 5)):
        avas = [_ava(rng) for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 3))]
        rdns.append("+".join(avas))
    dn = rng.choice([",", ",", ", ", ";", " , "]).join(rdns)
    if rng.random() < 0.06:  # broken on purpose: both sides must refuse it the same way
        dn = rng.choice([dn + "+", dn + "\\", "=" + dn, dn + ",CN", dn.replace("=", "", 1), dn + ",CN=<"])
    return dn


def simple_dn(rng: random.Random) -> str:
    """A name already in ``getName()`` form (as rules are usually tested)."""
    keys = rng.sample(["CN", "OU", "O", "L", "ST", "C", "DC"], rng.randint(1, 5))
    return ",".join(f"{key}={_escape_value(rng, rng.choice(WORDS[:-1]))}" for key in keys)


# --- ssl.principal.mapping.rules -------------------------------------------------------------

CAPTURES = [
    "(.*?)", "(.*)", "([^,]+)", "([^,]*)", "([a-zA-Z0-9._-]+)", "(\\w+)", "([^,+]+)", "[^,]*",
    "(.+?)", "([^,]++)", "(?:[^,]*)", "(\\p{Alnum}*)", "([\\p{Lower}\\d-]+)", "(\\S+)", "(.*+)",
]  # fmt: skip
REFUSED = ["([a-z&&[^q]]+)", "(\\p{L}+)", "(?s)(.*)", "\\G(.*)", "([a[b]]*)", "(?m)(.*)"]
SSL_KEYS = ["CN", "CN", "OU", "O", "DC", "C", "(?:OU|O)", "[A-Z]+", "[Cc][Nn]"]
REPLACEMENT_PARTS = ["$1", "$1", "$2", "$3", "@", ".", "svc-", "\\$", "$0", "$12", "$1$2", "-", "x"]


def _literal(rng: random.Random) -> str:
    word = rng.choice(WORDS[:-1])
    if rng.random() < 0.3:
        return "\\Q" + word.replace("\\", "") + "\\E"
    return re.sub(r"([\\.^$|?*+()\[\]{}/])", r"\\\1", word)


def _ssl_pattern(rng: random.Random, refused: bool) -> tuple[str, bool]:
    """A DN pattern; the bool says whether it has a named group ``u``."""
    named = False
    if rng.random() < 0.15:
        body = rng.choice(["^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$", ".*CN=([^,]+).*", "(.*)", "CN=(.*)"])
    else:
        parts = []
        for index in range(rng.randint(1, 4)):
            key = rng.choice(SSL_KEYS)
            if index == 0 and not named and rng.random() < 0.1:
                value, named = "(?<u>[^,]+)", True
            else:
                value = rng.choice(CAPTURES) if rng.random() < 0.75 else _literal(rng)
            parts.append(f"{key}={value}")
        body = ",".join(parts) + rng.choice(["", "", ".*", "(,.*)?", ",.*", "(,[^,]*)*"])
        body = rng.choice(["", "^"]) + body + rng.choice(["", "$"])
    if refused:
        body = body + rng.choice(REFUSED)
    if rng.random() < 0.08 and not refused:
        body = "(?i)" + body
    return body.replace("/", "\\/"), named


def _ssl_rule(rng: random.Random, refused: bool, may_break: bool) -> str:
    if may_break and rng.random() < 0.04:
        return rng.choice(
            ["RULE:(a/x/", "RULE:a{/x/", "RULE:[z-a]/x/", "RULE:CN=(.*)/$1/Q", "RULE:CN=(.*)/$1",
             "RULE:x/$/", "RULE:(a)/$x/", "RULE:a/b\\/", "RULE:(?<n>a)/${m}/", "RULE:*a/x/"]
        )  # fmt: skip
    pattern, named = _ssl_pattern(rng, refused)
    parts = [rng.choice(REPLACEMENT_PARTS) for _ in range(rng.randint(1, 3))]
    if named and rng.random() < 0.5:
        parts.append("${u}")
    return f"RULE:{pattern}/{''.join(parts)}/{rng.choice(['', '', 'L', 'U'])}"


def ssl_case(rng: random.Random) -> Case:
    refused = rng.random() < REFUSED_SHARE
    rules = [_ssl_rule(rng, refused and i == 0, not refused) for i in range(rng.randint(1, 4))]
    if rng.random() < 0.5:
        rules.append("DEFAULT")
    rng.shuffle(rules)
    text = rng.choice([",", ", ", " ,\n", ",\t", "  ,  "]).join(rules)
    if rng.random() < 0.1:
        text = rng.choice(["", " ", ",", "\n"]) + text + rng.choice(["", ",", " "])
    canonical = rng.random() < 0.6
    dn = random_dn(rng) if canonical else simple_dn(rng)
    return Case({"kind": "ssl", "rules": text, "dn": dn, "x500": canonical}, refused)


# --- sasl.kerberos.principal.to.local.rules ---------------------------------------------------

REALMS = ["EXAMPLE.COM", "EXAMPLE.COM", "OTHER.ORG", "example.com", ""]
USERS = ["alice", "Bob", "kafka", "zookeeper", "hdfs", "svc-1", "admin", "ünï", "ΣΟΦΙΑΣ", "x"]
HOSTS = ["broker1.example.com", "localhost", "10.0.0.1", "admin", "ZK-2"]
FORMATS = {
    1: ["$1", "$1", "$1@$0", "$0.$1", "u-$1", "$1;$0"],
    2: ["$1", "$2", "$1/$2", "$1@$0", "$1;$2", "$2:$1@$0", "$1.$2"],
}
MATCHES = [
    ".*", ".*@EXAMPLE\\.COM", "[a-z]+@.*", "kafka.*", "^.*;admin$", "[^@]*@OTHER\\.ORG",
    "alice@.*", "\\p{Lower}+", "[^.]*", "\\w+", "[\\w-]+;[\\w.-]+",
]  # fmt: skip
FROMS = [
    "@.*", "(.*)@.*", "\\..*", "^", "$", "x*", "([a-z]+)-(\\d+)", "[aeiou]", ";admin$",
    "@EXAMPLE\\.COM", "(\\w)(\\w)", ";.*", "(.*):(.*)@.*", "[-.]", "(?<h>[^;]+);.*", "(?i)KAFKA",
]  # fmt: skip
TOS = ["", "$1", "$2-$1", "svc", "\\$", "_", "$1$2", "${h}", "$0", "$3"]
# A (match) cannot hold ")" (Kafka's rule syntax), so inline flags are refused in s/from/ only.
KERBEROS_REFUSED = ["\\p{L}+", "[a-z&&[^q]]*", "\\G.", "[[a]b]", "\\p{IsAlphabetic}+"]


def _kerberos_rule(rng: random.Random, refused: bool, may_break: bool) -> str:
    if rng.random() < 0.15 and not refused:
        return "DEFAULT"
    if may_break and rng.random() < 0.04:
        return rng.choice(
            ["RULE:[1:$1", "RULE:[1:$1](a", "RULE:[1:$1]s/a/b", "RULE:[x:$1]", "RULE:[:$1]", "",
             "RULE:[99999999999:$1]", "RULE:[1:$1](a{)", "RULE:[1:$1]s/(/x/", "RULE:[2:$3]"]
        )  # fmt: skip
    n = rng.choice([1, 1, 2, 2, 2, 0, 3]) if rng.random() < 0.1 else rng.choice([1, 2])
    fmt = rng.choice(FORMATS.get(n, ["$1"])) if rng.random() > 0.04 else rng.choice(["$3", "$", "x$"])
    rule = f"RULE:[{n}:{fmt}]"
    refuse_in_from = refused and rng.random() < 0.3
    if rng.random() < 0.6 or (refused and not refuse_in_from):
        match = rng.choice(KERBEROS_REFUSED) if refused and not refuse_in_from else rng.choice(MATCHES)
        rule += f"({match})"
    if rng.random() < 0.6 or refuse_in_from:
        pattern = rng.choice(["(?s).", "(?m)^"]) if refuse_in_from else rng.choice(FROMS)
        rule += f"s/{pattern}/{rng.choice(TOS)}/" + rng.choice(["", "", "g"])
    return rule + rng.choice(["", "", "", "/L", "/U", "L"])


def _kerberos_name(rng: random.Random) -> str:
    user = rng.choice(USERS)
    shape = rng.random()
    if shape < 0.35:
        return f"{user}@{rng.choice(REALMS)}"
    if shape < 0.8:
        return f"{user}/{rng.choice(HOSTS)}@{rng.choice(REALMS)}"
    if shape < 0.9:
        return rng.choice([user, f"{user}/{rng.choice(HOSTS)}"])
    return rng.choice([f"{user}@a@b", f"{user}/a/b@R", f"@{rng.choice(REALMS)}", f"{user}/@R"])


def kerberos_case(rng: random.Random) -> Case:
    refused = rng.random() < REFUSED_SHARE
    rules = [_kerberos_rule(rng, refused and i == 0, not refused) for i in range(rng.randint(1, 4))]
    if rng.random() < 0.4:
        rules.append("DEFAULT")
    rng.shuffle(rules)
    payload = {"kind": "kerberos", "realm": rng.choice(REALMS[:3]), "rules": rules}
    return Case({**payload, "name": _kerberos_name(rng)}, refused)


def x500_case(rng: random.Random) -> Case:
    return Case({"kind": "x500", "dn": random_dn(rng)})


# --- ours, Kafka's, and the comparison ----------------------------------------------------------


def ours(payload: dict[str, Any]) -> tuple[str, str] | BaseException:
    """Our answer: ``("ok", name)`` or the exception we raise."""
    try:
        if payload["kind"] == "ssl":
            mapper = SslPrincipalMapper(payload["rules"])  # config time: before any client
            dn = x500_get_name(payload["dn"]) if payload["x500"] else payload["dn"]
            return ("ok", mapper.get_name(dn))
        if payload["kind"] == "kerberos":
            namer = KerberosShortNamer(payload["realm"], payload["rules"])
            return ("ok", namer.short_name(KerberosName.parse(payload["name"])))
        return ("ok", x500_get_name(payload["dn"]))
    except Exception as exc:  # every failure is compared with Kafka's
        return exc


def _refusal(error: BaseException | None) -> bool:
    while error is not None:
        if isinstance(error, JavaRegexUnsupported):
            return True
        error = error.__cause__
    return False


def _compare_message(java: dict[str, str], payload: dict[str, Any]) -> bool:
    """Kafka's own messages are compared; java.util.regex's and X500Name's are not (documented)."""
    if java["error"] == "PatternSyntaxException" or payload["kind"] == "x500":
        return False
    return not java["message"].startswith(("improperly specified input name", "Invalid rule: `"))


def disagreement(case: Case, java: dict[str, str]) -> str | None:
    """Why ours differs from Kafka's answer on ``case``, or None when they agree."""
    mine = ours(case.payload)
    if case.refused:
        return None if isinstance(mine, Exception) and _refusal(mine) else f"not refused: {mine!r}"
    if isinstance(mine, BaseException):
        if "ok" in java:
            return f"ours raised {mine!r}, Kafka gave {java['ok']!r}"
        if not java_exception_is(mine, java["error"]):
            return f"ours raised {mine!r}, Kafka {java['error']}: {java['message']}"
        if _compare_message(java, case.payload) and str(mine) != java["message"]:
            return f"message {str(mine)!r} != Kafka's {java['message']!r}"
        return None
    if "ok" not in java:
        return f"ours gave {mine[1]!r}, Kafka raised {java['error']}: {java['message']}"
    return None if mine[1] == java["ok"] else f"ours gave {mine[1]!r}, Kafka {java['ok']!r}"


def generate(seed: int) -> list[Case]:
    rng = random.Random(seed)
    makers: list[tuple[Callable[[random.Random], Case], int]] = [
        (ssl_case, SSL_CASES),
        (kerberos_case, KERBEROS_CASES),
        (x500_case, X500_CASES),
    ]
    return [make(rng) for make, count in makers for _ in range(count)]


def kafka_answers(cases: list[Case]) -> list[dict[str, str]]:
    classpath = kafka_classpath()
    build = compile_harness(HARNESS, classpath)
    stdin = "".join(json.dumps(case.payload) + "\n" for case in cases)
    out = run_harness(build, "KafkaMappingHarness", classpath, stdin=stdin, timeout=120,
                      jvm_options=SHORT_RUN_JVM_OPTIONS)
    answers = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(answers) == len(cases), f"harness answered {len(answers)} of {len(cases)} cases"
    return answers


def outcome(case: Case, java: dict[str, str]) -> str:
    return f"{case.payload['kind']}:{'refused' if case.refused else java.get('error', 'ok')}"


def test_ours_equals_kafkas_principal_mapping() -> None:
    cases = generate(SEED)
    answers = kafka_answers(cases)
    mismatches = [
        f"{case.payload}: {why}"
        for case, java in zip(cases, answers, strict=True)
        if (why := disagreement(case, java)) is not None
    ]
    tally = Counter(outcome(case, java) for case, java in zip(cases, answers, strict=True))
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ:\n" + "\n".join(mismatches[:25])
    # The generators must exercise every outcome, or agreement would prove little.
    for kind, share in (("ssl", 0.4), ("kerberos", 0.3), ("x500", 0.6)):
        total = sum(count for key, count in tally.items() if key.startswith(kind + ":"))
        assert tally[f"{kind}:ok"] >= share * total, tally
    for key in ("ssl:NoMatchingRule", "ssl:PatternSyntaxException", "ssl:IllegalArgumentException",
                "ssl:refused", "kerberos:NoMatchingRule", "kerberos:BadFormatString",
                "kerberos:IllegalArgumentException", "kerberos:refused",
                "x500:IllegalArgumentException"):  # fmt: skip
        assert tally[key] >= 5, (key, tally)


# Java picks the final sigma by the JDK word BreakIterator (store/mapping/java_case.py): strings
# of capital sigmas among letters, marks, digits, word punctuation and format characters.
SIGMA_ALPHABET = [
    "\u03a3",
    "\u03a3",
    "\u039f",
    "A",
    "-",
    "_",
    "2",
    ".",
    "'",
    ",",
    " ",
    "\u00ad",
    "\u0301",
    "\u200b",
    "#",
    "%",
    "\u0130",
    "\u02b0",
    "\u0964",
    "\u4e00",
    "$",
    "1.5",
]


def test_final_sigma_lower_casing_equals_kafkas() -> None:
    rng = random.Random(SEED)
    texts = ["".join(rng.choices(SIGMA_ALPHABET, k=rng.randint(1, 8))) for _ in range(1000)]
    cases = [Case({"kind": "ssl", "rules": "RULE:(.*)/$1/L", "dn": text, "x500": False}) for text in texts]
    cases += [
        Case(
            {
                "kind": "kerberos",
                "realm": "R",
                "rules": ["RULE:[1:$1]/L"],
                "name": text.replace("@", "") + "@R",
            }
        )
        for text in texts
    ]
    answers = kafka_answers(cases)
    mismatches = [
        f"{case.payload}: {why}"
        for case, java in zip(cases, answers, strict=True)
        if (why := disagreement(case, java)) is not None
    ]
    assert not mismatches, "\n".join(mismatches[:25])
    lowered = [java["ok"] for java in answers if "ok" in java]
    assert len(lowered) == len(cases)
    assert sum("\u03c2" in text for text in lowered) >= 50 and sum("\u03c3" in text for text in lowered) >= 50
