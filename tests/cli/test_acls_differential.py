"""``aclstore acls`` side by side with Kafka's own kafka-acls.sh (``org.apache.kafka.tools.AclCommand``).

The same command lines (the examples of Kafka's authorization docs, duplicates, removals, lists
with every pattern type and filter, the error cases of kafka-acls.sh, generated ones, values
padded with control chars and Unicode spaces, and joptsimple's other spellings of options) run
through Kafka's ``AclCommand`` against a real broker with ``StandardAuthorizer`` (all of them in
one JVM: ``tests/java/AclCommandDriver.java``) and through ``aclstore acls`` against a fresh
embedded store.  Each run's exit code, stdout and stderr must be equal, and so must the ACLs left
at the end, after only what the README lists as deliberate differences:

* Kafka prints blocks, the entries of a block, ``already exists`` lines, principals and the
  operations of ``only supports operations [...]`` in hash order: both sides are sorted;
* Kafka's Java stack trace after ``Error while executing ACL command: ...`` (and aclstore's
  ``Caused by:`` line) are cut;
* aclstore's ``(log offset N)`` line on stderr is dropped;
* after an option error only the message (stderr's first line) is compared; each tool then
  prints its own usage, and both must print one.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from sidecar_support import admin_client, start_node

import cli
from devtools.java import SHORT_RUN_JVM_OPTIONS, compile_harness, run_harness
from devtools.kafka_process import LocalKafka
from devtools.maven import kafka_tools_classpath
from replicator.server.node import Node
from store.acl import AclBindingFilter

pytestmark = pytest.mark.kafka

DRIVER = Path(__file__).resolve().parents[1] / "java" / "AclCommandDriver.java"
SETTLE_MS = "60"
EXECUTION_ERROR = "Error while executing ACL command: "
STANDARD_AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # PLAINTEXT callers (the tool, the controller link) are User:ANONYMOUS.
    "super.users": "User:ANONYMOUS",
}

# Kafka's docs (authorization chapter; KIP-290), in their order, then what an operator does next.
DOCS = [
    "--add --allow-principal User:Bob --allow-principal User:Alice --allow-host 198.51.100.0 "
    "--allow-host 198.51.100.1 --operation Read --operation Write --topic Test-topic",
    "--add --allow-principal 'User:*' --allow-host '*' --deny-principal User:BadBob "
    "--deny-host 198.51.100.3 --operation Read --topic Test-topic",
    "--add --allow-principal User:Peter --allow-host 198.51.200.1 --producer --topic '*'",
    "--add --allow-principal User:Jane --producer --topic Test- --resource-pattern-type prefixed",
    "--list --topic Test-topic",
    "--list --topic '*'",
    "--list --topic Test-topic --resource-pattern-type match",
    "--add --allow-principal User:Bob --producer --topic Test-topic",
    "--add --allow-principal User:Alice --consumer --topic Test-topic --group Group-1",
    "--add --allow-principal User:Bob --operation Read --group my-app- --resource-pattern-type prefixed",
    "--list",
    "--remove --allow-principal User:Jane --producer --topic Test- --resource-pattern-type Prefixed "
    "--force",
    "--list --topic Test-topic --resource-pattern-type match",
    "--remove --allow-principal User:Bob --allow-principal User:Alice --allow-host 198.51.100.0 "
    "--allow-host 198.51.100.1 --operation Read --operation Write --topic Test-topic --force",
    "--list",
]

# Duplicates, every pattern type and filter, roles, other resource types, removals.
MORE = [
    "--add --allow-principal User:Peter --allow-host 198.51.200.1 --producer --topic '*'",
    "--add --allow-principal 'User:*' --operation Read --topic Test-topic",
    "--add --allow-principal User:Bob --allow-principal User:Bob --operation Read --operation READ "
    "--operation read --topic dup --topic dup",
    "--add --allow-principal User:Carl --producer --idempotent --topic t1 --transactional-id tx-",
    "--add --allow-principal User:Carl --producer --topic t1 --transactional-id tx- "
    "--resource-pattern-type prefixed",
    "--add --allow-principal User:Dora --consumer --producer --topic t2 --group g2 --cluster",
    "--add --allow-principal User:Eve --operation DescribeConfigs --operation describeconfigs "
    "--operation AlterConfigs --group g3",
    "--add --allow-principal User:Eve --operation ClusterAction --operation IdempotentWrite --cluster",
    "--add --allow-principal User:Eve --operation Describe --delegation-token tok-1",
    "--add --allow-principal User:Eve --operation CreateTokens --operation DescribeTokens "
    "--user-principal User:Fred",
    "--add --deny-principal User:Mallory --operation All --topic '*' --group '*'",
    "--add --allow-principal Group:ops --deny-principal User:Mallory --deny-host 10.0.0.66 "
    "--operation Alter --topic ops- --resource-pattern-type PREFIXED",
    "--list --topic t1 --topic t2",
    "--list --topic t1 --resource-pattern-type any",
    "--list --topic tx- --resource-pattern-type prefixed",
    "--list --transactional-id tx-1 --resource-pattern-type match",
    "--list --topic ops-1 --resource-pattern-type MATCH",
    "--list --cluster",
    "--list --group g3 --group '*'",
    "--list --delegation-token tok-1 --user-principal User:Fred",
    "--list --principal User:Eve",
    "--list --principal User:Eve --principal User:Nobody --principal User:Mallory",
    "--list --topic '*' --resource-pattern-type match --principal User:Mallory",
    "--list --topic nothing-here",
    "--list --principal --topic t1",
    "--list stray words",
    "--remove --topic dup --operation Write --allow-principal User:Bob --force",
    "--remove --topic dup --force",
    "--remove --topic Test-topic --resource-pattern-type match --force",
    "--remove --allow-principal User:Carl --producer --idempotent --topic t1 --transactional-id tx- "
    "--force",
    "--remove --group '*' --resource-pattern-type any --force",
    "--remove --cluster --deny-principal User:Nobody --operation Alter --force",
    "--remove --topic ops- --resource-pattern-type any --deny-principal User:Mallory "
    "--deny-host 10.0.0.66 --operation Alter --force",
    "--list",
]

# kafka-acls.sh's errors: option errors (stderr + usage) and failed runs (stdout).
ERRORS = [
    "--add --allow-principal User:Bob --operation Reed --topic t",
    "--add --allow-principal User:Bob --operation DESCRIBE_CONFIGS --topic t",
    "--add --allow-principal User:Bob --operation Describe_Configs --topic t",
    "--add --allow-principal User:Bob --operation Any --topic t",
    "--add --allow-principal User:Bob --operation Write --group g",
    "--add --allow-principal User:Bob --operation Read --cluster",
    "--remove --allow-principal User:Bob --operation Reed --topic t --force",
    "--list --topic t --resource-pattern-type bogus",
    "--add --allow-principal User:Bob --topic t --resource-pattern-type bogus",
    "--add --allow-principal User:Bob --topic t --resource-pattern-type unknown",
    "--add --allow-principal User:Bob --topic t --resource-pattern-type match",
    "--add --allow-principal User:Bob --topic t --resource-pattern-type any",
    "--add --allow-principal bob --topic t",
    "--list --principal bob",
    "--add --allow-principal User: --topic t-empty-name",
    "--add --allow-principal :x --topic t-empty-type",
    "--add --allow-principal User:Bob --allow-host 'not a host' --topic t-host",
    "--add --allow-principal User:Bob --allow-host '' --topic t-no-host",
    "--add --allow-principal User:Bob --topic ''",
    "--add --allow-principal User:Bob --topic ' padded '",
    "--add --allow-principal User:Bob --transactional-id ' padded '",
    # One resource refused: Kafka tries its resources in hash order and stops at a refusal.
    "--add --allow-principal User:Bob --topic 'a b'",
    "--add --allow-principal User:Bob --group ' '",
    "--add --allow-principal 'User:*' --topic '*' --resource-pattern-type prefixed",
    "--add --allow-principal User:Bob --cluster --resource-pattern-type prefixed",
    "--list --topic t-empty-name --topic t-empty-type --topic t-host --topic t-no-host",
    "--list --transactional-id ' padded ' --topic padded",
    "--list --topic ''",
    "--remove --topic '' --force",
    "--remove --topic t-empty-name --allow-principal User: --operation All --force",
    "--remove --topic 't-host' --resource-pattern-type match --allow-principal User:Bob "
    "--allow-host 'not a host' --force",
    "--list --topic t-empty-name --topic t-host --resource-pattern-type any",
    "--add --topic t",
    "--add --allow-principal User:Bob",
    "--remove --force",
    "--add --allow-principal User:Bob --topic t --bogus",
    "--list --top t",
    "--add --allow-principal User:Bob --topic",
    "--add --list --topic t",
    "--topic t",
    "--list --producer",
    "--list --allow-principal User:Bob",
    "--add --producer --operation Read --allow-principal User:Bob --topic t",
    "--add --consumer --deny-principal User:Bob --topic t --group g",
    "--add --allow-principal User:Bob --principal User:Bob --topic t",
    "--add --allow-principal User:Bob --topic t --principal",
    "--add --allow-principal User:Bob --producer",
    "--add --allow-principal User:Bob --idempotent --topic t",
    "--add --allow-principal User:Bob --consumer --topic t",
    "--add --allow-principal User:Bob --consumer --topic t --group g --cluster",
]


def generated(seed: int, count: int) -> list[str]:
    """Random command lines over small pools, so that they meet: adds, duplicates, lists and
    removals with every pattern type, roles, and operations Kafka refuses."""
    rng = random.Random(seed)
    topics = ["Test-topic", "Test-", "'*'", "orders", "orders-eu", "o"]
    groups = ["Group-1", "g-", "'*'"]
    principals = ["User:Bob", "User:Alice", "'User:*'", "Group:ops", "User:CN=a,O=b"]
    hosts = ["'*'", "198.51.100.7", "10.0.0.1"]
    operations = ["Read", "write", "DESCRIBE", "DescribeConfigs", "describeconfigs", "All", "Create",
                  "Delete", "Alter", "AlterConfigs", "IdempotentWrite", "ClusterAction"]  # fmt: skip
    patterns = ["", "literal", "prefixed", "PREFIXED", "any", "match", "Match"]
    lines = []
    for _ in range(count):
        action = rng.choice(["--add"] * 4 + ["--list"] * 3 + ["--remove"] * 2)
        args = [action]
        # Two resources are of one type: Kafka checks the operations of each resource in hash
        # order, so with two types refusing them, which one it names is chance.
        kind = rng.choice(["topic", "topic", "group", "cluster", "transactional-id"])
        for _ in range(rng.randint(1, 2)):
            if kind == "cluster":
                args.append("--cluster")
            else:
                pool = groups if kind == "group" else topics
                args += [f"--{kind}", rng.choice(pool)]
        pattern = rng.choice(patterns if action != "--add" else patterns[:4] + patterns[:4] + patterns)
        if pattern:
            args += ["--resource-pattern-type", pattern]
        role = rng.random()
        if action != "--list" and role < 0.15:
            args += ["--producer"] + (["--idempotent"] if rng.random() < 0.5 else [])
        elif action != "--list" and role < 0.25:
            args += ["--consumer", "--group", rng.choice(groups)]
        elif action != "--list" or role < 0.3:
            for _ in range(rng.randint(0 if action != "--add" else 1, 2)):
                side = rng.choice(["allow", "allow", "deny"])
                if action == "--list":
                    args += ["--principal", rng.choice(principals)]
                    continue
                args += [f"--{side}-principal", rng.choice(principals)]
                if rng.random() < 0.4:
                    args += [f"--{side}-host", rng.choice(hosts)]
            if action != "--list":
                for _ in range(rng.randint(0, 2)):
                    args += ["--operation", rng.choice(operations)]
        if action == "--remove":
            args.append("--force")
        lines.append(" ".join(args))
    lines.append("--list")
    return lines


def line(*words: str) -> str:
    """A command line whose words ``shlex.split`` gives back exactly, whatever they hold."""
    return shlex.join(words)


# Java's String.trim() removes every char <= U+0020 from both ends and nothing else; Python's
# str.strip() removes Unicode whitespace instead (U+00A0, U+2003, U+0085...) and keeps U+0001.
TRIMMED_PADS = ["\x01", "\x1f", "\t", "\n", "\x0b", "\r", " "]
KEPT_PADS = ["\u00a0", "\u2003", "\u3000", "\x85", "\u2028", "\x7f", "\u200b", "\ufeff"]

# Values padded with both kinds: what Kafka trims (names, principals, hosts, operations; not
# transactional ids) and what it keeps, stored, listed, refused.
PADDED = [
    line("--add", "--allow-principal", "User:Bob", "--topic", "name\u00a0"),
    line("--add", "--allow-principal", "User:Bob", "--operation", "Read\u00a0", "--topic", "pad-",
         "--resource-pattern-type", "prefixed"),
    line("--add", "--allow-principal", "User:Bob", "--operation", "\u2003All", "--cluster"),
    line("--add", "--allow-principal", "User:Bob", "--group", "\x01name"),
    line("--add", "--allow-principal", "User:Bob", "--operation", "Describe\x01", "--group", "name"),
    line("--add", "--allow-principal", "\u00a0User:x", "--allow-host", "\x0b10.0.0.1\u00a0",
         "--deny-principal", "\x01User:y\r", "--deny-host", "\t10.0.0.2\x1f", "--topic", "t-pad"),
    line("--list", "--principal", "\u00a0User:x"),
    line("--list", "--principal", "\x01User:y"),
    line("--list", "--topic", "\x1fname\u00a0\t", "--group", "name\n"),
    line("--add", "--allow-principal", "User:Bob", "--transactional-id", "\x01tx\u00a0"),
    line("--list", "--transactional-id", "\x01tx\u00a0", "--transactional-id", "tx"),
    line("--add", "--allow-principal", "User:Bob", "--operation", "Describe", "--delegation-token",
         "\ttok\u2003"),
    line("--add", "--allow-principal", "User:Bob", "--operation", "\x85CreateTokens",
         "--user-principal", "User:Fred"),
    line("--add", "--allow-principal", "User:Bob", "--operation", "\x0bDescribeTokens\x01",
         "--user-principal", "\x01User:Fred\x85"),
    line("--add", "--allow-principal", "\x01\u00a0", "--topic", "t-pad"),
    line("--add", "--allow-principal", "User:Bob", "--topic", "\x01\t"),
    line("--add", "--allow-principal", "User:Bob", "--allow-host", "\x01", "--topic", "t-pad"),
    line("--remove", "--allow-principal", "\x01User:y", "--deny-principal", "\x01User:y\r",
         "--deny-host", "10.0.0.2", "--topic", "\tt-pad", "--force"),
    line("--remove", "--topic", "name\u00a0", "--force"),
    line("--list"),
]


def padded(seed: int, count: int) -> list[str]:
    """Random adds, lists and removals whose names, principals, hosts and operations carry control
    chars, Unicode spaces and other chars at either end."""
    rng = random.Random(seed)
    names = {"topic": ["orders", "Test-"], "group": ["Group-1"], "transactional-id": ["tx-"],
             "delegation-token": ["tok"], "user-principal": ["User:Fred"]}  # fmt: skip
    operations = {"topic": ["Read", "Write", "All"], "group": ["Read", "Describe"],
                  "transactional-id": ["Write", "Describe"], "delegation-token": ["Describe"],
                  "user-principal": ["CreateTokens", "DescribeTokens"]}  # fmt: skip

    def pad(value: str) -> str:
        if rng.random() < 0.3:
            return value
        pads = TRIMMED_PADS + KEPT_PADS
        left = "".join(rng.choices(pads, k=rng.randint(0, 2)))
        right = "".join(rng.choices(pads, k=rng.randint(0 if left else 1, 2)))
        return left + value + right

    lines = []
    for _ in range(count):
        action = rng.choice(["--add"] * 3 + ["--list", "--remove"])
        kind = rng.choice(list(names))
        words = [action, f"--{kind}", pad(rng.choice(names[kind]))]
        if rng.random() < 0.3:
            words += ["--resource-pattern-type", "prefixed" if action == "--add" else "match"]
        if action == "--list":
            if rng.random() < 0.5:
                words += ["--principal", pad(rng.choice(["User:Bob", "User:Alice"]))]
        else:
            side = rng.choice(["allow", "deny"])
            words += [f"--{side}-principal", pad(rng.choice(["User:Bob", "User:Alice"]))]
            if rng.random() < 0.5:
                words += [f"--{side}-host", pad(rng.choice(["10.0.0.1", "*"]))]
            words += ["--operation", pad(rng.choice(operations[kind]))]
        if action == "--remove":
            words.append("--force")
        lines.append(line(*words))
    lines.append("--list")
    return lines


# joptsimple's syntax, as Kafka's tools read options: -name is --name, --name=value and
# -name=value give a value (a value given to an option without one is ignored), an option that
# needs a value takes the next word whatever it is, one that may take one (--principal) takes the
# next word unless it starts with - (a lone - is a value), and -- ends the options: the words
# after it, as every word no option takes, are ignored.  No abbreviations: --top is no option,
# and -l is the cluster of one-letter options l, which do not exist.
OPTION_SYNTAX = [
    "-list",
    "-l",
    "-li",
    "--li",
    "-list=yes",
    "--list=yes",
    "--topic=t1 --list",
    "-topic=t1 -list",
    "--list --top t1",
    "--list -h",
    "--list -xyz",
    "--list ---list",
    "--list --=x",
    "--list -=x",
    "--list - ''",
    "--list --Topic t1",
    "-add -allow-principal User:Bob -operation Read -topic single-dash -force",
    "--add --allow-principal User:Bob --topic -dash-billing",
    "--add --allow-principal User:Bob --topic --",
    "--add --allow-principal User:Bob --topic --list",
    "--add --allow-principal User:Bob --topic= --group g-empty",
    "--add --allow-principal=-User:Bob --topic=-dash",
    "--add --allow-principal User:Bob --operation -Read --topic t1",
    "--add --allow-principal User:Bob --allow-host -1.2.3.4 --topic t1",
    "--add --allow-principal User:Bob --resource-pattern-type -literal --topic t1",
    "--add --allow-principal User:Bob --topic t1 --resource-pattern-type=prefixed",
    "--add --allow-principal User:Bob --topic t1 -cluster=yes",
    "--list --principal -x",
    "--list --principal -",
    "--list --principal --",
    "--list --principal= --topic t1",
    "--list --principal --topic t1",
    "--list --topic",
    "-list -topic",
    "--list -- --topic t1",
    "--list -- --bogus",
    "-- --list",
    "--add --allow-principal User:Bob --topic after-marker -- --cluster stray -- words",
    "--list --topic -- -dash-billing",
    "--remove --topic -dash-billing --force -- --topic t1",
    "--list",
]

_VALUED = frozenset(
    {"--topic", "--group", "--transactional-id", "--delegation-token", "--user-principal",
     "--resource-pattern-type", "--operation", "--allow-principal", "--deny-principal",
     "--allow-host", "--deny-host"}
)  # fmt: skip


def respelled(seed: int, count: int) -> list[str]:
    """:func:`generated` lines in joptsimple's other spellings: some options as -name, some values
    joined by =, some values replaced by words that start with -, and -- put somewhere."""
    rng = random.Random(seed)
    dashed = ["-dash-billing", "--", "--list", "-", "--topic", "-x"]
    lines = []
    for text in generated(seed, count)[:-1]:
        words = shlex.split(text)
        if "--force" in words:  # first, before any --: else a removal asks, in Kafka's hash order
            words.remove("--force")
            words.insert(0, "--force")
        out: list[str] = []
        while words:
            word = words.pop(0)
            if not word.startswith("--"):
                out.append(word)
                continue
            name = word[1:] if rng.random() < 0.4 else word
            if word in _VALUED and words:
                value = words.pop(0)
                if rng.random() < 0.15:
                    value = rng.choice(dashed)
                out += [f"{name}={value}"] if rng.random() < 0.25 else [name, value]
            else:
                out.append(name)
        if rng.random() < 0.25:
            out.insert(rng.randint(1, len(out)), "--")
        lines.append(line(*out))
    lines.append("--list")
    return lines


COMMAND_LINES = (
    DOCS + MORE + ERRORS + generated(seed=15, count=60) + PADDED + padded(seed=36, count=60)
    + OPTION_SYNTAX + respelled(seed=37, count=60)
)  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    exit: int
    out: str
    err: str


def run_kafka(bootstrap: str, lines: list[str]) -> tuple[list[Outcome], set[tuple[str, ...]]]:
    """Each line through AclCommand, then the ACLs the broker holds (Kafka's Admin client)."""
    classpath = kafka_tools_classpath()
    build = compile_harness(DRIVER, classpath)
    stdin = "".join(
        json.dumps(["--bootstrap-server", bootstrap, *shlex.split(line)]) + "\n" for line in lines
    )
    stdin += json.dumps(["#describe", bootstrap]) + "\n"
    out = run_harness(build, "AclCommandDriver", classpath, args=[SETTLE_MS], stdin=stdin, timeout=600,
                      jvm_options=SHORT_RUN_JVM_OPTIONS)
    # Line feeds only: the answers hold U+0085 and U+2028 unescaped, which splitlines() splits at.
    *answers, held = [json.loads(text) for text in out.split("\n") if text.strip()]
    assert len(answers) == len(lines), f"the driver answered {len(answers)} of {len(lines)} lines"
    for text, answer in zip(lines, answers, strict=True):  # every char reached AclCommand
        assert answer["argv"][2:] == shlex.split(text), f"AclCommand received {answer['argv']!a}"
    outcomes = [Outcome(a["exit"], a["out"], a["err"]) for a in answers]
    return outcomes, {tuple(row) for row in held["bindings"]}


def run_ours(node: Node, lines: list[str]) -> list[Outcome]:
    assert node.info is not None
    where = ["--store", node.url, "--command-config", str(node.info.credential.properties_path)]
    outcomes = []
    for line in lines:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(["acls", *where, *shlex.split(line)])
            except SystemExit as exit_:
                code = int(exit_.code or 0)
        outcomes.append(Outcome(code, out.getvalue(), err.getvalue()))
    return outcomes


_OPERATIONS_LIST = re.compile(r"^(ResourceType \w+ only supports operations )\[(.*)\]$")
_OFFSET_LINE = re.compile(r"\(log offset -?\d+\)\n\Z")


def _is_single(line: str) -> bool:
    """Lines Kafka prints outside the blocks, in hash order among them."""
    return line.endswith(" already exists.") or line.startswith("ACLs for principal `")


def normal_stdout(text: str) -> tuple[list[str], list[tuple[str, ...]]]:
    """Every line (sorted) and every blank-line-separated block (its lines sorted), with the
    first entry's leading space (``Adding ACLs ...: \\n \\t(entry)``) kept as a count."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(EXECUTION_ERROR):  # Kafka's stack trace, our "Caused by:" after it
            lines = lines[: i + 1]
            break
    lead = sum(line.startswith(" \t") for line in lines)
    flat = [line.removeprefix(" ") for line in lines]
    rest = "\n".join(line for line in flat if not _is_single(line))
    blocks = sorted(tuple(sorted(b.split("\n"))) for b in rest.split("\n\n") if b.strip())
    return [f"{lead} first entries", *sorted(flat)], blocks


def normal_stderr(text: str, *, ours: bool) -> tuple[str, bool]:
    """The message (the first line, an operation list sorted) and whether more follows."""
    if ours:
        text = _OFFSET_LINE.sub("", text)
    first, _, rest = text.partition("\n")
    listed = _OPERATIONS_LIST.match(first)
    if listed:
        # TwoPhaseCommit (KIP-939) is not in the store's model (the README says so).
        names = sorted(set(listed.group(2).split(", ")) - {"TWO_PHASE_COMMIT"})
        first = f"{listed.group(1)}[{', '.join(names)}]"
    return first, bool(rest.strip())


def store_acls(node: Node) -> set[tuple[str, ...]]:
    with admin_client(node) as client:
        answer = client.describe_acls(AclBindingFilter())
    return {
        (b.resource_type.name, b.name, b.pattern_type.name, b.principal, b.host, b.operation.name,
         b.permission_type.name)
        for b in answer.bindings
    }  # fmt: skip


def test_aclstore_acls_prints_and_stores_what_kafka_acls_does(tmp_path: Path) -> None:
    # aclstore needs no broker: its runs overlap the broker's start, Kafka's runs follow.
    broker = LocalKafka(tmp_path / "kafka", overrides=STANDARD_AUTHORIZER,
                        jvm_options=SHORT_RUN_JVM_OPTIONS)
    node = start_node(tmp_path / "node")
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            started = time.monotonic()
            kafka_future = pool.submit(
                lambda: run_kafka(broker.start(), COMMAND_LINES)  # start() answers the bootstrap
            )
            ours = run_ours(node, COMMAND_LINES)
            ours_seconds = time.monotonic() - started
            theirs, kafka_held = kafka_future.result()
            kafka_seconds = time.monotonic() - started
        print(f"aclstore acls: {ours_seconds:.1f}s; broker start and AclCommand: {kafka_seconds:.1f}s")
        differences = []
        for line, k, o in zip(COMMAND_LINES, theirs, ours, strict=True):
            if (
                k.exit != o.exit
                or normal_stdout(k.out) != normal_stdout(o.out)
                or normal_stderr(k.err, ours=False) != normal_stderr(o.err, ours=True)
            ):
                differences.append(
                    f"$ kafka-acls {line!a}\n  kafka exit {k.exit}\n  out {k.out[:1500]!a}\n  err "
                    f"{k.err[:300]!a}\n  ours exit {o.exit}\n  out {o.out[:1500]!a}\n  err {o.err[:300]!a}"
                )
        assert not differences, f"{len(differences)} of {len(COMMAND_LINES)} differ:\n" + "\n".join(
            differences[:8]
        )
        assert store_acls(node) == kafka_held
    finally:
        node.stop()
        broker.stop()


@pytest.mark.unit
def test_the_normal_forms_keep_what_matters() -> None:
    """The normalisation forgives order only: a missing entry, blank line or usage still shows."""
    kafka = "Adding ACLs for resource `R`: \n \t(b)\n\t(a)\n\n"
    assert normal_stdout(kafka) == normal_stdout("Adding ACLs for resource `R`: \n \t(a)\n\t(b)\n\n")
    assert normal_stdout(kafka) != normal_stdout("Adding ACLs for resource `R`: \n \t(a)\n\n")
    assert normal_stdout(kafka) != normal_stdout("Adding ACLs for resource `R`: \n \t(a)\n\t(b)\n")
    assert normal_stdout(kafka) != normal_stdout("Adding ACLs for resource `R`: \n\t(a)\n\t(b)\n\n")
    trace = f"{EXECUTION_ERROR}boom\njava.lang.IllegalArgumentException: boom\n\tat x\n\n"
    assert normal_stdout(trace) == normal_stdout(f"{EXECUTION_ERROR}boom\nCaused by: boom\n")
    assert normal_stdout(trace) != normal_stdout(f"{EXECUTION_ERROR}bang\n")
    err = "ResourceType GROUP only supports operations [READ, ALL]\nOption  Description\n"
    assert normal_stderr(err, ours=False) == normal_stderr(
        "ResourceType GROUP only supports operations [ALL, READ]\nusage: ...\n(log offset 3)\n",
        ours=True,
    )
    assert normal_stderr(err, ours=False) != normal_stderr(
        "ResourceType GROUP only supports operations [ALL, READ]\n", ours=True
    )
    assert normal_stderr("", ours=False) == normal_stderr("(log offset 12)\n", ours=True)
