"""A node cut off from its log while it keeps being asked for decisions.

The broker holding the log is frozen (SIGSTOP: its connections stay open and nothing
answers, the hardest case for a client) while a client asks the node (``aclstore serve``, a
child process) for a decision every few milliseconds.  What the README promises:

* every decision is still answered, from the replica's own applied state, and says the offset
  it reflects (the one applied before the log went away);
* within the log-end refresh interval plus its timeout the node says it cannot see the log:
  ``aclstore_replica_log_error`` 1, ``aclstore_replica_lag`` absent, the log end's age
  growing; ``/readyz`` stays 200 with ``lag`` null and ``logError`` set;
* a decision that asks for a fresher state (``minOffset`` past what was applied) is refused
  with a 503 after the node's wait bound (``--max-wait-ms``), never answered from the older
  state (fail closed);
* once the broker runs again, a new write is answered at its offset, and the lag is 0.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fault_support import ServeProcess, topic_binding, wait_until

from devtools.kafka_process import LocalKafka
from store.acl import AclOperation

REFRESH_BOUND_S = 3.0
"""The README's bound: the log end is refreshed every second, a refresh may take 2 s."""

MAX_WAIT_MS = 1000


def _ask(node: ServeProcess, principal: str, topic: str, min_offset: int | None = None) -> tuple[int, Any]:
    body: dict[str, Any] = {
        "principal": principal, "host": "10.0.0.1",
        "actions": [{"operation": "READ", "resourceType": "TOPIC", "resourceName": topic}],
    }  # fmt: skip
    if min_offset is not None:
        body["minOffset"] = min_offset
    return node.request("POST", "/v1/authorize", body)


class Asker:
    """A client thread asking for one allowed and one denied decision, over and over."""

    def __init__(self, node: ServeProcess) -> None:
        self.node = node
        self.answers: list[tuple[float, int, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for principal in ("User:alice", "User:mallory"):
                status, body = _ask(self.node, principal, "orders")
                self.answers.append((time.monotonic(), status, body))
            time.sleep(0.005)

    def stop(self) -> list[tuple[float, int, Any]]:
        self._stop.set()
        self._thread.join(10)
        return self.answers


def test_cut_off_node_answers_from_its_state_says_so_fails_closed_on_fresher_asks_then_recovers(
    restartable_broker: LocalKafka, unique_topic: Any, tmp_path: Path
) -> None:
    topic = unique_topic("cutoff")
    node = ServeProcess(
        tmp_path / "node", "--bootstrap-servers", restartable_broker.bootstrap_servers,
        "--topic", topic, "--max-wait-ms", str(MAX_WAIT_MS),
    )  # fmt: skip
    broker_group = restartable_broker.pid
    assert broker_group is not None
    frozen = False
    try:
        node.wait_ready()
        with node.admin() as admin:
            applied = admin.create_acls([topic_binding("User:alice", "orders")]).offset
            assert applied is not None
            assert _ask(node, "User:alice", "orders", applied)[1]["results"] == ["ALLOWED"]
        assert node.metrics()["aclstore_replica_log_error"] == 0

        asker = Asker(node)
        os.killpg(broker_group, signal.SIGSTOP)
        frozen, frozen_at = True, time.monotonic()
        wait_until(lambda: node.metrics()["aclstore_replica_log_error"] == 1,
                   REFRESH_BOUND_S + 2, "aclstore_replica_log_error 1")  # fmt: skip
        said_at = time.monotonic() - frozen_at
        time.sleep(2.0)  # cut off for a while: answers must keep coming
        figures = node.metrics()
        assert "aclstore_replica_lag" not in figures
        assert figures["aclstore_replica_log_end_age_seconds"] >= said_at + 1.5
        status, ready = node.request("GET", "/readyz")
        assert status == 200 and ready["lag"] is None and ready["logError"], ready
        assert ready["offset"] == applied

        started = time.monotonic()
        status, refused = _ask(node, "User:alice", "orders", applied + 1)
        waited = time.monotonic() - started
        assert status == 503, refused
        assert refused["error"] == "ConsistencyTimeoutError" and refused["offset"] == applied
        assert MAX_WAIT_MS / 1000 * 0.9 <= waited < MAX_WAIT_MS / 1000 + 2

        answers = asker.stop()
        while_cut = [(status, body) for at, status, body in answers if at > frozen_at]
        assert len(while_cut) > 100, f"only {len(while_cut)} answers while cut off"
        seen = Counter((status, tuple(body["results"]), body["offset"]) for status, body in while_cut)
        assert set(seen) == {(200, ("ALLOWED",), applied), (200, ("DENIED",), applied)}, seen

        os.killpg(broker_group, signal.SIGCONT)
        frozen = False
        with node.admin() as admin:
            later = admin.create_acls(
                [topic_binding("User:mallory", "orders", AclOperation.READ)]
            ).offset
        assert later is not None and later > applied
        status, answer = _ask(node, "User:mallory", "orders", later)
        assert status == 200 and answer["results"] == ["ALLOWED"] and answer["offset"] >= later
        wait_until(lambda: node.metrics().get("aclstore_replica_lag") == 0, 10, "a lag of 0")
        assert node.metrics()["aclstore_replica_log_error"] == 0
        status, ready = node.request("GET", "/readyz")
        assert status == 200 and ready["lag"] == 0 and ready["logError"] is None, ready
    finally:
        if frozen:
            os.killpg(broker_group, signal.SIGCONT)
        assert node.stop() == 0, node.stderr()
