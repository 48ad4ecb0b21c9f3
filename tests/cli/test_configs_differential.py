"""``aclstore configs --add-config`` parsed as kafka-configs.sh parses it.

Kafka's own ``kafka.admin.ConfigCommand.parseConfigsToBeAdded`` (through
``tests/java/KafkaConfigParseHarness.java``, one JVM, no broker) and
:func:`cli.configs.parse_add_config` read the same values, hand-picked and generated:
both must give the same settings, or both refuse with the same message; and the same text as a
``--delete-config`` value must name the same keys.

Where the two commands overlap and where they do not is listed in the README ("The store's own
settings"): the grammar of ``--add-config`` is shared; the entity options, the output and the
broker-side meaning of ``super.users`` are not.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cli import acl_command as ac
from cli.configs import parse_add_config, parse_delete_config
from devtools.java import SHORT_RUN_JVM_OPTIONS, compile_harness, run_harness
from devtools.maven import kafka_classpath

pytestmark = pytest.mark.kafka  # a JVM with Kafka's jars, as the broker tier needs

HARNESS = Path(__file__).resolve().parents[1] / "java" / "KafkaConfigParseHarness.java"

CHOSEN = [
    "super.users=User:Bob;User:Alice",
    "super.users=[User:Bob;User:Alice]",
    "super.users=[User:Bob;User:Alice],allow.everyone.if.no.acl.found=true",
    "allow.everyone.if.no.acl.found = true , super.users= User:a ",
    "k=[a,b,c]",
    "k=[a=b]",
    "k=v=w",
    "k=",
    "=v",
    "k",
    "",
    ",",
    "a=1,",
    "a=1,,b=2",
    "a=1,a=2",
    "k=[x",
    "k=x]",
    "k=[[x]]",
    "k=a[b]c",
    "bad key=1",
    "k$1=2",
    "k=\tv\t",
    # Java's trim (chars <= U+0020: control chars go, Unicode spaces stay) and Java's \s around
    # the = (space, \t, \n, U+000B, \f, \r: not U+0001, not U+00A0).
    "\x01super.users\x1f=\x0bUser:a;User:b\x01",
    "allow.everyone.if.no.acl.found=\u00a0true",
    "allow.everyone.if.no.acl.found\u00a0=true",
    "\u2003k=v",
    "k\x0b=\x0cv\r",
    "k\x01=v",
    "k=\x01[a,b]\x85",
    "k=v\u2028,\x01j=w\n",
]


def generated(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    keys = ["super.users", "allow.everyone.if.no.acl.found", "acl.format.version", "a", "k.1", "x y",
            "", "k$"]  # fmt: skip
    values = ["User:a;User:b", "[User:a,User:b]", "", " v ", "[a", "b]", "v=w", "[x=y]", "true",
              "[]", "a,b", "1", "User:x", "[User:a;User:b]"]  # fmt: skip
    equals = ["=", "=", "=", " = ", "= ", "==", "", "\x0b=\x0c", "\x01=", "=\u00a0"]
    # What Java's trim removes (<= U+0020) and what it keeps (Unicode spaces, U+0085, U+007F).
    # Keys get only the first kind: with two bad keys, Kafka names the first of its hash order
    # (CHOSEN has keys with the second kind, one to a value).
    trimmed = ["", "", "", "\x01", "\x1f", "\t", "\r"]
    pads = [*trimmed, "\u00a0", "\u2003", "\x85", "\u2028", "\x7f"]
    items = []
    for _ in range(count):
        parts = [
            f"{rng.choice(trimmed)}{rng.choice(keys)}{rng.choice(trimmed)}{rng.choice(equals)}"
            f"{rng.choice(pads)}{rng.choice(values)}{rng.choice(pads)}"
            for _ in range(rng.randint(1, 3))
        ]
        items.append(rng.choice([",", ",", ",", ", ", ",,"]).join(parts))
    return items


VALUES = CHOSEN + generated(seed=15, count=300)


def kafka_answers(values: list[str]) -> list[dict[str, object]]:
    classpath = kafka_classpath()
    build = compile_harness(HARNESS, classpath)
    stdin = "".join(json.dumps(v) + "\n" for v in values)
    out = run_harness(build, "KafkaConfigParseHarness", classpath, stdin=stdin, timeout=120,
                      jvm_options=SHORT_RUN_JVM_OPTIONS)
    # Line feeds only: the answers hold U+0085 and U+2028 unescaped, which splitlines() splits at.
    answers = [json.loads(line) for line in out.split("\n") if line.strip()]
    assert len(answers) == len(values), f"the harness answered {len(answers)} of {len(values)}"
    return answers


def ours(value: str) -> dict[str, object]:
    try:
        return {"ok": parse_add_config(value)}
    except ac.AclCommandError as exc:
        return {"error": exc.message}


def _message(kafka: dict[str, object]) -> str:
    return str(kafka["message"]).removeprefix("requirement failed: ")


def test_add_config_parses_as_kafka_configs() -> None:
    differences = []
    for value, kafka in zip(VALUES, kafka_answers(VALUES), strict=True):
        mine = ours(value)
        same = (
            mine == {"ok": kafka["ok"]}
            if "ok" in kafka
            else "error" in mine and str(mine["error"]).startswith(_message(kafka))
        )
        same = same and parse_delete_config([value]) == kafka["delete"]
        if not same:
            differences.append(
                f"{value!r}: kafka {kafka} ours {mine}, delete {parse_delete_config([value])}"
            )
    assert not differences, f"{len(differences)} of {len(VALUES)} differ:\n" + "\n".join(
        differences[:10]
    )
