"""joptsimple's reading of a command line (``cli.kafka_options``), no store needed.

Each expectation is what Kafka 4.3.1's own ``AclCommand`` did with the same words (run through
``tests/java/AclCommandDriver.java``; ``tests/replicator/test_acls_differential.py`` keeps
comparing them): the options it saw, or the message it refused them with.
"""

from __future__ import annotations

import pytest

import cli
from cli.kafka_options import Arity, KafkaOptionError, read_options

pytestmark = pytest.mark.unit

N, R, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
ARITIES = {"list": N, "add": N, "cluster": N, "topic": R, "operation": R, "principal": OPT, "help": N}


@pytest.mark.parametrize(
    ("words", "options"),
    [
        (["-list"], [("list", None)]),
        (["--list=yes", "-cluster=1"], [("list", None), ("cluster", None)]),
        (["--topic=t", "-topic=u", "-topic", "v"], [("topic", "t"), ("topic", "u"), ("topic", "v")]),
        (["--topic="], [("topic", "")]),
        (["--topic=a=b"], [("topic", "a=b")]),
        # A value it needs is the next word, whatever it looks like.
        (["--topic", "-dash-billing"], [("topic", "-dash-billing")]),
        (["--topic", "--"], [("topic", "--")]),
        (["--topic", "--list"], [("topic", "--list")]),
        (["--operation", "-Read", "--add"], [("operation", "-Read"), ("add", None)]),
        # A value it may take is the next word unless that starts with - (a lone - is a value).
        (["--principal", "User:a"], [("principal", "User:a")]),
        (["--principal", "-"], [("principal", "-")]),
        (["--principal", ""], [("principal", "")]),
        (["--principal", "--list"], [("principal", None), ("list", None)]),
        (["--principal", "--", "--list"], [("principal", None)]),
        (["--principal="], [("principal", "")]),
        # -- ends the options; words no option takes are ignored, before it or after.
        (["--list", "--", "--topic", "t", "--bogus"], [("list", None)]),
        (["--", "--list"], []),
        (["stray", "--list", "-", "", "more"], [("list", None)]),
    ],
)
def test_what_joptsimple_reads(words: list[str], options: list[tuple[str, str | None]]) -> None:
    assert read_options(words, ARITIES) == options


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["-l"], "l is not a recognized option"),  # a cluster of one-letter options
        (["-li"], "l is not a recognized option"),
        (["--list", "-xyz"], "x is not a recognized option"),
        (["--list", "-h"], "h is not a recognized option"),
        (["-=x"], "= is not a recognized option"),
        (["--li"], "li is not a recognized option"),  # no abbreviations
        (["--top=t"], "top is not a recognized option"),
        (["--Topic", "t"], "Topic is not a recognized option"),
        (["---list"], "-list is not a recognized option"),
        (["--=x"], " is not a recognized option"),
        (["--list", "--topic"], "Option topic requires an argument"),
        (["-topic"], "Option topic requires an argument"),
        # The first refusal it meets, in order.
        (["--bogus", "--topic"], "bogus is not a recognized option"),
    ],
)
def test_what_joptsimple_refuses(words: list[str], message: str) -> None:
    with pytest.raises(KafkaOptionError) as refused:
        read_options(words, ARITIES)
    assert refused.value.message == message


def test_a_cluster_of_one_letter_options_as_joptsimple_reads_one() -> None:
    letters = {"a": N, "b": N, "v": R}
    assert read_options(["-ab"], letters) == [("a", None), ("b", None)]
    assert read_options(["-abvx", "y"], letters) == [("a", None), ("b", None), ("v", "x")]
    assert read_options(["-av", "y"], letters) == [("a", None), ("v", "y")]
    # Letters after one that takes a value are its value, not options to check.
    assert read_options(["-vzz"], letters) == [("v", "zz")]
    with pytest.raises(KafkaOptionError, match=r"^z is not a recognized option$"):
        read_options(["-az"], letters)


def test_aclstore_acls_reads_its_command_line_so(capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command: a value that starts with - reaches its option, -- ends the options,
    and a refusal is joptsimple's message then the usage, exit 1 (no store is reached)."""
    args = cli.build_parser().parse_args(
        ["acls", "-add", "--topic", "-dash", "--allow-principal=--", "-format=json", "--", "--list"]
    )
    assert (args.add, args.list, args.topic, args.allow_principal, args.format) == (
        True, False, ["-dash"], ["--"], "json",
    )  # fmt: skip
    for words, message in [
        (["--list", "--=x"], " is not a recognized option"),
        (["-list", "-principal", "-x"], "x is not a recognized option"),
        (
            ["--list", "--format", "-x"],
            "argument --format: invalid choice: '-x' (choose from 'table', 'json')",
        ),
    ]:
        with pytest.raises(SystemExit) as exited:
            cli.main(["acls", *words])
        first, _, usage = capsys.readouterr().err.partition("\n")
        assert (exited.value.code, first) == (1, message)
        assert usage.startswith("usage: aclstore acls")
