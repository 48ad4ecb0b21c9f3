"""The console's history questions: the fields checked and turned into the command line's
arguments (hand-written expectations), and the runner's jobs on real child processes (a short
Python program stands in for the command, so that cancelling, replacing and failing are seen
without Spark; the real command runs in test_console_history.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from replicator.contract.fields import BadRequestError
from replicator.server.console.questions import (
    HistoryNotConfiguredError,
    HistorySource,
    Question,
    cli_error,
    question,
)
from replicator.server.console.runner import QuestionBusyError, QuestionRunner, UnknownJobError
from store.errors import InvalidConfigError

pytestmark = pytest.mark.unit

RESOURCE = {"resourceType": "topic", "resourceName": "orders", "operation": "read", "host": "10.0.0.1"}


def test_each_question_is_the_commands_arguments() -> None:
    when = question("when", {"principal": "User:bob", **RESOURCE, "from": "2026-11-01", "to": ""})
    assert when == Question("when", (
        "--principal=User:bob", "--resource-type=TOPIC", "--resource-name=orders",
        "--operation=READ", "--host=10.0.0.1", "--from=2026-11-01",
    ))  # fmt: skip
    who = question("who", {**RESOURCE, "host": "", "offset": 12})
    assert who.arguments == ("--resource-type=TOPIC", "--resource-name=orders", "--operation=READ",
                             "--host=*", "--offset=12")  # fmt: skip
    assert question("who", {**RESOURCE, "at": "1700000000000"}).arguments[-1] == "--at=1700000000000"
    assert question("events", {"limit": 100}).arguments == ("--limit=100",)
    assert question("events", {"from": "0", "limit": "5", "after": 41}).arguments == (
        "--from=0", "--limit=5", "--after=41")  # fmt: skip
    assert question("diff", {"from": "0", "to": "2026-11-27T10:00Z"}).arguments == (
        "--from=0", "--to=2026-11-27T10:00Z")  # fmt: skip
    assert question("restore", {"offset": "7"}).arguments == ("--offset=7",)
    # a value that looks like an option stays the option's value
    dashed = question("when", {"principal": "User:bob", **RESOURCE, "resourceName": "--apply"})
    assert "--resource-name=--apply" in dashed.arguments


def test_the_source_names_the_log_the_archive_and_spark(tmp_path: Path) -> None:
    source = HistorySource(data_dir=tmp_path, remote="sc://127.0.0.1:15002")
    assert source.options() == [f"--data-dir={tmp_path}", f"--archive={tmp_path / 'history'}",
                                "--remote=sc://127.0.0.1:15002"]  # fmt: skip
    kafka = HistorySource(data_dir=tmp_path, bootstrap_servers="b:9092", topic="acls",
                          log_config=tmp_path / "log.properties", archive="s3a://bucket/h")  # fmt: skip
    assert kafka.options() == [f"--data-dir={tmp_path}", "--archive=s3a://bucket/h",
                               "--bootstrap-servers=b:9092", "--topic=acls",
                               f"--log-config={tmp_path / 'log.properties'}"]  # fmt: skip
    assert kafka.local_archive() is None
    assert HistorySource(data_dir=tmp_path, archive="file:///srv/h%20x").local_archive() == Path("/srv/h x")
    argv = question("events", {"limit": 100}).argv(source)
    assert argv[:2] == ["history", "events"] and argv[-1] == "--format=json"
    with pytest.raises(InvalidConfigError, match="topic needs bootstrap servers"):
        HistorySource(data_dir=tmp_path, topic="acls")
    with pytest.raises(InvalidConfigError, match="drop one"):
        HistorySource(data_dir=tmp_path, remote="local", master="local[4]")


@pytest.mark.parametrize(
    ("kind", "fields", "expected"),
    [
        ("snapshot", {}, "question 'snapshot' is not one the console asks"),
        ("when", [], "fields: give a JSON object"),
        ("when", {**RESOURCE}, "principal: required"),
        ("when", {**RESOURCE, "principal": "bob"}, "principal 'bob'"),
        ("when", {**RESOURCE, "principal": "User:b", "resourceType": "TABLE"}, "resource type 'TABLE'"),
        ("when", {**RESOURCE, "principal": "User:b", "operation": "ANY"}, "operation 'ANY' is not one"),
        ("who", {**RESOURCE}, "give one of at"),
        ("who", {**RESOURCE, "at": "0", "offset": 3}, "give one of at"),
        ("who", {**RESOURCE, "offset": -1}, "offset: -1 is not a log offset"),
        ("who", {**RESOURCE, "offset": True}, "is not a log offset"),
        ("diff", {"from": "0"}, "to: required"),
        ("events", {"from": {"x": 1}, "limit": 9}, "from: {'x': 1} is not text"),
        ("events", {"from": "a\nb", "limit": 9}, "control character"),
        ("events", {}, "limit: None is not a page size; give an integer from 1 to 1000"),
        ("events", {"limit": 0}, "limit: 0 is not a page size"),
        ("events", {"limit": 1001}, "limit: 1001 is not a page size"),
        ("events", {"limit": "x"}, "limit: 'x' is not a page size"),
        ("events", {"limit": True}, "limit: True is not a page size"),
        ("events", {"limit": 2.5}, "limit: 2.5 is not a page size"),
        ("events", {"limit": 9, "after": -1}, "after: -1 is not a log offset"),
        ("events", {"limit": 9, "after": "1.5"}, "after: '1.5' is not a log offset"),
        ("restore", {"at": "x" * 1001}, "longer than 1000"),
    ],
)
def test_a_bad_field_is_refused_naming_it(kind: str, fields: Any, expected: str) -> None:
    with pytest.raises(BadRequestError) as caught:
        question(kind, fields)
    assert expected in caught.value.message


def test_the_commands_own_message_is_its_error_line() -> None:
    assert cli_error("WARN spark\nerror: time 'x' is not a time\n") == "time 'x' is not a time"
    assert cli_error("Traceback\nValueError: boom\n") == "ValueError: boom"
    assert "without a message" in cli_error("")


# --- the runner, on real child processes ---------------------------------------------------------

ANSWER = 'import json,sys; print(json.dumps({"intervals": [1, 2], "argv": sys.argv[1:]}))'
SLOW = "import time; time.sleep(60)"
FAILS = 'import sys; print("error: time \'soon\' is not a time", file=sys.stderr); sys.exit(2)'


def _runner(tmp_path: Path, program: str, **kwargs: Any) -> QuestionRunner:
    (tmp_path / "history").mkdir(exist_ok=True)
    return QuestionRunner(HistorySource(data_dir=tmp_path), command=(sys.executable, "-c", program),
                          **kwargs)  # fmt: skip


def _until_ended(runner: QuestionRunner, session: str, job: str, timeout_s: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        view = runner.status(session, job)
        if view["phase"] != "running":
            return view
        time.sleep(0.05)
    raise AssertionError(f"job {job} still running after {timeout_s} s")


def _gone(pid: int, timeout_s: float = 10) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_question_answers_the_commands_json(tmp_path: Path) -> None:
    runner = _runner(tmp_path, ANSWER)
    asked = question("events", {"from": "0", "limit": 100})
    started = runner.ask("s1", asked)
    assert started["phase"] == "running" and started["records"] is None
    done = _until_ended(runner, "s1", started["job"])
    assert done["phase"] == "done" and done["records"] == 2
    assert done["answer"]["argv"] == asked.argv(HistorySource(data_dir=tmp_path))
    with pytest.raises(UnknownJobError):  # read once, then forgotten
        runner.status("s1", started["job"])


def test_a_refusal_of_the_command_is_its_one_line(tmp_path: Path) -> None:
    runner = _runner(tmp_path, FAILS)
    started = runner.ask("s1", question("events", {"limit": 100}))
    failed = _until_ended(runner, "s1", started["job"])
    assert failed["phase"] == "failed" and failed["error"] == "time 'soon' is not a time"


def test_a_newer_question_cancels_the_sessions_earlier_one(tmp_path: Path) -> None:
    runner = _runner(tmp_path, SLOW)
    first = runner.ask("s1", question("events", {"limit": 100}))
    pid = _pid(runner, first["job"])
    other = runner.ask("s2", question("events", {"limit": 100}))  # another session's is untouched
    second = runner.ask("s1", question("events", {"limit": 100}))
    assert _gone(pid)
    with pytest.raises(UnknownJobError):
        runner.status("s1", first["job"])
    with pytest.raises(UnknownJobError):  # one session cannot read another's
        runner.status("s1", other["job"])
    assert runner.running() == 2
    cancelled = runner.cancel("s1", second["job"])
    assert cancelled["phase"] == "cancelled" and cancelled["error"] == "cancelled by the page"
    runner.close()
    assert runner.running() == 0


def test_a_question_whose_page_stops_asking_is_cancelled(tmp_path: Path) -> None:
    runner = _runner(tmp_path, SLOW, idle_s=0.5)
    started = runner.ask("s1", question("events", {"limit": 100}))
    pid = _pid(runner, started["job"])
    assert _gone(pid)
    assert runner.running() == 0


def test_an_answer_nobody_reads_is_forgotten(tmp_path: Path) -> None:
    now = [0.0]  # the runner's clock, moved by hand: nothing is cancelled while it stands
    runner = _runner(tmp_path, ANSWER, idle_s=10.0, clock=lambda: now[0])
    unread = runner.ask("s1", question("events", {"limit": 100}))
    deadline = time.monotonic() + 30
    while runner._jobs[unread["job"]].phase == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runner._jobs[unread["job"]].phase == "done"
    now[0] = 9.0
    runner.ask("s2", question("events", {"limit": 100}))  # any question sweeps; not yet idle long enough
    assert unread["job"] in runner._jobs
    now[0] = 10.5
    runner.ask("s2", question("events", {"limit": 100}))
    assert unread["job"] not in runner._jobs
    runner.close()


def test_questions_past_the_limit_are_refused_and_no_source_names_the_fix(tmp_path: Path) -> None:
    runner = _runner(tmp_path, SLOW, max_jobs=1)
    runner.ask("s1", question("events", {"limit": 100}))
    with pytest.raises(QuestionBusyError, match="1 history questions are running"):
        runner.ask("s2", question("events", {"limit": 100}))
    runner.close()
    with pytest.raises(HistoryNotConfiguredError, match="--history-archive"):
        QuestionRunner(None).ask("s1", question("events", {"limit": 100}))
    missing = QuestionRunner(HistorySource(data_dir=tmp_path / "none"))
    with pytest.raises(HistoryNotConfiguredError, match="aclstore history archive --data-dir"):
        missing.ask("s1", question("events", {"limit": 100}))


def _pid(runner: QuestionRunner, job: str) -> int:
    process = runner._jobs[job].process  # the child, to see it end
    assert process is not None
    return process.pid


def test_serve_names_the_history_the_console_asks(tmp_path: Path) -> None:
    from cli import build_parser
    from cli.serve import node_settings

    args = ["serve", "--data-dir", str(tmp_path), "--history-remote", "sc://127.0.0.1:15002",
            "--history-archive", "s3a://bucket/history"]  # fmt: skip
    history = node_settings(build_parser().parse_args(args)).history
    assert history == HistorySource(data_dir=tmp_path, archive="s3a://bucket/history",
                                    remote="sc://127.0.0.1:15002")  # fmt: skip
    default = node_settings(build_parser().parse_args(["serve", "--data-dir", str(tmp_path)])).history
    assert default is not None and default.archive_location == str(tmp_path.resolve() / "history")
    assert default.remote is None
