"""``aclstore spark-connect``: a local Spark Connect server, for questions that skip the JVM's start.

* ``spark-connect start``: start the server in the background (as Spark's
  ``start-connect-server.sh`` does) and print its URL; ``--foreground`` runs it in this process
  until interrupted;
* ``spark-connect status`` / ``stop``.

``aclstore history who … --remote sc://HOST:PORT`` (and every history question, and
``audit report``) asks a running server; ``--remote local`` asks the local server this command
started, starting it first when it is not running (that first question pays the start).

The server's record (its pid, port and log file) lives under ``--state-dir`` (default
``$ACLSTORE_SPARK_CONNECT_DIR``, else ``~/.cache/aclstore/spark-connect``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from store.errors import InvalidConfigError

STATE_DIR_ENV: Final = "ACLSTORE_SPARK_CONNECT_DIR"
LOCAL: Final = "local"
START_TIMEOUT_S: Final = 180.0
STOP_TIMEOUT_S: Final = 30.0


class SparkConnectError(InvalidConfigError):
    """The local Spark Connect server could not be started, reached or stopped."""


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """What ``start`` wrote down: the server's process, port, master and log file."""

    pid: int
    port: int
    master: str
    log: str

    @property
    def url(self) -> str:
        from jobs.common.connect import LOOPBACK, url_of

        return url_of(LOOPBACK, self.port)


def default_state_dir() -> Path:
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    cache = os.environ.get("ACLSTORE_CACHE_DIR") or str(Path.home() / ".cache" / "aclstore")
    return Path(cache) / "spark-connect"


def add_parser(commands: Any) -> None:
    from jobs.common.connect import DEFAULT_PORT

    parser = commands.add_parser(
        "spark-connect", help="a local Spark Connect server (history questions without a JVM start)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )  # fmt: skip
    sub = parser.add_subparsers(dest="connect_command", metavar="SUBCOMMAND", required=True)
    parser.set_defaults(handler=lambda args: parser.error("choose a subcommand"))
    for name, helptext in (("start", "start the server (in the background)"),
                           ("status", "whether the server runs, and its URL"),
                           ("stop", "stop the server")):  # fmt: skip
        command = sub.add_parser(name, help=helptext)
        command.add_argument("--state-dir", type=Path, default=None,
                             help=f"where the server's record lives (default: ${STATE_DIR_ENV} or "
                             "~/.cache/aclstore/spark-connect)")  # fmt: skip
        if name == "start":
            command.add_argument("--port", type=int, default=DEFAULT_PORT,
                                 help="the port on 127.0.0.1 (default: %(default)s)")  # fmt: skip
            command.add_argument("--master", default="local[2]", help="the server's Spark master "
                                 "(default: %(default)s)")  # fmt: skip
            command.add_argument("--foreground", action="store_true",
                                 help="run in this process until interrupted")  # fmt: skip
        command.set_defaults(handler=globals()[f"run_{name}"])


def _state_dir(args: argparse.Namespace) -> Path:
    return args.state_dir if args.state_dir is not None else default_state_dir()


def run_start(args: argparse.Namespace) -> int:
    state = _state_dir(args)
    if args.foreground:
        argv, env = _server_command(args.port, args.master)
        return subprocess.call(argv, env=env)
    record = start_server(state, port=args.port, master=args.master)
    print(record.url)
    return 0


def run_status(args: argparse.Namespace) -> int:
    record = running_server(_state_dir(args))
    if record is None:
        print("not running")
        return 1
    print(f"running: {record.url} (pid {record.pid}, master {record.master}, log {record.log})")
    return 0


def run_stop(args: argparse.Namespace) -> int:
    stopped = stop_server(_state_dir(args))
    print("stopped" if stopped else "not running")
    return 0


# --- the server's process ----------------------------------------------------------------------


def _server_command(port: int, master: str) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment: a local session's settings and jars, and
    this Python for its workers (the jobs' Arrow functions import the product)."""
    from jobs.common.connect import server_argv, spark_home
    from jobs.common.session import session_jars, session_settings

    settings = session_settings(master, streaming=True)
    argv = server_argv(home=spark_home(), port=port, master=master, settings=settings,
                       jars=session_jars(settings))  # fmt: skip
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    return argv, env


def _record_path(state: Path) -> Path:
    return state / "server.json"


def _read_record(state: Path) -> ServerRecord | None:
    try:
        return ServerRecord(**json.loads(_record_path(state).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def _alive(pid: int) -> bool:
    """The process runs (a zombie, ended but not yet reaped by its parent, does not)."""
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _listening(port: int) -> bool:
    from jobs.common.connect import LOOPBACK

    with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=0.5):
        return True
    return False


def running_server(state: Path) -> ServerRecord | None:
    """The recorded server, if its process lives and its port accepts connections."""
    record = _read_record(state)
    if record is None or not _alive(record.pid) or not _listening(record.port):
        return None
    return record


@contextlib.contextmanager
def _locked(state: Path) -> Iterator[None]:
    """One starter or stopper at a time (two commands asking ``--remote local`` at once)."""
    state.mkdir(parents=True, exist_ok=True)
    with (state / "lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def start_server(state: Path, *, port: int, master: str, timeout_s: float = START_TIMEOUT_S) -> ServerRecord:
    """The running server recorded under ``state``, or a new one started in the background
    and waited for until it accepts connections."""
    with _locked(state):
        record = running_server(state)
        if record is not None:
            return record
        if _listening(port):
            raise SparkConnectError(
                f"port {port} on 127.0.0.1 is taken by another process: start with --port "
                "another port, or ask that server with --remote sc://127.0.0.1:PORT"
            )
        argv, env = _server_command(port, master)
        log = state / "server.log"
        with log.open("ab") as out:
            process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        record = ServerRecord(pid=process.pid, port=port, master=master, log=str(log))
        _record_path(state).write_text(json.dumps(asdict(record)), encoding="utf-8")
        deadline = time.monotonic() + timeout_s
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                _terminate(process.pid)
                _record_path(state).unlink(missing_ok=True)
                raise SparkConnectError(
                    f"the Spark Connect server did not start on port {port} within {timeout_s:.0f} s "
                    f"(exit {process.poll()}): see {log}\n{_tail(log)}"
                )
            time.sleep(0.2)
        return record


def stop_server(state: Path) -> bool:
    """Stop the recorded server (its whole process group); False when none was running."""
    with _locked(state):
        record = _read_record(state)
        _record_path(state).unlink(missing_ok=True)
        if record is None or not _alive(record.pid):
            return False
        _terminate(record.pid)
        return True


def _terminate(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _tail(log: Path, lines: int = 15) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    return ""


# --- --remote on the questions ------------------------------------------------------------------


def add_remote_option(parser: argparse.ArgumentParser | Any) -> None:
    parser.add_argument(
        "--remote", metavar="URL",
        help="ask a Spark Connect server instead of starting Spark here: sc://HOST:PORT, or "
        f"'{LOCAL}' for the local server (`aclstore spark-connect start`; started when not running)",
    )  # fmt: skip


def remote_url(remote: str) -> str:
    """``--remote``'s URL: as given, or for ``local`` the local server's (started if needed)."""
    from jobs.common.connect import DEFAULT_PORT

    if remote != LOCAL:
        return remote
    record = start_server(default_state_dir(), port=DEFAULT_PORT, master="local[2]")
    return record.url


def command_session(
    args: argparse.Namespace, app_name: str, *, default_master: str, streaming: bool = False
) -> Any:
    """The session a command runs on: for a question (not ``streaming``) given ``--remote``,
    the server it names; else a session of this process on ``--master`` (``streaming``: a
    streaming job's).  It ends with the process (not stopped here, so that a caller in the
    same process that already has a session keeps it)."""
    from jobs.common.connect import ConnectError, remote_session

    remote = None if streaming else getattr(args, "remote", None)
    if remote is None:
        from jobs.common import build_session

        # No console progress bars: the command's output is its answer.
        return build_session(app_name, master=args.master, conf={"spark.ui.showConsoleProgress": "false"},
                             streaming=streaming)  # fmt: skip
    if args.master != default_master:
        raise InvalidConfigError(
            f"--master {args.master} with --remote: the server's master is its own; drop one "
            "(a local server takes it at `aclstore spark-connect start --master ...`)"
        )
    try:
        return remote_session(remote_url(remote))
    except ConnectError as exc:
        raise SparkConnectError(str(exc)) from exc
