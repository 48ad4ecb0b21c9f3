"""A real broker whose authorizer is the plugin, and ``aclstore serve`` as its sidecar.

The sidecar runs as the product's own command (``python -m cli serve``) on the
embedded default, so stopping it is stopping a process, as an operator would; the broker is a
:class:`devtools.kafka_process.LocalKafka` with SASL/PLAIN users and the plugin's jar.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer

from devtools.java import SHORT_RUN_JVM_OPTIONS
from devtools.kafka_process import LocalKafka, free_port
from devtools.plugin import AUTHORIZER_CLASS, plugin_jar

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SUPER_USERS = "User:admin;User:ANONYMOUS"
"""``admin``, and the controller listener's callers: PLAINTEXT, so ``User:ANONYMOUS``."""


class Sidecar:
    """``aclstore serve`` on the embedded log in ``data_dir``, on one loopback port for life."""

    def __init__(self, data_dir: Path, *, extra_args: tuple[str, ...] = ()) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.extra_args = extra_args
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def command_config(self) -> Path:
        return self.data_dir / "admin.properties"

    def start(self, timeout: float = 60.0) -> None:
        log = (self.data_dir.parent / f"{self.data_dir.name}.out").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "serve", "--data-dir", str(self.data_dir),
             "--listen", f"127.0.0.1:{self.port}", *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        wait_until(self.ready, timeout, f"the sidecar at {self.url} to be ready")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=1) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def cli(self, *args: str) -> str:
        """``aclstore <args> --command-config admin.properties``; fails the test on an error."""
        proc = subprocess.run(
            [sys.executable, "-m", "cli", *args, "--command-config",
             str(self.command_config)],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout


def plugin_broker(workdir: Path, sidecar: Sidecar, **overrides: str) -> LocalKafka:
    """A KRaft broker (SASL_PLAINTEXT, PLAIN users :data:`USERS`) authorized by the plugin."""
    return LocalKafka(
        workdir,
        sasl_users=USERS,
        extra_classpath=[plugin_jar()],
        jvm_options=SHORT_RUN_JVM_OPTIONS,
        overrides={
            "authorizer.class.name": AUTHORIZER_CLASS,
            "super.users": SUPER_USERS,
            "aclstore.url": sidecar.url,
            "aclstore.command.config": str(sidecar.command_config),
            "aclstore.request.timeout.ms": "2000",
            **overrides,
        },
    )


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def produce(broker: LocalKafka, user: str, topic: str, *, timeout: float = 15.0) -> int:
    """Produce one record as ``user``; the delivery's Kafka error code (0: delivered)."""
    producer = Producer({
        **broker.client_config(user), "message.timeout.ms": int(timeout * 1000),
        "enable.idempotence": False, "acks": "all",
    })  # fmt: skip
    outcome: list[int] = []

    def delivered(err: KafkaError | None, _: Any) -> None:
        outcome.append(0 if err is None else err.code())

    producer.produce(topic, value=uuid.uuid4().bytes, on_delivery=delivered)
    producer.flush(timeout + 5)
    assert outcome, f"no delivery report for {user} on {topic}"
    return outcome[0]


def consume_one(
    broker: LocalKafka, user: str, topic: str, group: str, *, timeout: float = 15.0
) -> int:
    """Poll ``topic`` as ``user`` in ``group`` until a record or an error: its error code
    (0: a record was read)."""
    consumer = Consumer({
        **broker.client_config(user), "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })  # fmt: skip
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is None:
                return 0
            if error.code() != KafkaError._PARTITION_EOF:
                return int(error.code())
        return -1
    finally:
        consumer.close()
