"""The log's broker killed with SIGKILL and restarted (same log directories, same port) while
everything that reads and writes the log is at work:

* two nodes (``aclstore serve`` processes) tail the topic and answer decisions, which a client
  keeps asking for (every denial is audited, so both nodes' audit spools and senders work);
* a client thread writes through the first node: creates, and now and then a delete;
* the history archive job and the audit job run as streaming queries in the test's Spark
  session.

Afterwards, read back from the log itself (a fresh reader, the store's own fold):

* each write whose call returned success is in the log exactly once, at the offset the call
  returned; every call that did not return success raised the client's typed error;
* both nodes reach the log's end, and their bindings are the log's;
* the jobs, run once more from their checkpoints, resume where they stopped: the archive
  holds each offset of the log once, and the audit table holds each event the two nodes
  spooled once (by id), none missing (per spool, its sequence numbers 0..written-1).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fault_support import ServeProcess, log_state, node_bindings, topic_binding, wait_until

from devtools.kafka_process import LocalKafka
from jobs.audit.job import decisions_path, run_audit
from jobs.common import LogSource
from jobs.common.streaming import Running
from jobs.history.job import run_archive
from jobs.history.tables import events_path
from replicator.client import StoreClientError
from replicator.server.audit import SPOOL_DIR
from replicator.server.audit.progress import WRITTEN, Progress
from replicator.server.audit.spool import ID_FILE
from store.acl import AclBinding
from store.fold import ChangeKind, fold_record
from store.log import KafkaChangeLog

DOWN_S = 3.0
"""How long the broker stays dead before it is started again."""


@dataclass
class Writes:
    """What the writer's calls returned: successes with their offsets, and failures."""

    created: list[tuple[AclBinding, int]] = field(default_factory=list)
    deleted: list[tuple[AclBinding, int]] = field(default_factory=list)
    failed: list[BaseException] = field(default_factory=list)
    in_doubt: list[AclBinding] = field(default_factory=list)
    """Bindings a delete that failed was asked to remove: its outcome is unknown (the broker
    may have stored the record and died before it acknowledged it), as the error says."""


def write_until(node: ServeProcess, stop: threading.Event, writes: Writes) -> None:
    with node.admin(timeout_s=60.0) as admin:
        i = 0
        while not stop.is_set():
            binding = topic_binding(f"User:w{i}", f"orders-{i % 5}")
            victim = None
            try:
                if i % 4 == 3 and writes.created:
                    victim = writes.created[-2][0]
                    answer = admin.delete_acls([victim.to_filter()])
                    removed = [b for r in answer.results for b in r.deleted]
                    assert answer.offset is not None
                    writes.deleted.extend((b, answer.offset) for b in removed)
                else:
                    created = admin.create_acls([binding])
                    assert created.offset is not None
                    writes.created.append((binding, created.offset))
            except Exception as exc:  # kept, and checked below for its type
                writes.failed.append(exc)
                if victim is not None:
                    writes.in_doubt.append(victim)
            i += 1
            time.sleep(0.02)


def ask_until(
    nodes: list[ServeProcess], stop: threading.Event, answered: list[tuple[float, int]]
) -> None:
    body = {
        "principal": "User:mallory", "host": "10.0.0.9",
        "actions": [{"operation": "READ", "resourceType": "TOPIC", "resourceName": "orders-1"}],
    }  # fmt: skip
    while not stop.is_set():
        for n, node in enumerate(nodes):
            try:
                status, answer = node.request("POST", "/v1/authorize", body)
            except OSError:
                continue
            if status == 200:
                assert answer["results"] == ["DENIED"], answer
                answered.append((time.monotonic(), n))
        time.sleep(0.01)


def log_changes(bootstrap: str, topic: str) -> dict[int, Any]:
    """Every record of the log by offset, read by the store's fold."""
    log = KafkaChangeLog(bootstrap, topic, create_topic=False)
    try:
        end = log.watermarks()[1]
        out: dict[int, Any] = {}
        while len(out) < end:
            records = log.read(len(out), max_records=10_000, timeout=2.0)
            assert records, f"the log reads no further than {len(out)} of {end}"
            out.update((r.offset, fold_record(r)) for r in records)
        return out
    finally:
        log.close()


def _said(exc: BaseException) -> str:
    return f"{getattr(exc, 'status', '')} {getattr(exc, 'error', '')}: {str(exc)[:90]}"


def batches_done(spark: Any) -> dict[str, int]:
    """The last completed batch of each running query by name (-1: none yet)."""
    return {q.name: int((q.lastProgress or {}).get("batchId", -1)) for q in spark.streams.active}


def stop_queries(spark: Any, running: list[Running]) -> tuple[list[str], list[BaseException]]:
    """Stop the streaming queries: which were still running (name and last batch), and what
    each job raised (none, or its failure)."""
    active = []
    for query in spark.streams.active:
        progress = query.lastProgress or {}
        active.append(f"{query.name}@{progress.get('batchId')}")
        query.stop()
    return active, [error for job in running if (error := job.error()) is not None]


@pytest.mark.timeout(300)
def test_broker_sigkill_and_restart_loses_nothing_applies_nothing_twice_and_every_job_resumes(
    restartable_broker: LocalKafka, spark: Any, tmp_path: Path
) -> None:
    began = time.monotonic()
    bootstrap = restartable_broker.bootstrap_servers
    topic = f"crash-{uuid.uuid4().hex[:10]}"
    options = ("--bootstrap-servers", bootstrap, "--topic", topic)
    nodes = [ServeProcess(tmp_path / "node1", *options)]
    nodes.append(ServeProcess(tmp_path / "node2", *options))
    archive, audit = str(tmp_path / "archive"), str(tmp_path / "audit")
    archive_cp, audit_cp = str(tmp_path / "archive-cp"), str(tmp_path / "audit-cp")
    log_source = LogSource.kafka(bootstrap, topic)
    audit_source = LogSource.kafka(bootstrap, f"{topic}-audit")
    stop = threading.Event()
    writes, answered = Writes(), list[tuple[float, int]]()
    threads: list[threading.Thread] = []
    try:
        for node in nodes:
            node.wait_ready()
        with nodes[0].admin() as admin:
            admin.create_acls([topic_binding("User:seed", "orders-0")])
        jobs = [
            Running(lambda: run_archive(spark, log_source, archive, archive_cp, once=False)),
            Running(lambda: run_audit(spark, audit_source, audit, audit_cp, once=False)),
        ]
        wait_until(lambda: sorted(batches_done(spark).values())[:1] >= [0] and len(batches_done(spark)) == 2,
                   90, "a batch of each job")  # fmt: skip
        threads = [
            threading.Thread(target=write_until, args=(nodes[0], stop, writes), daemon=True),
            threading.Thread(target=ask_until, args=(nodes, stop, answered), daemon=True),
        ]
        for thread in threads:
            thread.start()
        wait_until(lambda: len(writes.created) >= 10, 60, "writes before the crash")

        print(f"phase: kill at {time.monotonic() - began:.1f} s")
        restartable_broker.kill()
        killed_at, down_from = len(writes.created), time.monotonic()
        time.sleep(DOWN_S)
        restartable_broker.start()
        down_until = time.monotonic()
        print(f"phase: broker back at {time.monotonic() - began:.1f} s")
        wait_until(lambda: len(writes.created) >= killed_at + 10, 90, "writes after the restart")
        stop.set()
        for thread in threads:
            thread.join(90)
            assert not thread.is_alive(), "a client thread is stuck"
        print(f'phase: restarted, traffic done at {time.monotonic() - began:.1f} s')
        before = batches_done(spark)
        with contextlib.suppress(AssertionError):  # a figure: whether they went on by themselves
            wait_until(lambda: all(
                batches_done(spark).get(name, -1) > done for name, done in before.items()
            ), 20, "a batch of each job after the restart")  # fmt: skip
        print(f"phase: batches before {before}, after {batches_done(spark)}")
        still_running, failed_jobs = stop_queries(spark, jobs)

        # Calls that did not succeed raised the client's typed error: the node's refusal (a
        # 503 naming the log's error), or the node not answering in time.
        for exc in writes.failed:
            assert isinstance(exc, StoreClientError), repr(exc)
            assert (exc.status == 503 and exc.error) or exc.unreachable, (exc.status, exc.error, exc)
        # Each success is in the log once, at the offset it returned.
        changes = log_changes(bootstrap, topic)
        end = max(changes)
        for binding, offset in writes.created:
            change = changes[offset]
            assert change.kind is ChangeKind.CREATED and change.binding == binding, (offset, change)
        for binding, offset in writes.deleted:
            change = changes[offset]
            assert change.kind is ChangeKind.DELETED and change.binding == binding, (offset, change)
        creations = Counter(c.binding for c in changes.values() if c.kind is ChangeKind.CREATED)
        assert max(creations.values()) == 1, creations.most_common(3)

        # Both nodes reach the log's end; their bindings are the log's.
        expected = log_state(bootstrap, topic)
        assert expected.offset == end
        # A delete whose outcome was unknown may have landed or not; every other created
        # binding is still there, and the log deleted nothing no call asked to delete.
        asked_to_delete = {b for b, _ in writes.deleted} | set(writes.in_doubt)
        assert {c.binding for c in changes.values() if c.kind is ChangeKind.DELETED} <= asked_to_delete
        live = {b for b, _ in writes.created} - asked_to_delete
        assert live <= set(expected.index)
        for node in nodes:
            wait_until(lambda: node.wait_ready()["offset"] == end, 30, "the log's end")  # noqa: B023
            assert node_bindings(node) == set(expected.index)
        # Both answered decisions while the broker was down.
        while_down = Counter(n for at, n in answered if down_from < at < down_until)
        assert while_down[0] > 0 and while_down[1] > 0, while_down
        # Every spooled audit event shipped, then the nodes stop.
        for node in nodes:
            wait_until(lambda: node.metrics()["aclstore_audit_buffered_events"] == 0, 60,  # noqa: B023
                       "the audit spool shipped")  # fmt: skip
            assert node.metrics()["aclstore_audit_dropped_events_total"] == 0
        spooled = {}
        for node in nodes:
            assert node.stop() == 0, node.stderr()
            # One spool per decision worker (audit-spool, audit-spool-1, ...).
            for spool in sorted(node.data_dir.glob(f"{SPOOL_DIR}*")):
                spooled[(spool / ID_FILE).read_text().strip()] = Progress(spool).get(WRITTEN)

        # The jobs resume from their checkpoints and drain what is left.
        print(f"phase: checks of the log and nodes done at {time.monotonic() - began:.1f} s")
        run_archive(spark, log_source, archive, archive_cp, once=True)
        run_audit(spark, audit_source, audit, audit_cp, once=True)
        archived = [r[0] for r in spark.read.format("delta").load(events_path(archive))
                    .select("offset").collect()]  # fmt: skip
        assert sorted(archived) == sorted(changes), "the archive holds each offset once"
        ids = [r[0] for r in spark.read.format("delta").load(decisions_path(audit))
               .select("id").collect()]  # fmt: skip
        assert len(ids) == len(set(ids)), "an audit event id twice"
        by_spool: dict[str, set[int]] = {}
        for event_id in ids:
            by_spool.setdefault(event_id[:16], set()).add(int(event_id[16:], 16))
        assert {s: len(seqs) for s, seqs in by_spool.items()} == spooled
        assert all(seqs == set(range(spooled[s])) for s, seqs in by_spool.items())
        print(f"writes: {len(writes.created)} created, {len(writes.deleted)} deleted, "
              f"{len(writes.failed)} failed ({Counter(_said(e) for e in writes.failed)}); "
              f"decisions answered {len(answered)}, while down {dict(while_down)}; "
              f"jobs failed while running: "
              f"{[repr(e)[:300] for e in failed_jobs]}; running until stopped: {still_running}; "
              f"took {time.monotonic() - began:.1f} s")  # fmt: skip
    finally:
        stop.set()
        for query in spark.streams.active:
            query.stop()
        for node in nodes:
            node.stop()
