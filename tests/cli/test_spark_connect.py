"""``--remote``: the history's questions asked of a Spark Connect server give the same answers
as a session of the command's own; ``aclstore spark-connect`` starts, finds and stops it.

The Connect client changes how this whole process speaks to Spark (pyspark switches its
functions to Connect for the process), so the commands given ``--remote`` run as separate
processes here, as a user types them; the in-process answers come from the shared session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

import cli
from cli.spark_connect import STATE_DIR_ENV, ServerRecord, running_server
from devtools.kafka_process import free_port
from jobs.common.connect import SERVER_CLASS, server_argv
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.unit
def test_the_server_command_is_spark_submit_of_the_connect_server_on_loopback() -> None:
    settings = {"spark.b": "2", "spark.a": "1"}
    jars = ["/j/delta.jar", "/j/kafka.jar"]
    argv = server_argv(home=Path("/spark"), port=15999, master="local[1]", settings=settings, jars=jars)
    assert argv == [
        "/spark/bin/spark-submit", "--class", SERVER_CLASS, "--master", "local[1]",
        "--name", "aclstore-spark-connect", "--jars", "/j/delta.jar,/j/kafka.jar",
        "--conf", "spark.a=1", "--conf", "spark.b=2",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", "spark.connect.grpc.binding.port=15999",
        "--conf", "spark.ui.showConsoleProgress=false",
        "spark-internal",
    ]  # fmt: skip
    assert "--jars" not in server_argv(home=Path("/s"), port=1, master="local", settings={}, jars=None)


WHO = ["history", "who", "--resource-type", "TOPIC", "--resource-name", "orders",
       "--operation", "READ", "--host", "10.0.0.1"]  # fmt: skip


@pytest.mark.unit
@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--remote", "http://127.0.0.1:15002"], "is not a Spark Connect URL: give sc://HOST:PORT"),
        (["--remote", "sc://127.0.0.1:1", "--master", "local[4]"], "--master local[4] with --remote"),
    ],
)
def test_a_remote_that_cannot_work_is_one_line_with_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str], expected: str
) -> None:
    code = cli.main([*WHO, "--data-dir", str(tmp_path), "--offset", "0", *extra])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and expected in err, err


@pytest.mark.unit
def test_history_archive_takes_no_remote(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["history", "archive", "--once", "--remote", "sc://127.0.0.1:15002"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --remote" in capsys.readouterr().err


def _aclstore(*argv: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "cli", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _binding(name: str, principal: str, permission: AclPermissionType = AclPermissionType.ALLOW,
             pattern: PatternType = PatternType.LITERAL) -> AclBinding:  # fmt: skip
    return AclBinding.of(ResourceType.TOPIC, name, pattern, principal, "*", AclOperation.READ, permission)


@pytest.mark.spark
def test_questions_over_spark_connect_answer_as_the_local_session(
    spark: object, spark_connect: tuple[Path, ServerRecord], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """One history, archived; who, when and snapshot asked in this process's session and,
    as separate commands, of a Connect server (``sc://`` and ``local``): the same documents."""
    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    data = tmp_path / "data"
    with EmbeddedChangeLog(data / "log") as log:
        admin = AclAdmin(log, super_users=["User:admin"])
        bob = admin.create_acls([_binding("orders", "User:bob")], actor="User:admin").offset
        admin.create_acls([_binding("orders", "User:alice"), _binding("orders", "User:eve"),
                           _binding("ord", "User:eve", AclPermissionType.DENY, PatternType.PREFIXED)],
                          actor="User:admin")  # fmt: skip
        admin.delete_acls([_binding("orders", "User:bob").to_filter()], actor="User:admin")
        tail = admin.create_acls([_binding("orders", "User:carol")], actor="User:admin").offset
    where = ["--data-dir", str(data), "--format", "json"]
    assert cli.main(["history", "archive", "--once", "--data-dir", str(data)]) == 0
    with EmbeddedChangeLog(data / "log") as log:  # after the archive: the tail the answers read
        AclAdmin(log, super_users=["User:admin"]).create_acls([_binding("orders", "User:dan")],
                                                            actor="User:admin")  # fmt: skip
    # Each kind of question once (who in the archive's tail, when over it, a snapshot), and who
    # before the delete: the points in time are the history tests' (tests/cli/test_history_cli).
    questions = [
        [*WHO, *where, "--offset", str(bob)],
        [*WHO, *where, "--offset", str(tail + 1)],
        ["history", "when", "--principal", "User:bob", "--principal", "User:eve", *WHO[2:], *where],
        ["history", "snapshot", *where, "--offset", str(tail + 1)],
    ]
    local = []
    for question in questions:
        assert cli.main(question) == 0
        local.append(json.loads(capsys.readouterr().out))
    # hand-worked: carol (archived) and dan (in the tail only) are allowed, bob deleted, eve denied
    assert {e["principal"] for e in local[1]["allowed"]} == {"User:alice", "User:carol", "User:dan"}
    assert {e["principal"] for e in local[0]["allowed"]} == {"User:bob"}

    state, record = spark_connect
    env = {**os.environ, STATE_DIR_ENV: str(state)}
    for question, expected in zip(questions, local, strict=True):
        assert json.loads(_aclstore(*question, "--remote", record.url, env=env)) == expected
    # `local`: the server recorded under the state dir, not a second one
    assert json.loads(_aclstore(*questions[1], "--remote", "local", env=env)) == local[1]
    assert running_server(state) == record
    status = _aclstore("spark-connect", "status", "--state-dir", str(state), env=env)
    assert record.url in status and str(record.pid) in status


def _group(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except ProcessLookupError:
        return None


@pytest.mark.unit
def test_stop_ends_the_recorded_process_group_and_status_then_says_not_running(tmp_path: Path) -> None:
    """What ``start`` records, stopped: the recorded process and its children end."""
    import time

    from cli.spark_connect import ServerRecord as Record

    parent = subprocess.Popen(["sh", "-c", "sleep 300 & wait"], start_new_session=True)
    state = tmp_path / "state"
    state.mkdir()
    record = Record(pid=parent.pid, port=free_port(), master="local[1]", log=str(state / "server.log"))
    (state / "server.json").write_text(json.dumps(
        {"pid": record.pid, "port": record.port, "master": record.master, "log": record.log}))  # fmt: skip
    env = {**os.environ, STATE_DIR_ENV: str(state)}
    # nothing listens on the port: recorded but not running
    assert running_server(state) is None
    assert _aclstore("spark-connect", "stop", env=env).strip() == "stopped"
    deadline = time.monotonic() + 10
    while parent.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert parent.returncode is not None
    group = [p for p in psutil.process_iter(["status"]) if _group(p) == parent.pid]
    assert [p.pid for p in group if p.info["status"] != psutil.STATUS_ZOMBIE] == []
    assert not (state / "server.json").exists()
    assert _aclstore("spark-connect", "stop", env=env).strip() == "not running"
    done = subprocess.run([sys.executable, "-m", "cli", "spark-connect", "status"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (1, "not running")
