"""The archive job on a real standalone Spark cluster, not only ``local``.

A master and one worker are started on loopback from the pyspark package's own
``bin/spark-class`` (``org.apache.spark.deploy.master.Master`` / ``worker.Worker``), the
``aclstore history archive --once`` command runs against ``spark://127.0.0.1:PORT`` in its own
process (a driver whose executors live in the worker), and the archived events are compared
with the events written.  Both daemons are stopped in ``finally``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devtools.kafka_process import free_port

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Cluster:
    master_url: str
    ui_url: str
    logs: Path
    pids: tuple[int, ...]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the daemon's own process group (spark-class and the JVM it execs), then SIGKILL."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(15)


def _master_state(ui_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{ui_url}/json/", timeout=2) as response:
        state: dict[str, Any] = json.load(response)
        return state


def _wait(what: str, check: Any, logs: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.3)
    tails = {p.name: p.read_text(errors="replace")[-2000:] for p in logs.glob("*.log")}
    raise AssertionError(f"{what} did not come up in {timeout_s} s; logs: {tails}")


@contextmanager
def standalone_cluster(workdir: Path) -> Iterator[Cluster]:
    """A master and one worker (1 core, 1 GB) on 127.0.0.1, stopped on exit."""
    home = _spark_home()
    logs = workdir / "logs"
    logs.mkdir(parents=True)
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",  # the web UIs too bind to loopback, not every interface
        "SPARK_LOG_DIR": str(logs),
        "SPARK_DAEMON_MEMORY": "512m",
    }
    port, ui_port, worker_ui_port = free_port(), free_port(), free_port()
    spark_class = str(home / "bin" / "spark-class")
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        with (logs / f"{name}.log").open("wb") as out:
            processes.append(
                subprocess.Popen(
                    [spark_class, *args],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

    master_url, ui_url = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
    try:
        start("master", "org.apache.spark.deploy.master.Master",
              "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port))  # fmt: skip
        _wait("the master", lambda: _master_state(ui_url)["status"] == "ALIVE", logs)
        start("worker", "org.apache.spark.deploy.worker.Worker", master_url,
              "--host", "127.0.0.1", "--webui-port", str(worker_ui_port), "--cores", "1",
              "--memory", "1g", "--work-dir", str(workdir / "work"))  # fmt: skip
        _wait("the worker", lambda: _master_state(ui_url)["aliveworkers"] == 1, logs)
        yield Cluster(master_url, ui_url, logs, tuple(p.pid for p in processes))
    finally:
        for process in reversed(processes):
            _stop(process)


def listening_addresses(pids: tuple[int, ...]) -> set[str]:
    """The local addresses the daemons (spark-class execs the JVM, same pid) listen on."""
    import psutil

    addresses = set()
    for pid in pids:
        for conn in psutil.Process(pid).net_connections(kind="inet"):
            if conn.status == psutil.CONN_LISTEN:
                addresses.add(conn.laddr.ip.removeprefix("::ffff:"))
    return addresses


def cluster_defaults(conf_dir: Path) -> dict[str, str]:
    """The environment of a driver whose ``spark-defaults.conf`` (``SPARK_CONF_DIR``) sizes
    its work for this one-core worker, as an operator sizes a cluster's: the partition counts
    of a local session (Delta reads a table's log into 50 tasks by default, two thirds of the
    job's run on one core) and the JVMs' client compiler alone (a run of seconds)."""
    from jobs.common.session import LOCAL_CONF, QUERY_JVM_OPTIONS

    conf_dir.mkdir(parents=True, exist_ok=True)
    defaults = {**LOCAL_CONF, "spark.driver.extraJavaOptions": QUERY_JVM_OPTIONS,
                "spark.executor.extraJavaOptions": QUERY_JVM_OPTIONS}  # fmt: skip
    (conf_dir / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in defaults.items()))
    return {**os.environ, "SPARK_CONF_DIR": str(conf_dir)}


def aclstore(
    *args: str, timeout: float = 400, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        capture_output=True, text=True, timeout=timeout, check=False, env=env,
    )  # fmt: skip


def delta_rows(table: Path) -> list[dict[str, Any]]:
    """A Delta table's rows read without Spark: the Parquet files its log adds and does not
    remove, in commit order (so the check needs no second SparkSession, and runs beside the
    tests that share the first one)."""
    import pyarrow.parquet as pq

    live: dict[str, None] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = None
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    rows: list[dict[str, Any]] = []
    for path in live:
        rows.extend(pq.read_table(table / urllib.parse.unquote(path)).to_pylist())
    return rows


def test_the_archive_job_runs_on_a_loopback_cluster_that_then_stops(tmp_path: Path) -> None:
    """The cluster comes up on loopback only; ``history archive --once --master spark://...``
    runs on it and every event written is in the archive; on exit the cluster is stopped.

    One cluster for the three claims: each start of a master and a worker is two JVMs, and
    nothing of the job depends on a cluster that ran nothing before.
    """
    from jobs.history.tables import events_path
    from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    data = tmp_path / "data"
    bindings = [
        AclBinding.of(
            ResourceType.TOPIC,
            f"t{i}",
            PatternType.LITERAL,
            f"User:u{i % 3}",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        for i in range(30)
    ]
    with EmbeddedChangeLog(data / "log") as log:
        admin = AclAdmin(log, super_users=["User:admin"])
        created = admin.create_acls(bindings, actor="User:admin").offset
        admin.delete_acls([b.to_filter() for b in bindings[:5]], actor="User:admin")
    archive = tmp_path / "archive"
    with standalone_cluster(tmp_path / "cluster") as cluster:
        state = _master_state(cluster.ui_url)
        assert state["url"] == cluster.master_url
        (worker,) = state["workers"]
        assert worker["host"] == "127.0.0.1" and worker["cores"] == 1
        assert listening_addresses(cluster.pids) == {"127.0.0.1"}
        result = aclstore("history", "archive", "--once", "--data-dir", str(data),
                          "--archive", str(archive), "--master", cluster.master_url,
                          env=cluster_defaults(tmp_path / "conf"))  # fmt: skip
        assert result.returncode == 0, result.stderr[-4000:]
        finished = _master_state(cluster.ui_url)["completedapps"]
    with pytest.raises(OSError):
        _master_state(cluster.ui_url)
    # The job ran as an application of this cluster, not in a local session.
    assert [app["name"] for app in finished] == ["aclstore-history"]
    rows = delta_rows(Path(events_path(str(archive))))
    created_rows = sorted(r["offset"] for r in rows if r["type"] == "ACL_CREATED")
    assert created_rows == list(range(created - 29, created + 1))
    deleted = {r["name"] for r in rows if r["type"] == "ACL_DELETED"}
    assert deleted == {f"t{i}" for i in range(5)}
