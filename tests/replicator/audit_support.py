"""A real node (``aclstore serve`` as a child process) and a burst of authorize requests
against it, for the audit tests that kill the node (the independent count is the client's)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class ServeProcess:
    """``aclstore serve`` in a child process, on a free loopback port."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.log_path = data_dir.with_name(data_dir.name + "-serve.log")
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cli", "serve", "--listen", "127.0.0.1:0",
                 "--data-dir", str(data_dir), *extra],
                stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if " serving " not in first:
            self.process.kill()
            raise AssertionError(f"serve did not start: {first!r}\n{self.log_path.read_text()}")
        self.port = int(first.rsplit(":", 1)[1])
        threading.Thread(target=self.process.stdout.read, daemon=True).start()  # drain

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def metrics(self) -> dict[str, float]:
        """The unlabelled samples of ``/metrics`` by name."""
        text = self.get("/metrics")[1].decode()
        found: dict[str, float] = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if line and not line.startswith("#") and "{" not in name:
                found[name] = float(value)
        return found

    def metric(self, name: str) -> float:
        found = self.metrics()
        if name not in found:
            raise AssertionError(f"{name} is not in /metrics")
        return found[name]

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Burst:
    """Sequential authorize requests over one keep-alive connection, each action a new name."""

    def __init__(self, port: int, prefix: str, batch: int, *, pause: float = 0.0) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.prefix = prefix
        self.batch = batch
        self.answered: list[str] = []
        self.in_flight: list[str] = []
        self.unexpected: list[str] = []
        """Answers other than all DENIED, which end the burst: a test running it on a thread
        checks this is empty (an assertion there would end the thread, not the test)."""
        self.requests = 0
        self.pause = pause
        """Seconds between requests (0: as fast as the node answers)."""
        self.spans: list[tuple[float, float, int]] = []
        """Per answered request: wall-clock seconds as sent and as answered, and how many of
        ``answered`` it added (the last ones as of then)."""

    def run(self, *, until: threading.Event | None = None, requests: int | None = None) -> None:
        """Until the node stops answering (killed), ``until`` is set or ``requests`` were sent."""
        while (until is None or not until.is_set()) and (requests is None or self.requests < requests):
            names = [f"{self.prefix}-{self.requests}-{i}" for i in range(self.batch)]
            body = {"principal": "User:burst", "host": "10.1.1.1", "actions": [
                {"operation": "READ", "resourceType": "TOPIC", "resourceName": n} for n in names
            ]}  # fmt: skip
            self.in_flight = names
            self.requests += 1
            sent = time.time()
            try:
                self.conn.request("POST", "/v1/authorize", body=json.dumps(body))
                response = self.conn.getresponse()
                answer = json.loads(response.read())
            except (OSError, http.client.HTTPException, ValueError):
                return  # the node is gone: this request's answer never arrived
            if response.status != 200 or answer.get("results") != ["DENIED"] * self.batch:
                self.unexpected.append(f"{response.status} {json.dumps(answer)[:300]}")
                return  # its names stay in flight: unanswered
            self.answered.extend(names)
            self.spans.append((sent, time.time(), len(names)))
            self.in_flight = []
            if self.pause:
                time.sleep(self.pause)
        self.conn.close()
