"""The ``aclstore`` CLI end to end, with kafka-acls.sh's examples, on both log backends.

A node runs in-process (``--store`` points at it); the commands run through ``cli.main`` exactly
as the console script does.  Expected bindings are worked out by hand from Kafka's docs.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sidecar_support import start_node

import cli
from replicator.server.node import Node

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def node(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Node]:
    overrides = {}
    if request.param == "kafka":
        overrides = {
            "bootstrap_servers": request.getfixturevalue("kafka_bootstrap"),
            "topic": request.getfixturevalue("unique_topic")("cli"),
        }
    n = start_node(tmp_path / "node", **overrides)
    yield n
    n.stop()


@pytest.fixture
def run(node: Node, capsys: pytest.CaptureFixture[str]) -> Run:
    """``aclstore <command> --store URL --command-config admin.properties <args>``."""
    assert node.info is not None
    admin = str(node.info.credential.properties_path)

    def invoke(command: str, *args: str, auth: bool = True) -> tuple[int, str, str]:
        argv = [command, "--store", node.url, *(["--command-config", admin] if auth else []), *args]
        try:
            code = cli.main(argv)
        except SystemExit as exit_:  # option errors end the parse, as in the console script
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def ok(run: Run, command_line: str, *, auth: bool = True) -> str:
    """Run ``aclstore <command_line>`` (split as a shell would), assert it succeeded, return stdout."""
    code, out, err = run(*shlex.split(command_line), auth=auth)
    assert code == 0, err
    return out


def configs_described(run: Run) -> dict[str, str]:
    out = ok(run, "configs --describe --format json")
    return {c["name"]: c["value"] for c in json.loads(out)["configs"]}


def listed(run: Run, *args: str) -> set[tuple[str, ...]]:
    code, out, err = run("acls", "--list", "--format", "json", *args)
    assert code == 0, err
    return {
        (
            b["resourceType"],
            b["resourceName"],
            b["patternType"],
            b["principal"],
            b["host"],
            b["operation"],
            b["permissionType"],
        )
        for b in json.loads(out)["bindings"]
    }


def test_the_docs_add_examples(run: Run) -> None:
    out = ok(
        run,
        "acls --add --allow-principal User:Bob --allow-principal User:Alice "
        "--allow-host 198.51.100.0 --allow-host 198.51.100.1 --operation Read --operation Write "
        "--topic Test-topic",
    )
    assert (
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=Test-topic, patternType=LITERAL)`"
        in out
    )
    expected = {
        ("TOPIC", "Test-topic", "LITERAL", p, h, op, "ALLOW")
        for p in ("User:Bob", "User:Alice")
        for h in ("198.51.100.0", "198.51.100.1")
        for op in ("READ", "WRITE")
    }
    assert listed(run, "--topic", "Test-topic") == expected
    ok(
        run,
        "acls --add --allow-principal 'User:*' --allow-host '*' --deny-principal User:BadBob "
        "--deny-host 198.51.100.3 --operation Read --topic Test-topic",
    )
    expected |= {
        ("TOPIC", "Test-topic", "LITERAL", "User:*", "*", "READ", "ALLOW"),
        ("TOPIC", "Test-topic", "LITERAL", "User:BadBob", "198.51.100.3", "READ", "DENY"),
    }
    assert listed(run, "--topic", "Test-topic") == expected
    # Adding the same again writes nothing and says so, as kafka-acls.sh does, byte for byte.
    again = "acls --add --allow-principal 'User:*' --operation Read --topic Test-topic"
    code, out, err = run(*shlex.split(again))
    assert (code, err) == (0, "")
    assert out == (
        "Acl (pattern=ResourcePattern(resourceType=TOPIC, name=Test-topic, patternType=LITERAL), "
        "entry=(principal=User:*, host=*, operation=READ, permissionType=ALLOW)) already exists.\n"
    )
    # stdout is kafka-acls.sh's; the log offset the write reached goes to stderr.
    carol = "acls --add --allow-principal User:Carol --operation Describe --topic t2"
    code, out, err = run(*shlex.split(carol))
    assert code == 0
    assert out == (
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t2, patternType=LITERAL)`: \n"
        " \t(principal=User:Carol, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n"
    )
    assert re.fullmatch(r"\(log offset \d+\)\n", err), err
    code, out, err = run("acls", "--list", "--topic", "t2")
    assert code == 0 and re.fullmatch(r"\(log offset \d+\)\n", err), err
    assert out == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t2, patternType=LITERAL)`:\n"
        "\t(principal=User:Carol, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n"
    )


def test_producer_consumer_prefixed_match_and_remove(run: Run) -> None:
    ok(
        run,
        "acls --add --allow-principal User:Jane --producer --topic Test- --resource-pattern-type prefixed",
    )
    ok(run, "acls --add --allow-principal User:Alice --consumer --topic Test-topic --group Group-1")
    ok(
        run,
        "acls --add --allow-principal User:Peter --allow-host 198.51.200.1 --producer --topic '*' "
        "--idempotent --transactional-id tx",
    )
    jane = {
        ("TOPIC", "Test-", "PREFIXED", "User:Jane", "*", op, "ALLOW")
        for op in ("WRITE", "DESCRIBE", "CREATE")
    }
    alice = {
        ("TOPIC", "Test-topic", "LITERAL", "User:Alice", "*", op, "ALLOW") for op in ("READ", "DESCRIBE")
    }
    alice.add(("GROUP", "Group-1", "LITERAL", "User:Alice", "*", "READ", "ALLOW"))
    peter = {
        ("TOPIC", "*", "LITERAL", "User:Peter", "198.51.200.1", op, "ALLOW")
        for op in ("WRITE", "DESCRIBE", "CREATE")
    }
    peter |= {
        ("TRANSACTIONAL_ID", "tx", "LITERAL", "User:Peter", "198.51.200.1", op, "ALLOW")
        for op in ("WRITE", "DESCRIBE")
    }
    peter.add(
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:Peter", "198.51.200.1", "IDEMPOTENT_WRITE", "ALLOW")
    )
    assert listed(run) == jane | alice | peter
    # --list --topic is the exact literal pattern; match adds '*' and every applying prefix.
    topic_only = {b for b in alice if b[0] == "TOPIC"}
    assert listed(run, "--topic", "Test-topic") == topic_only
    assert listed(run, "--topic", "Test-topic", "--resource-pattern-type", "match") == (
        topic_only | jane | {b for b in peter if b[0] == "TOPIC"}
    )
    assert listed(run, "--topic", "Test-", "--resource-pattern-type", "any") == jane
    assert listed(run, "--principal", "User:Jane") == jane
    out = ok(run, "acls --list --principal User:Jane")
    assert "ACLs for principal `User:Jane`" in out and "name=Test-, patternType=PREFIXED" in out
    # The docs' removal of the prefixed producer ACLs ("Prefixed", any letter case).
    out = ok(
        run,
        "acls --remove --allow-principal User:Jane --producer --topic Test- "
        "--resource-pattern-type Prefixed --force --format json",
    )
    answer = json.loads(out)
    assert isinstance(answer["offset"], int)
    assert sum(len(r["deleted"]) for r in answer["results"]) == 3
    assert listed(run) == alice | peter
    # --remove without principals removes every ACL of the resource (here with MATCH).
    # kafka-acls.sh prints nothing on removal.
    assert ok(run, "acls --remove --topic Test-topic --resource-pattern-type match --force") == ""
    assert listed(run) == {b for b in alice | peter if b[0] != "TOPIC"}


def test_authorize_through_the_cli_with_and_without_min_offset(run: Run) -> None:
    out = ok(run, "acls --add --allow-principal User:bob --operation Read --topic orders --format json")
    offset = json.loads(out)["offset"]
    out = ok(
        run,
        "authorize --principal User:bob --host 10.0.0.1 --operation Read --operation Write "
        f"--topic orders --min-offset {offset} --format json",
        auth=False,
    )
    answer = json.loads(out)
    assert (answer["results"], answer["offset"]) == (["ALLOWED", "DENIED"], offset)
    out = ok(run, "authorize --principal User:bob --operation Read --topic orders --explain", auth=False)
    assert out.startswith("ALLOWED") and "operation=READ, permissionType=ALLOW" in out
    out = ok(run, "authorize --principal User:bob --api-key FETCH --topic orders", auth=False)
    assert out.startswith("ALLOWED  FETCH (1)"), out


def test_configs_describe_and_alter(run: Run) -> None:
    out = ok(run, "configs --alter --add-config 'super.users=[User:a;User:b]' --validate-only")
    assert "Validated" in out
    assert configs_described(run)["super.users"] == ""
    ok(run, "configs --alter --add-config 'super.users=[User:a;User:b],allow.everyone.if.no.acl.found=true'")
    values = configs_described(run)
    assert (values["super.users"], values["allow.everyone.if.no.acl.found"]) == ("User:a;User:b", "true")


USAGE_START = "usage: aclstore acls"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--add", "--topic", "t"],
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.",
        ),
        (
            ["--add", "--list", "--topic", "t"],
            "Command must include exactly one action: --list, --add, --remove. ",
        ),
        (
            ["--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"],
            "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id "
            "option should be specified.",
        ),
        (
            ["--add", "--allow-principal", "User:a", "--producer"],
            "With --producer you must specify a --topic",
        ),
        (["--list", "--idempotent"], "The --idempotent option is only available if --producer is set"),
        (
            ["--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
            "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
        ),
        (
            ["--add", "--allow-principal", "User:a", "--operation", "IdempotentWrite", "--topic", "t"],
            "ResourceType TOPIC only supports operations [ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, "
            "DESCRIBE_CONFIGS, ALTER_CONFIGS]",
        ),
        # Kafka's operation names only: DESCRIBE_CONFIGS is no name (DescribeConfigs, describeconfigs are).
        (
            ["--add", "--allow-principal", "User:a", "--operation", "DESCRIBE_CONFIGS", "--group", "g"],
            "ResourceType GROUP only supports operations [ALL, READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, "
            "ALTER_CONFIGS]",
        ),
        (["--list", "--producer"], 'Option "[list]" can\'t be used with option "[producer]"'),
        (["--list", "--bogus"], "bogus is not a recognized option"),
        (["--list", "--topic"], "Option topic requires an argument"),
        (["--list", "--top", "t"], "top is not a recognized option"),
    ],
)
def test_bad_options_print_the_message_and_the_usage_on_stderr_and_exit_1(
    run: Run, args: list[str], message: str
) -> None:
    """kafka-acls.sh's ``printUsageAndExit``: the message, then the usage; nothing on stdout."""
    code, out, err = run("acls", *args)
    assert (code, out) == (1, "")
    first, _, usage = err.partition("\n")
    assert first == message and usage.startswith(USAGE_START), err


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        (
            ["--list", "--resource-pattern-type", "fancy"],
            [
                "Error while executing ACL command: Cannot parse argument 'fancy' of option "
                "resource-pattern-type",
                "Caused by: Value [fancy] is not one of [ANY|MATCH|LITERAL|PREFIXED]",
            ],
        ),
        (
            ["--add", "--allow-principal", "bob", "--topic", "t"],
            [
                "Error while executing ACL command: expected a string in format "
                "principalType:principalName but got bob"
            ],
        ),
        (
            ["--remove", "--topic", "t"],
            [
                "Are you sure you want to delete all ACLs for resource filter "
                "`ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`? (y/n)",
                "Error while executing ACL command: refusing to remove ACLs without confirmation: "
                "stdin is not a terminal; pass --force",
            ],
        ),
    ],
)
def test_failed_runs_print_kafkas_error_line_on_stdout_and_exit_1(
    run: Run, args: list[str], lines: list[str]
) -> None:
    code, out, err = run("acls", *args)
    assert (code, out.splitlines(), err) == (1, lines, "")


def test_bootstrap_controller_is_refused_in_one_line_naming_the_alternatives(run: Run) -> None:
    """(``--bootstrap-server`` goes through a broker running the plugin: tests/plugin/.)"""
    code, out, err = run("acls", "--bootstrap-controller", "127.0.0.1:9093", "--list")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and err.startswith("--bootstrap-controller is not supported")
    assert "--bootstrap-server" in err and "--store URL" in err


def test_bad_command_lines_of_other_commands_are_one_line_and_exit_2(run: Run) -> None:
    code, out, err = run("authorize", "--operation", "Read", "--topic", "t")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("error: ") and "exactly one of --principal" in err, err


def test_refused_calls_exit_1_with_one_line(run: Run) -> None:
    code, out, err = run("acls", "--list", auth=False)
    assert code == 1 and err == ""
    assert out.startswith("Error while executing ACL command: this endpoint needs an authenticated caller")
    assert out.count("\n") == 1
    code, out, err = run("configs", "--describe", auth=False)
    assert (code, out) == (1, "")
    assert err.startswith("error: this endpoint needs an authenticated caller") and err.count("\n") == 1


@pytest.mark.unit
def test_an_unreachable_store_and_acl_store_url(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACLSTORE_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    code = cli.main(["status"])
    _, err = capsys.readouterr()
    assert code == 1 and "cannot reach the store at http://127.0.0.1:9" in err and err.count("\n") == 1
    code = cli.main(["status", "--store", "ftp://x"])
    _, err = capsys.readouterr()
    assert code == 2 and "is not http(s)://host:port" in err


@pytest.mark.unit
def test_serve_prints_where_it_listens_and_stops_on_sigterm(tmp_path: Path) -> None:
    """The console script as a user runs it (``make serve`` runs exactly this)."""
    aclstore = Path(sys.executable).with_name("aclstore")
    with (tmp_path / "serve.log").open("w") as log:
        process = subprocess.Popen(
            [str(aclstore), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data")],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(6)]
        banner = "".join(lines)
        assert lines[0].startswith("aclstore ") and " serving http://127.0.0.1:" in lines[0], banner
        url = lines[0].split(" serving ")[1].strip()
        assert f"data dir:   {tmp_path / 'data'}" in banner
        properties = tmp_path / "data" / "admin.properties"
        assert f"created now credential: {properties}" in banner
        assert "ready:      yes" in banner
        assert properties.stat().st_mode & 0o777 == 0o600
        code = cli.main(["acls", "--store", url, "--command-config", str(properties), "--list"])
        assert code == 0
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_remove_asks_on_a_terminal_and_removes_on_y(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kafka-acls.sh's question on stdout, answered on the terminal (``y``, any case)."""
    assert node.info is not None
    where = ["--store", node.url, "--command-config", str(node.info.credential.properties_path)]
    assert cli.main(["acls", *where, "--add", "--allow-principal", "User:a", "--topic", "asked"]) == 0
    main, replica = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "acls", *where, "--remove", "--topic", "asked"],
        stdin=replica, stdout=replica, stderr=subprocess.PIPE, cwd=tmp_path,
    )  # fmt: skip
    os.close(replica)
    seen = b""
    while not seen.endswith(b"(y/n)\r\n"):
        seen += os.read(main, 1024)
    assert seen.replace(b"\r\n", b"\n").endswith(
        b"Are you sure you want to delete all ACLs for resource filter "
        b"`ResourcePattern(resourceType=TOPIC, name=asked, patternType=LITERAL)`? (y/n)\n"
    )
    os.write(main, b"Y\n")
    assert process.wait(timeout=60) == 0
    os.close(main)
    assert process.stderr is not None and b"(log offset" in process.stderr.read()
    capsys.readouterr()
    assert cli.main(["acls", *where, "--list", "--topic", "asked", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["bindings"] == []
