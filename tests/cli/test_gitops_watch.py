"""``aclstore drift --watch`` as a process next to a node: an out-of-band change becomes an
alert row (stdout and ``--alerts``) with the right actor and offset, the Prometheus text file
follows, and ``--revert`` writes the revert as an event of its own, with the watcher's
credential as its actor, printed as it is written."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sidecar_support import admin_client, run_cli, start_node

from replicator.contract.bindings import binding_from_json
from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

FILE = """\
version: 1
scope:
  resources: [{resourceType: TOPIC, prefix: orders.}]
acls:
  - principals: [User:app]
    operations: [READ]
    resources: [{resourceType: TOPIC, name: orders.in}]
"""
DECLARED = AclBinding.of(ResourceType.TOPIC, "orders.in", PatternType.LITERAL, "User:app", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
SNEAKED = AclBinding.of(ResourceType.TOPIC, "orders.out", PatternType.LITERAL, "User:eve", "*",
                        AclOperation.WRITE, AclPermissionType.ALLOW)  # fmt: skip


def changes(node: Node) -> list[Any]:
    """Every record of the node's log, through the one fold."""
    from store.fold import fold_records

    assert node.admin is not None
    log, out, offset = node.admin.log, [], 0
    end = log.watermarks()[1]
    while offset < end:
        records = log.read(offset, timeout=2.0)
        out += list(fold_records(records))
        offset = records[-1].offset + 1 if records else offset
    return out


class Watcher:
    def __init__(self, words: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli", *words], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.proc.stderr or []), daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout or []:
            self.lines.put(line)

    def next_row(self, timeout: float = 20.0) -> dict[str, Any]:
        try:
            row: dict[str, Any] = json.loads(self.lines.get(timeout=timeout))
            return row
        except queue.Empty:
            raise AssertionError(f"no alert within {timeout} s; stderr: {''.join(self.err)}") from None

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Node, list[str]]]:
    """A node on the embedded log or on a Kafka topic, and the options that name its log."""
    if request.param == "embedded":
        node = start_node(tmp_path / "node")
        where = ["--data-dir", str(node.data_dir)]
    else:
        bootstrap = request.getfixturevalue("kafka_bootstrap")
        topic = request.getfixturevalue("unique_topic")("drift")
        node = start_node(tmp_path / "node", bootstrap_servers=bootstrap, topic=topic)
        where = ["--bootstrap-servers", bootstrap, "--topic", topic]
    yield node, where
    node.stop()


@pytest.fixture
def applied(
    site: tuple[Node, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[Path]:
    node = site[0]
    path = tmp_path / "orders.yaml"
    path.write_text(FILE)
    assert run_cli(node, capsys, f"apply -f {path}")[0] == 0
    assert node.admin is not None
    node.admin.super_users = node.admin.super_users | {"User:mallory"}
    yield path


def test_an_out_of_band_change_is_alerted_with_its_actor_and_offset(
    site: tuple[Node, list[str]], applied: Path, tmp_path: Path
) -> None:
    node, where = site
    alerts, metrics = tmp_path / "alerts.jsonl", tmp_path / "drift.prom"
    w = Watcher(["drift", "-f", str(applied), *where, "--watch", "--format", "json",
                 "--alerts", str(alerts), "--metrics-file", str(metrics)])  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not metrics.exists():
            assert time.monotonic() < deadline, "".join(w.err)
            time.sleep(0.05)
        assert 'aclstore_drift_bindings{kind="undeclared"} 0' in metrics.read_text()
        assert node.admin is not None
        offset = node.admin.create_acls([SNEAKED], actor="User:mallory").offset
        row = w.next_row()
        assert row["alert"] == "drift" and row["kind"] == "undeclared"
        assert (binding_from_json(row["binding"]), row["actor"], row["offset"]) == (
            SNEAKED,
            "User:mallory",
            offset,
        )
        assert json.loads(alerts.read_text().splitlines()[-1]) == row  # recorded before printed
        deadline = time.monotonic() + 10  # the metrics follow once the batch's alerts are out
        while 'aclstore_drift_bindings{kind="undeclared"} 1' not in metrics.read_text():
            assert time.monotonic() < deadline, metrics.read_text()
            time.sleep(0.05)
        node.admin.delete_acls([SNEAKED.to_filter()], actor="User:mallory")
        row = w.next_row()
        assert row["alert"] == "resolved" and binding_from_json(row["binding"]) == SNEAKED
    finally:
        w.stop()


def test_revert_writes_its_own_event_and_says_so(site: tuple[Node, list[str]], applied: Path) -> None:
    node, where = site
    assert node.info is not None
    w = Watcher(["drift", "-f", str(applied), *where, "--watch", "--revert",
                 "--format", "json", "--store", node.url,
                 "--command-config", str(node.info.credential.properties_path)])  # fmt: skip
    try:
        time.sleep(1.0)  # let it start watching
        assert node.admin is not None
        offset = node.admin.create_acls([SNEAKED], actor="User:mallory").offset
        node.admin.delete_acls([DECLARED.to_filter()], actor="User:mallory")
        rows = [w.next_row()]
        while not any(r["alert"] == "reverted" for r in rows):
            rows.append(w.next_row())
        drifted = {(r["kind"], r["actor"]) for r in rows if r["alert"] == "drift"}
        assert ("undeclared", "User:mallory") in drifted
        reverted = [r for r in rows if r["alert"] == "reverted"]
        assert reverted and all(r["revertOffset"] > offset for r in reverted)
        deadline = time.monotonic() + 20
        while True:
            with admin_client(node) as client:
                live = set(client.describe_acls().bindings)
            if live == {DECLARED}:
                break
            assert time.monotonic() < deadline, (live, rows, "".join(w.err))
            time.sleep(0.1)
        # the revert is its own batch of events, after mallory's, by the watcher's credential
        revert_at = reverted[0]["revertOffset"]
        actors = {(c.offset, c.event.actor) for c in changes(node) if c.event is not None}
        assert (offset, "User:mallory") in actors
        assert {a for o, a in actors if o > offset + 2 and o <= revert_at} == {"User:admin"}
        references = [c.config_value for c in changes(node) if c.config_name == "acl.change.reference"]
        assert references[-1].startswith("drift revert at offset ")
    finally:
        w.stop()
