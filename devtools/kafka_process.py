"""A real Apache Kafka broker (KRaft, combined broker + controller) as a local JVM process.

The jars come from Maven Central (:func:`devtools.maven.kafka_classpath`); storage is
formatted with Kafka's own ``StorageTool``; the broker listens on loopback only, on free ports
chosen once so that a restarted broker keeps its address.  ``stop()`` / ``start()`` keep the
data directory, which is what a broker-restart test needs.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from devtools.errors import BrokerStartError
from devtools.maven import kafka_classpath, require_java

FAST_COMPACTION: Mapping[str, str] = {
    # The cleaner wakes often and cleans as soon as anything is dirty, so tests can observe
    # compaction within seconds. Topics still need small segment.ms to roll segments.
    "log.cleaner.backoff.ms": "250",
    "log.cleaner.min.cleanable.ratio": "0.01",
    "log.cleaner.min.compaction.lag.ms": "0",
    "log.segment.delete.delay.ms": "500",
    "log.retention.check.interval.ms": "1000",
}
"""Broker settings for tests that observe log compaction."""

_LOG4J2 = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cluster_id() -> str:
    """A random KRaft cluster id, never starting with ``-``: StorageTool's argument parser
    would take such an id for an option (Kafka's ``Uuid.randomUuid`` skips them too)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


SASL_LISTENER = "SASL"
"""The client listener's name when the broker authenticates clients (SASL_PLAINTEXT, PLAIN)."""
INTER_BROKER_USER = "admin"
"""The SASL user the broker itself connects as; it must be one of ``sasl_users``."""
INTERNAL_LISTENER = "INTERNAL"
"""An early-start SASL_PLAINTEXT listener for a sidecar that reads its log from this broker."""


class LocalKafka:
    """One KRaft node acting as broker and controller, bound to 127.0.0.1.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.  ``log_path`` is the
    broker's own log (kept after stop, for a failing test's report).

    ``sasl_users`` (name -> password) makes the client listener SASL_PLAINTEXT with PLAIN, the
    broker connecting to itself as ``admin`` (the controller listener stays PLAINTEXT, so its
    callers are ``User:ANONYMOUS``); :meth:`client_config` gives a user's client settings.
    ``extra_classpath`` adds jars (an authorizer plugin) to the broker's classpath.

    ``internal_listener`` (with ``sasl_users``) adds :data:`INTERNAL_LISTENER`, SASL_PLAINTEXT
    on its own loopback port, to ``early.start.listeners`` beside the controller listener: it
    serves before the authorizer's ``start()`` futures complete, so a sidecar can read the ACL
    log from this broker while the client listener waits for that sidecar.
    ``jvm_options`` are added to the broker's JVM command line (a JAAS file, as ``KAFKA_OPTS``).
    """

    def __init__(
        self,
        workdir: Path,
        *,
        overrides: Mapping[str, str] | None = None,
        heap: str = "768m",
        sasl_users: Mapping[str, str] | None = None,
        extra_classpath: Sequence[Path] = (),
        internal_listener: bool = False,
        jvm_options: Sequence[str] = (),
    ) -> None:
        self.workdir = Path(workdir)
        self.broker_port = free_port()
        self.controller_port = free_port()
        self.internal_port = free_port() if internal_listener else None
        self.overrides = dict(overrides or {})
        self.heap = heap
        self.sasl_users = dict(sasl_users or {})
        if self.sasl_users and INTER_BROKER_USER not in self.sasl_users:
            raise BrokerStartError(
                f"sasl_users must include {INTER_BROKER_USER!r}, the user the broker connects "
                f"to itself as; got {sorted(self.sasl_users)}"
            )
        if internal_listener and not self.sasl_users:
            raise BrokerStartError("internal_listener needs sasl_users (it is SASL_PLAINTEXT)")
        self.extra_classpath = tuple(Path(p) for p in extra_classpath)
        self.jvm_options = tuple(jvm_options)
        self._proc: subprocess.Popen[bytes] | None = None
        self._formatted = False
        self._ever_started = False

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def internal_bootstrap_servers(self) -> str:
        """The early-start listener's address (``internal_listener=True`` only)."""
        if self.internal_port is None:
            raise BrokerStartError("this broker has no internal listener")
        return f"127.0.0.1:{self.internal_port}"

    def client_config(self, user: str | None = None) -> dict[str, str | int | float | bool]:
        """confluent-kafka settings to reach this broker, as SASL ``user`` when it needs one."""
        config: dict[str, str | int | float | bool] = {"bootstrap.servers": self.bootstrap_servers}
        if self.sasl_users:
            name = user or INTER_BROKER_USER
            config |= {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": name,
                "sasl.password": self.sasl_users[name],
            }
        return config

    @property
    def log_path(self) -> Path:
        return self.workdir / "logs" / "server.log"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The broker JVM's process id while it runs (a benchmark reads its CPU time)."""
        return self._proc.pid if self.running and self._proc is not None else None

    def _properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.broker_port},"
                f"CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.num.partitions": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
        }
        if self.sasl_users:
            props.update(self._sasl_properties())
        props.update(FAST_COMPACTION)
        props.update(self.overrides)
        return props

    def _sasl_properties(self) -> dict[str, str]:
        def quoted(value: str) -> str:
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

        users = " ".join(f"user_{name}={quoted(pw)}" for name, pw in self.sasl_users.items())
        jaas = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f"username={quoted(INTER_BROKER_USER)} "
            f"password={quoted(self.sasl_users[INTER_BROKER_USER])} {users};"
        )
        listener = SASL_LISTENER.lower()
        props = {
            "listeners": (
                f"{SASL_LISTENER}://127.0.0.1:{self.broker_port},"
                f"CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"{SASL_LISTENER}://127.0.0.1:{self.broker_port}",
            "listener.security.protocol.map": f"{SASL_LISTENER}:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": SASL_LISTENER,
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            f"listener.name.{listener}.plain.sasl.jaas.config": jaas,
        }
        if self.internal_port is not None:
            internal = f"{INTERNAL_LISTENER}://127.0.0.1:{self.internal_port}"
            props["listeners"] += f",{internal}"
            props["advertised.listeners"] += f",{internal}"
            props["listener.security.protocol.map"] += f",{INTERNAL_LISTENER}:SASL_PLAINTEXT"
            props[f"listener.name.{INTERNAL_LISTENER.lower()}.plain.sasl.jaas.config"] = jaas
            # Setting early.start.listeners replaces its default (the controller listeners,
            # KafkaConfig.earlyStartListeners): the controller listener is named again.
            props["early.start.listeners"] = f"CONTROLLER,{INTERNAL_LISTENER}"
        return props

    def _java(self, main: str, *args: str, log: Path | None = None) -> list[str]:
        classpath = os.pathsep.join(str(p) for p in [*kafka_classpath(), *self.extra_classpath])
        cmd = [require_java(), f"-Xmx{self.heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
               *self.jvm_options]  # fmt: skip
        if log is not None:
            config = self.workdir / "log4j2.properties"
            config.write_text(_LOG4J2.format(log=log))
            cmd.append(f"-Dlog4j2.configurationFile={config}")
        return [*cmd, "-cp", classpath, main, *args]

    def _format(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "logs").mkdir(exist_ok=True)
        props = self.workdir / "server.properties"
        # java.util.Properties reads a backslash as an escape: each is written twice.
        escaped = {k: v.replace("\\", "\\\\") for k, v in self._properties().items()}
        props.write_text("".join(f"{k}={v}\n" for k, v in escaped.items()))
        if (self.workdir / "data" / "meta.properties").exists():
            self._formatted = True
            return
        cluster_id = _cluster_id()
        proc = subprocess.run(
            self._java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props)),
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise BrokerStartError(
                f"formatting KRaft storage in {self.workdir} failed: {proc.stderr.strip()[-500:]}"
            )
        self._formatted = True

    def start_in_background(self, *, timeout: float = 120.0) -> BackgroundStart:
        """:meth:`start` on a thread, for a broker whose start waits on something started
        after it (the sidecar its authorizer plugin waits for)."""
        return BackgroundStart(self, timeout)

    def start(self, *, timeout: float = 120.0) -> str:
        """Start (or restart) the broker and wait until it answers metadata requests.

        The ports are chosen free, but another process can take one before the JVM binds
        it; on a first start that loses such a race the broker is retried on new ports
        (a restart keeps its ports, so clients keep their bootstrap address).
        """
        for attempt in range(3):
            try:
                return self._start_once(timeout)
            except BrokerStartError:
                if self._ever_started or attempt == 2 or not self._lost_port_race():
                    raise
                self.broker_port, self.controller_port = free_port(), free_port()
                if self.internal_port is not None:
                    self.internal_port = free_port()
        raise AssertionError("unreachable")

    def _lost_port_race(self) -> bool:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return False
        return "Address already in use" in text or "BindException" in text

    def _start_once(self, timeout: float) -> str:
        if self.running:
            return self.bootstrap_servers
        self._format()
        stdout = (self.workdir / "logs" / "stdout.log").open("ab")
        self._proc = subprocess.Popen(
            self._java("kafka.Kafka", str(self.workdir / "server.properties"), log=self.log_path),
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stdout.close()
        self._wait_ready(timeout)
        self._ever_started = True
        return self.bootstrap_servers

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise BrokerStartError(
                    f"the Kafka broker exited with code {self._proc.returncode} during start; "
                    f"see {self.log_path}"
                )
            if _port_open(self.broker_port):
                admin = AdminClient(self.client_config())
                try:
                    metadata = admin.list_topics(timeout=2)
                    if metadata.brokers:
                        return
                except Exception:  # the broker is still starting; KafkaException until it answers
                    pass
            time.sleep(0.2)
        self.stop()
        raise BrokerStartError(
            f"the Kafka broker did not answer within {timeout:.0f}s; see {self.log_path}"
        )

    def stop(self, *, timeout: float = 30.0) -> None:
        """Stop gracefully (SIGTERM, a controlled shutdown), killing it after ``timeout``."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def kill(self) -> None:
        """SIGKILL the broker (a crash, for fault tests)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def __enter__(self) -> LocalKafka:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@contextlib.contextmanager
def bootstrap_or_local_broker(label: str, *, heap: str = "768m") -> Iterator[str]:
    """``KAFKA_BOOTSTRAP_SERVERS`` when set, else a LocalKafka in a temporary folder.

    For benchmarks and tools that need a real broker for the length of one ``with`` block.
    """
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield external
        return
    with tempfile.TemporaryDirectory(prefix=f"{label}-kafka-") as workdir, LocalKafka(
        Path(workdir), heap=heap
    ) as broker:
        yield broker.bootstrap_servers


class BackgroundStart:
    """A :meth:`LocalKafka.start` running on a thread; its failure, if any, in ``failures``."""

    def __init__(self, broker: LocalKafka, timeout: float) -> None:
        self.failures: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(broker, timeout), daemon=True)
        self._thread.start()

    def _run(self, broker: LocalKafka, timeout: float) -> None:
        try:
            broker.start(timeout=timeout)
        except BaseException as exc:  # the caller reads it after join
            self.failures.append(exc)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
