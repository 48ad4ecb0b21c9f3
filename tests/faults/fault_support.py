"""What the fault tests share: ``aclstore serve`` as a child process, driven over HTTP, and
the change log replayed independently of any node.

The nodes run as ``python -m cli serve`` processes so that a test means the same thing
whatever runs inside the node (threads or worker processes): it signals the process, reads
its output, and asks its HTTP API.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from replicator.client import ClientConfig, StoreClient
from store.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from store.log import KafkaChangeLog
from store.projection import AclStoreState

ROOT = Path(__file__).resolve().parents[2]


class ServeProcess:
    """``aclstore serve`` in a child process on a free loopback port; its stderr goes to a
    file beside the data dir (read by :meth:`stderr`)."""

    def __init__(self, data_dir: Path, *extra: str, start_timeout: float = 60.0) -> None:
        self.data_dir = data_dir
        self.log_path = data_dir.with_name(data_dir.name + "-serve.log")
        self._lines: list[str] = []
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cli", "serve", "--listen", "127.0.0.1:0",
                 "--data-dir", str(data_dir), *extra],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True,
                cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if " serving " not in first:
            self.process.wait(start_timeout)
            raise ServeFailed(self.process.returncode, self.stderr())
        self.url = first.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.append(line)

    def stderr(self) -> str:
        return self.log_path.read_text(errors="replace")

    def admin(self, timeout_s: float = 30.0) -> StoreClient:
        """A client of this node as its admin (the credential the node wrote)."""
        config = ClientConfig.resolve(
            store=self.url, command_config=self.data_dir / "admin.properties"
        )
        return StoreClient(dataclasses.replace(config, timeout_s=timeout_s))

    def request(
        self, method: str, path: str, body: Any = None, *, timeout: float = 10.0
    ) -> tuple[int, Any]:
        """One HTTP exchange; the answer's JSON (or its text when it is not JSON)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            payload = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=payload)
            response = conn.getresponse()
            raw = response.read()
            try:
                return response.status, json.loads(raw)
            except ValueError:
                return response.status, raw.decode(errors="replace")
        finally:
            conn.close()

    def metrics(self) -> dict[str, float]:
        """The unlabelled samples of ``/metrics`` by name."""
        status, text = self.request("GET", "/metrics")
        assert status == 200, text
        found: dict[str, float] = {}
        for line in str(text).splitlines():
            name, _, value = line.partition(" ")
            if line and not line.startswith("#") and "{" not in name:
                found[name] = float(value)
        return found

    def wait_ready(self, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            status, body = self.request("GET", "/readyz")
            if status == 200:
                return dict(body)
            assert time.monotonic() < deadline, f"not ready within {timeout} s: {body}"
            time.sleep(0.1)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, and wait for the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class ServeFailed(AssertionError):
    """``aclstore serve`` exited before it served: its exit code and stderr."""

    def __init__(self, code: int | None, stderr: str) -> None:
        super().__init__(f"serve exited with {code} before serving:\n{stderr}")
        self.code = code
        self.stderr = stderr


def log_state(bootstrap: str, topic: str, *, timeout: float = 60.0) -> AclStoreState:
    """The whole log folded from its start by the store's own fold (a fresh reader)."""
    log = KafkaChangeLog(bootstrap, topic, create_topic=False)
    try:
        state = AclStoreState()
        end = log.watermarks()[1]
        deadline = time.monotonic() + timeout
        while state.next_offset < end:
            assert time.monotonic() < deadline, f"read stuck at {state.next_offset} of {end}"
            state.apply_records(log.read(state.next_offset, max_records=20_000, timeout=1.0))
        return state
    finally:
        log.close()


def topic_binding(principal: str, topic: str, op: AclOperation = AclOperation.READ) -> AclBinding:
    return AclBinding(
        pattern=ResourcePattern(
            resource_type=ResourceType.TOPIC, name=topic, pattern_type=PatternType.LITERAL
        ),
        entry=AccessControlEntry(
            principal=principal, host="*", operation=op, permission_type=AclPermissionType.ALLOW
        ),
    )


def node_bindings(node: ServeProcess) -> set[AclBinding]:
    with node.admin() as client:
        return set(client.describe_acls().bindings)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def stop_all(nodes: Iterable[ServeProcess]) -> None:
    for node in nodes:
        node.stop()
