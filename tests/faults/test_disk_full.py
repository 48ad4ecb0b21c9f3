"""The file system under a node's audit spool, or under its index, full.

Each test mounts a small tmpfs at the directory (``<data dir>/audit-spool`` or
``<data dir>/index``) before the node (``aclstore serve`` on a Kafka log) starts, then fills
it with a file until the kernel says ENOSPC, and deletes that file later: space gone and
space back, as an operator sees it.  Mounting needs root (or CAP_SYS_ADMIN); without it the
tests skip and say so.

What must hold: the node refuses what it cannot do with a typed error naming the directory
and the fix (a 503 and a JSON body), ``/readyz`` says so, nothing acknowledged is lost (each
audit event of an answered request reaches the audit log once; each write the log
acknowledged is applied), and the node recovers by itself once the file is deleted.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_support import ServeProcess, log_state, node_bindings, topic_binding, wait_until

from store.log import KafkaChangeLog


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Any]:
    """``mount(size, at)``: a tmpfs of ``size`` bytes mounted at ``at``, unmounted after."""
    mounted: list[Path] = []

    def mount(size: int, at: Path) -> Path:
        at.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(at)],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
        mounted.append(at)
        return at

    yield mount
    for at in reversed(mounted):
        subprocess.run(["umount", str(at)], check=False)


def fill(directory: Path) -> Path:
    """A file that takes every free byte of ``directory``'s file system."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        block = b"\0" * 65536
        while True:
            try:
                os.write(fd, block)
            except OSError:
                if len(block) == 1:
                    break
                block = block[: len(block) // 2]
    finally:
        os.close(fd)
    stat = os.statvfs(directory)
    assert stat.f_bavail == 0, f"{directory} still has {stat.f_bavail} blocks free"
    return filler


def ask(node: ServeProcess, principal: str, min_offset: int | None = None) -> tuple[int, Any]:
    body: dict[str, Any] = {
        "principal": principal, "host": "10.0.0.1",
        "actions": [{"operation": "READ", "resourceType": "TOPIC", "resourceName": "orders"}],
    }  # fmt: skip
    if min_offset is not None:
        body["minOffset"] = min_offset
    return node.request("POST", "/v1/authorize", body)


def audit_events(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    log = KafkaChangeLog(bootstrap, topic, create_topic=False)
    try:
        end = log.watermarks()[1]
        out: list[dict[str, Any]] = []
        offset = 0
        while offset < end:
            records = log.read(offset, timeout=2.0)
            assert records, f"the audit topic ends at {offset}, not {end}"
            out.extend(json.loads(r.value) for r in records if r.value is not None)
            offset = records[-1].offset + 1
        return out
    finally:
        log.close()


def test_full_spool_refuses_audited_decisions_loses_no_answered_event_and_recovers(
    kafka_bootstrap: str, tmpfs: Any, tmp_path: Path
) -> None:
    topic = f"spoolfull-{uuid.uuid4().hex[:10]}"
    data = tmp_path / "node"
    # Two decision workers, each writing its own spool (audit-spool, audit-spool-1): both full.
    spools = [tmpfs(512 << 10, data / name) for name in ("audit-spool", "audit-spool-1")]
    node = ServeProcess(
        data, "--bootstrap-servers", kafka_bootstrap, "--topic", topic,
        "--audit-allow-sample-rate", "0", "--decision-workers", "2",
    )  # fmt: skip
    answered = 0  # requests of mallory answered 200: each is one audited denial
    try:
        node.wait_ready()
        with node.admin() as admin:
            applied = admin.create_acls([topic_binding("User:alice", "orders")]).offset
        for _ in range(4):  # its first use, on each worker (the connections go round)
            assert ask(node, "User:alice", applied)[1]["results"] == ["ALLOWED"]
        for _ in range(20):
            status, answer = ask(node, "User:mallory")
            assert status == 200 and answer["results"] == ["DENIED"], answer
            answered += 1

        fillers = [fill(spool) for spool in spools]
        # What is left of the page a segment ends in still takes lines (tmpfs allocates by
        # page): answered, so audited, until a line finds no room, on each worker; then every
        # audited decision is refused.
        refused_in_a_row = 0
        for _ in range(3000):
            status, refused = ask(node, "User:mallory")
            if status == 200:
                answered += 1
                refused_in_a_row = 0
                continue
            assert status == 503, refused
            assert refused["error"] == "AuditSpoolWriteError", refused
            assert any(str(s) in refused["message"] for s in spools), refused
            assert "Free space" in refused["message"], refused
            refused_in_a_row += 1
            if refused_in_a_row == 10:
                break
        assert refused_in_a_row == 10, "audited decisions still answered with both spools full"
        # A decision that is not audited (an allow outside the sample) is still answered.
        status, answer = ask(node, "User:alice")
        assert status == 200 and answer["results"] == ["ALLOWED"], answer
        status, ready = node.request("GET", "/readyz")
        assert status == 503 and any(str(s) in ready["storageError"] for s in spools), ready

        for filler in fillers:
            filler.unlink()
        status, ready = node.request("GET", "/readyz")
        assert status == 200 and ready["storageError"] is None, ready
        for _ in range(20):
            status, answer = ask(node, "User:mallory")
            assert status == 200 and answer["results"] == ["DENIED"], answer
            answered += 1
        wait_until(lambda: node.metrics()["aclstore_audit_buffered_events"] == 0, 30,
                   "every spooled event shipped")  # fmt: skip
        assert node.metrics()["aclstore_audit_dropped_events_total"] == 0
    finally:
        assert node.stop() == 0, node.stderr()

    events = audit_events(kafka_bootstrap, f"{topic}-audit")
    by_id: dict[str, dict[str, Any]] = {}
    for event in events:
        assert by_id.setdefault(event["id"], event) == event, "one id, two different events"
    denials = [e for e in by_id.values() if e["data"]["principal"] == "User:mallory"]
    assert len(denials) == answered >= 40
    assert all(e["data"]["result"] == "DENIED" for e in denials)


def test_full_index_file_system_stops_applying_says_so_and_applies_every_write_once_room_returns(
    kafka_bootstrap: str, tmpfs: Any, tmp_path: Path
) -> None:
    topic = f"indexfull-{uuid.uuid4().hex[:10]}"
    data = tmp_path / "node"
    index = tmpfs(16 << 20, data / "index")
    node = ServeProcess(
        data, "--bootstrap-servers", kafka_bootstrap, "--topic", topic, "--no-audit",
        "--max-wait-ms", "1000",
    )  # fmt: skip
    try:
        node.wait_ready()
        with node.admin() as admin:
            applied = admin.create_acls([topic_binding("User:alice", "orders")]).offset
            assert applied is not None
            assert ask(node, "User:alice", applied)[1]["results"] == ["ALLOWED"]

            filler = fill(index)
            # The log takes writes: each is acknowledged with its offset, and must not be lost.
            written = [
                admin.create_acls([topic_binding(f"User:u{i}", "orders")]).offset
                for i in range(5)
            ]
            last = written[-1]
            assert last is not None and last > applied

            def refused() -> bool:
                status, ready = node.request("GET", "/readyz")
                return status == 503 and str(index) in (ready.get("storageError") or "")

            wait_until(refused, 10, "/readyz naming the full index")
            status, ready = node.request("GET", "/readyz")
            assert ready["offset"] == applied and "no space" in ready["storageError"], ready
            # Answers come from what was applied, at its offset; a fresher ask is refused.
            status, answer = ask(node, "User:alice")
            assert status == 200 and answer == {"results": ["ALLOWED"], "offset": applied}
            status, answer = ask(node, "User:u0", last)
            assert status == 503 and answer["error"] == "ConsistencyTimeoutError", answer

            filler.unlink()
            status, answer = ask(node, "User:u4", last)
            assert status == 200 and answer["results"] == ["ALLOWED"], answer
            wait_until(lambda: node.request("GET", "/readyz")[0] == 200, 10, "ready again")
        expected = log_state(kafka_bootstrap, topic)
        assert expected.offset == last
        assert node_bindings(node) == set(expected.index) and len(expected.index) == 6
    finally:
        assert node.stop() == 0, node.stderr()
