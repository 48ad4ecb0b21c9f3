"""Session fixtures: a real Kafka broker and a real local Spark, each started once per run.

Kafka comes from, in order: ``KAFKA_BOOTSTRAP_SERVERS`` (an existing cluster), testcontainers'
Kafka module when a Docker engine answers, else a local KRaft JVM process
(:class:`devtools.kafka_process.LocalKafka`), which must always work.

Tiers: a test that uses a Kafka fixture is marked ``kafka``, one that uses ``spark`` is marked
``spark``, a long loop (SIGKILL, fuzzing, waiting out wall-clock deadlines) is marked ``slow``
by its file, and every other test is ``unit``; ``pytest -m unit`` runs the fast tier alone,
``pytest`` (``make test``) every tier.

Parallel runs: ``make test`` runs pytest-xdist with two workers (``-n 2 --dist loadgroup``).
Every session fixture is then one per worker (each worker starts its own broker, on its own
free ports and in its own temporary folder), so the tests that use ``spark`` are put in one
xdist group: they all run on one worker, and a run still starts one SparkSession.  Every
other test runs on the worker that runs the rest of its module (:mod:`xdist_groups`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import xdist_groups

from devtools.errors import BrokerStartError
from devtools.java import SHORT_RUN_JVM_OPTIONS
from devtools.kafka_process import BackgroundStart, LocalKafka

KAFKA_FIXTURES = {"kafka_bootstrap", "kafka_broker", "unique_topic"}
SPARK_FIXTURES = {"spark"}
SPARK_GROUP = "spark"
"""The xdist group of every test that uses the session's SparkSession."""

_broker_logs: list[Path] = []

INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
"""The test session's setting: expressions interpreted, no whole-stage code generation."""

# No time limit on a Hypothesis example (its default is 200 ms): on two workers and a busy
# machine a pure-logic example can wait that long for a core, and speed is bench/'s business.
hypothesis.settings.register_profile("aclstore", deadline=None)
hypothesis.settings.load_profile("aclstore")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & KAFKA_FIXTURES and not item.get_closest_marker("kafka"):
            item.add_marker(pytest.mark.kafka)
        if fixtures & SPARK_FIXTURES:
            if not item.get_closest_marker("spark"):
                item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.xdist_group(SPARK_GROUP))
        if not any(item.get_closest_marker(m) for m in ("kafka", "spark", "unit", "slow")):
            item.add_marker(pytest.mark.unit)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which tells the controller it is done
def pytest_collection_finish(session: pytest.Session) -> None:
    xdist_groups.record_groups(session.config, session.items)


@pytest.hookimpl(optionalhook=True)  # xdist's hooks: absent when xdist is not installed or is off
def pytest_configure_node(node: Any) -> None:
    xdist_groups.configure_node(node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return xdist_groups.make_scheduler(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    xdist_groups.clean_up(config)


@functools.cache
def _docker_engine_answers() -> bool:
    if os.environ.get("ACLSTORE_KAFKA_MODE", "") == "local" or shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _local_broker_wanted() -> bool:
    """This run starts its own broker (no ``KAFKA_BOOTSTRAP_SERVERS``, no Docker engine)."""
    return not os.environ.get("KAFKA_BOOTSTRAP_SERVERS") and not _docker_engine_answers()


def _uses_the_session_broker(item: pytest.Item) -> bool:
    """A test that asks for the session's broker, or is the ``kafka`` case of a log backend
    parametrization (whose fixture asks for it by name); one that asks for it some other way
    gets it started when it asks."""
    if set(getattr(item, "fixturenames", ())) & KAFKA_FIXTURES:
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "kafka" in callspec.params.values()


@pytest.fixture(scope="session")
def _broker_starting(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalKafka, BackgroundStart] | None]:
    """The session's local broker, its start under way on a thread, or None when the run
    needs none of its own.  Its JVM compiles with the client compiler alone
    (:data:`devtools.java.SHORT_RUN_JVM_OPTIONS`): the tests ask little of it, a request here
    and there over many code paths, and on two cores the server compiler's threads took more
    CPU than they saved (the Kafka cases of the log contract, replica and reliability tests:
    25 s of CPU with them, 19 s without)."""
    wanted = any(_uses_the_session_broker(item) for item in request.session.items)
    if not wanted or not _local_broker_wanted():
        yield None
        return
    broker = LocalKafka(tmp_path_factory.mktemp("kafka"), jvm_options=SHORT_RUN_JVM_OPTIONS)
    _keep_broker_log(request.config, broker.log_path)
    starting = broker.start_in_background()
    try:
        yield broker, starting
    finally:
        starting.join(130)
        broker.stop()


@pytest.fixture(scope="session", autouse=True)
def _start_the_broker_early(_broker_starting: tuple[LocalKafka, BackgroundStart] | None) -> None:
    """A run with Kafka tests starts its broker with the first test, whatever that test needs:
    the broker's JVM comes up while the first tests run (a SparkSession starting, unit tests)
    rather than when the first Kafka test asks for it."""


@pytest.fixture(scope="session")
def kafka_broker(
    request: pytest.FixtureRequest,
    _broker_starting: tuple[LocalKafka, BackgroundStart] | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LocalKafka | None]:
    """The local broker this run started, or None when the run uses another cluster.

    Tests that stop/restart the broker need a LocalKafka and skip (with the reason) otherwise.
    """
    if _broker_starting is not None:
        broker, starting = _broker_starting
        starting.join(130)
        if starting.failures:
            raise starting.failures[0]
        if not broker.running:
            raise BrokerStartError(f"the session's Kafka broker did not start; see {broker.log_path}")
        yield broker
        return
    if not _local_broker_wanted():
        yield None
        return
    # Asked for by a test the collection did not see as a Kafka test: started here and now.
    broker = LocalKafka(tmp_path_factory.mktemp("kafka"), jvm_options=SHORT_RUN_JVM_OPTIONS)
    _keep_broker_log(request.config, broker.log_path)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: LocalKafka | None) -> Iterator[str]:
    """Bootstrap address of a real Kafka cluster for the whole run."""
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if kafka_broker is not None:
        yield kafka_broker.bootstrap_servers
    elif external:
        yield external
    else:  # a Docker engine answers: testcontainers' Kafka module (KRaft)
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer().with_kraft() as container:
            yield container.get_bootstrap_server()


@pytest.fixture
def restartable_broker(kafka_broker: LocalKafka | None) -> Iterator[LocalKafka]:
    """The session's local broker, for tests that stop, kill, freeze or restart it; running
    (and not frozen) again afterwards."""
    if kafka_broker is None:
        pytest.skip("the session's Kafka is not a local broker this run can stop and restart")
    yield kafka_broker
    if kafka_broker.pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(kafka_broker.pid, signal.SIGCONT)  # a test that froze it (SIGSTOP)
    if not kafka_broker.running:
        kafka_broker.start()


@pytest.fixture
def unique_topic(kafka_bootstrap: str) -> Callable[[str], str]:
    """A factory of topic names no other test uses."""

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    return make


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local SparkSession (``local[2]``) with Spark's Kafka source, for the whole run.

    Its expressions are evaluated by Spark's interpreter, not by generated Java code
    (:data:`INTERPRETED`): the same switch Spark's own SQL tests flip to run each query both
    ways.  The tests' tables hold tens to thousands of rows, so compiling each new plan's code
    cost more than running it (about a fifth of the Spark tests' CPU, measured on the history
    tests); the jobs themselves, and ``bench/``, keep Spark's default.
    """
    from devtools.maven import write_spark_jars_file
    from jobs.common import build_session

    write_spark_jars_file()  # the list the jobs read in development (cached: no Maven run)
    session = build_session(
        "aclstore-tests", warehouse=tmp_path_factory.mktemp("warehouse"), conf=INTERPRETED
    )
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Spark Connect server as ``aclstore spark-connect start`` runs it (one for the run,
    ``local[1]``, on a free port), and the state dir that records it: ``(state, record)``.

    Its JVMs compile with the client compiler alone, as the test session's do: the server
    inherits ``JAVA_TOOL_OPTIONS`` (:data:`devtools.java.SHORT_RUN_JVM_OPTIONS`), which its
    command line does not contradict.  A server a user starts runs for hours; this one answers
    a few dozen questions over tables of tens of rows, and took 25 s of CPU for those of
    test_spark_connect and test_audit_report_cause instead of 51 s."""
    from cli.spark_connect import start_server, stop_server
    from devtools.kafka_process import free_port

    state = tmp_path_factory.mktemp("spark-connect")
    before = os.environ.get("JAVA_TOOL_OPTIONS")
    os.environ["JAVA_TOOL_OPTIONS"] = " ".join(SHORT_RUN_JVM_OPTIONS)
    try:
        record = start_server(state, port=free_port(), master="local[1]")
    finally:  # only the server's JVMs: nothing else starts while it is set
        if before is None:
            del os.environ["JAVA_TOOL_OPTIONS"]
        else:
            os.environ["JAVA_TOOL_OPTIONS"] = before
    try:
        yield state, record
    finally:
        stop_server(state)


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Path:
    """A fresh Structured Streaming checkpoint folder."""
    path = tmp_path / "checkpoint"
    path.mkdir()
    return path


def _keep_broker_log(config: pytest.Config, log: Path) -> None:
    """Remember a broker's log for the summary of a failing run; on an xdist worker it also
    goes into the worker's output, which the controller (where the summary is written) reads
    when the worker ends."""
    _broker_logs.append(log)
    worker_output = getattr(config, "workeroutput", None)
    if worker_output is not None:
        worker_output.setdefault("broker_logs", []).append(str(log))


@pytest.hookimpl(optionalhook=True)  # an xdist hook: absent when xdist is not installed or is off
def pytest_testnodedown(node: Any, error: object) -> None:
    worker_output = getattr(node, "workeroutput", None) or {}
    _broker_logs.extend(Path(log) for log in worker_output.get("broker_logs", ()))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if exitstatus != 0 and _broker_logs:
        for log in _broker_logs:
            terminalreporter.write_line(f"Kafka broker log kept for this failing run: {log}")
