"""``python -m bench history``: the history archive's throughput and two point-in-time questions.

On the real broker (``KAFKA_BOOTSTRAP_SERVERS``, else a LocalKafka started here), a synthetic
history of 10,000,000 change events (200,000 with ``--quick``, N with ``--events N``) is
produced to a fresh topic with a raw batched producer of properly encoded events (the rate is
printed, not a target): bindings created and, a window later, deleted again (so about 100,000
are live at any point), over topics and groups sharing prefixes, with wildcard, PREFIXED and
DENY bindings and a ``super.users`` / ``allow.everyone.if.no.acl.found`` change every 100,000
events.  One watched binding (``User:bob`` READ on TOPIC ``orders``) is created and deleted ten
times across the history.  Log times are one per 10 ms, the last one now
(:func:`history_start_ms`: within the topic's compaction lag, so the cleaner removes nothing).

Then, on Spark ``local[2]`` (a streaming job's session: both JVM compilers, as ``aclstore history
archive`` runs; each figure is wall time on this machine, shared with whatever else runs on it):

* Spark session start (JVM, jars, Delta): printed apart, in no target;
* ``archive``: ``run_archive(..., once=True)`` over the whole topic into a fresh Delta archive,
  from the call to its return: both tables created, the streaming query started, then every
  micro-batch of up to 1,000,000 records read by Spark's Kafka source and decoded (the common
  event by Spark's Avro reader, the rest by the fold in Python: here the settings changes),
  its rows brought to the driver as Arrow columns and appended to ``events`` while the driver
  folds them into the intervals' rows, which are appended to ``validity``; events / that
  time - TARGET ``archive`` (events/s, >= 100000);
* ``who``: who may READ TOPIC ``orders`` from one host at the middle of the history (a time:
  it is resolved to an offset first), from the call to the answer: one aggregation of
  ``events`` (the archive's end and the time lookup), the tail of the log (empty here), the
  validity rows live then for that resource and the settings (open rows superseded by a
  closed row left out), the decision rules - TARGET ``who`` (s, <= 10);
* ``when``: the intervals in which ``User:bob`` could READ TOPIC ``orders`` over the whole
  history, from the call to the answer: the archive's end and the tail, the resource's
  validity rows (the requester's own and the others' open ones in full, the others' closed
  ones as offsets only), the decision rules at the change points - TARGET ``when`` (s, <= 10).

Both questions run in the same Spark session right after the archive, once each (no warm-up
run): the first query's planning and Delta log reading are part of its time.

The answers' sizes are checked against the generator's own count of the watched binding's
intervals, so a fast wrong answer does not pass.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from bench.produce import produce_events
from bench.report import Target, figure
from devtools.kafka_process import bootstrap_or_local_broker
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.events import AclCreated, AclDeleted, ChangeEvent, ConfigAltered

LIVE_WINDOW: Final = 50_000
"""A binding created by event i is deleted again about this many events later."""
CONFIG_EVERY: Final = 100_000
WATCHED_TOGGLES: Final = 20
"""The watched binding is created and deleted this many times in all (ten intervals)."""
WATCHED: Final = AclBinding.of(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "*",
    AclOperation.READ, AclPermissionType.ALLOW,
)  # fmt: skip
WATCHED_HOST: Final = "10.1.2.3"
STEP_MS: Final = 10
"""One event per 10 ms of log time."""
_OPS: Final = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL)


def churn_binding(j: int) -> AclBinding:
    """The j-th churned binding: topics and groups over shared prefixes, some wildcard or DENY."""
    rt = ResourceType.GROUP if j % 3 == 0 else ResourceType.TOPIC
    principal = f"User:app-{j % 997}"
    if j % 11 == 0:  # prefixes that "orders" may share; one principal each, so j stays unique
        name, pattern, principal = "orders"[: 3 + j % 4], PatternType.PREFIXED, f"User:svc-{j}"
    elif j % 13 == 0:
        name, pattern, principal = "*", PatternType.LITERAL, f"User:svc-{j}"
    else:
        name, pattern = f"svc-{j // 4:07d}.events", PatternType.LITERAL
    return AclBinding.of(
        rt, name, pattern, principal,
        "*" if j % 5 else f"10.1.{j % 7}.{j % 250}",
        _OPS[j % 4],
        AclPermissionType.DENY if j % 7 == 0 else AclPermissionType.ALLOW,
    )  # fmt: skip


def _special(i: int, toggle_every: int) -> str | None:
    """What step i is when it is not churn: the watched binding's toggle or a settings change."""
    if i % toggle_every == toggle_every // 2:
        return "watched"
    if i % CONFIG_EVERY == CONFIG_EVERY - 1:
        return "config"
    return None


def synthetic_history(count: int, t0_ms: int) -> Iterator[ChangeEvent]:
    """``count`` change events, the first at log time ``t0_ms``: mostly churn (create binding
    i; delete the one created a window earlier), with the watched binding's toggles and
    settings changes at fixed steps.

    Pure and deterministic; every delete names a binding its create made live.
    """
    toggle_every = max(count // WATCHED_TOGGLES, 1)
    live_watched = False
    for i in range(count):
        actor, request_id, time_ms = "User:bench", f"r{i}", t0_ms + i * STEP_MS
        special = _special(i, toggle_every)
        if special == "watched":
            live_watched = not live_watched
            kind = AclCreated if live_watched else AclDeleted
            yield kind(binding=WATCHED, actor=actor, request_id=request_id, time_ms=time_ms)
            continue
        if special == "config":
            step = i // CONFIG_EVERY
            name, value = (
                ("allow.everyone.if.no.acl.found", "true" if step % 4 == 1 else "false")
                if step % 2
                else ("super.users", f"User:ops-{step % 5}")
            )
            yield ConfigAltered(name=name, value=value, actor=actor, request_id=request_id, time_ms=time_ms)
            continue
        created = i - 2 * LIVE_WINDOW - 1
        if i % 2 == 1 and created >= 0 and _special(created, toggle_every) is None:
            yield AclDeleted(
                binding=churn_binding(created), actor=actor, request_id=request_id, time_ms=time_ms
            )
        else:
            yield AclCreated(binding=churn_binding(i), actor=actor, request_id=request_id, time_ms=time_ms)


def watched_intervals(count: int) -> int:
    """How many intervals the watched binding is live in (the last may still be open)."""
    toggle_every = max(count // WATCHED_TOGGLES, 1)
    toggles = len(range(toggle_every // 2, count, toggle_every))
    return (toggles + 1) // 2


def history_start_ms(count: int) -> int:
    """The log time of the first of ``count`` events so that the last one is now.

    The topic has the store's settings, so the cleaner may compact a record once its log
    time is ``min.compaction.lag.ms`` (7 days) old; a history stamped further back would be
    compacted while it is produced, and the archive would read only what compaction left
    (the 10,000,000-event run did: 2 of the watched binding's 10 intervals).  An archive
    running beside the log reads every record within that lag; stamped up to now, the
    bench's history is all there too (10,000,000 events span 28 hours)."""
    return int(time.time() * 1000) - count * STEP_MS


def prefill(bootstrap: str, topic: str, count: int, t0_ms: int) -> float:
    """Produce the synthetic history to ``topic`` (batched, lz4, event times); return events/s."""
    return produce_events(
        bootstrap,
        topic,
        synthetic_history(count, t0_ms),
        event_time=True,
        flush_timeout=300,
        progress_every=1_000_000,
    )


def run(quick: bool, events: int | None = None) -> list[Target]:
    count = events if events is not None else 200_000 if quick else 10_000_000
    topic = f"bench-history-{uuid.uuid4().hex[:8]}"
    with (
        bootstrap_or_local_broker("bench-history", heap="1g") as bootstrap,
        tempfile.TemporaryDirectory(prefix="bench-history-") as work,
    ):
        print(f"history of {count} events on {topic}:", flush=True)
        t0_ms = history_start_ms(count)
        figure("prefill (raw batched producer)", prefill(bootstrap, topic, count, t0_ms), "events/s")
        return measure(bootstrap, topic, count, t0_ms, Path(work))


def measure(bootstrap: str, topic: str, count: int, t0_ms: int, work: Path) -> list[Target]:
    from jobs.common import LogSource, build_session
    from jobs.history import HistoryArchive

    started = time.perf_counter()
    spark = build_session("bench-history", master="local[2]", conf={"spark.ui.showConsoleProgress": "false"},
                          streaming=True)
    figure("Spark session start (apart, in no target)", time.perf_counter() - started, "s")
    try:
        source = LogSource.kafka(bootstrap, topic)
        location, checkpoint = str(work / "archive"), str(work / "checkpoint")
        started = time.perf_counter()
        archive = HistoryArchive.for_path(spark, location, source=source)
        archive.update(checkpoint, once=True)
        archive_s = time.perf_counter() - started
        archive_rate = count / archive_s
        figure(f"archive of {count} events", archive_s, "s")

        middle_ms = t0_ms + (count // 2) * STEP_MS
        started = time.perf_counter()
        who = archive.who(
            resource_type=ResourceType.TOPIC, resource_name="orders", operation=AclOperation.READ,
            host=WATCHED_HOST, at_ms=middle_ms,
        )  # fmt: skip
        who_s = time.perf_counter() - started
        figure(f"who (answer at offset {who.offset}: {len(who.allowed)} allowed)", who_s, "s")

        started = time.perf_counter()
        when = archive.when(
            principal=WATCHED.principal, host=WATCHED_HOST, operation=AclOperation.READ,
            resource_type=ResourceType.TOPIC, resource_name="orders",
        )  # fmt: skip
        when_s = time.perf_counter() - started
        figure(f"when ({len(when.intervals)} intervals)", when_s, "s")
        # Only the watched binding ever lets User:bob READ "orders" (no super user is bob, and
        # wildcard bindings keep "no ACL found" from applying): exactly its intervals.
        if len(when.intervals) != watched_intervals(count):
            raise RuntimeError(
                f"when found {len(when.intervals)} intervals; the history has "
                f"{watched_intervals(count)} for the watched binding"
            )
    finally:
        spark.stop()
    return [
        Target("archive", archive_rate, "events/s", 100_000),
        Target("who", who_s, "s", 10, higher_is_better=False),
        Target("when", when_s, "s", 10, higher_is_better=False),
    ]
