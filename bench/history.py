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

A second topic holds a small history of 1,000 events of the same shape.

In-session figures (no TARGET: inner calls, in the archive's warm session): the archive's rate
(``HistoryArchive.update(once=True)``), ``who`` at the middle of the history and ``when`` over
all of it.

Then the commands, each a fresh process as a user types it, with its wall time and the peak
RSS of its process tree (:func:`bench.process.run_command`):

* ``aclstore history archive --once`` over the whole topic into a fresh archive, JVM start
  included - TARGET ``archive_cli`` (events/s, >= 100000); the small history's archive too;
* ``aclstore history who`` and ``when`` with a Spark of their own (figures: what a question
  costs without a server);
* ``aclstore spark-connect start`` (figure), then the questions with ``--remote``, on a warm
  server (as an auditor meets it: a server that stays up and has been asked of the archive
  before; the first question after the start, and the first of each archive, are printed as
  figures): ``who`` on the small history three times - TARGET ``who_cli_small`` (s, the
  median, <= 3); ``who`` at the middle of the big one three times - TARGET ``who_cli_10m``
  (s, the median, <= 10); ``when`` over all of it three times - TARGET ``when_cli_10m`` (s,
  the median, <= 10); then ``spark-connect stop``.

Every answer's content is checked: ``when`` has the generator's count of the watched
binding's intervals; ``who`` names ``User:bob`` exactly when the watched binding is live at
the middle; and the ``--remote`` answers equal the own-Spark ones, so a fast wrong answer
does not pass.  The load average is printed before, after and beside each command.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.process import CommandRun, aclstore_argv, load_average, run_command
from bench.produce import produce_events
from bench.report import Target, figure, median
from devtools.kafka_process import bootstrap_or_local_broker, free_port
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


SMALL_EVENTS: Final = 1_000
"""The small history of ``who_cli_small``."""


def watched_live_at(count: int, offset: int) -> bool:
    """Whether the watched binding is live just after event ``offset`` of a ``count``-event
    history (one record per event, so event i is at offset i)."""
    toggle_every = max(count // WATCHED_TOGGLES, 1)
    return len(range(toggle_every // 2, offset + 1, toggle_every)) % 2 == 1


def run(quick: bool, events: int | None = None) -> list[Target]:
    count = events if events is not None else 200_000 if quick else 10_000_000
    topic = f"bench-history-{uuid.uuid4().hex[:8]}"
    print(f"load average before: {load_average()}", flush=True)
    with (
        bootstrap_or_local_broker("bench-history", heap="1g") as bootstrap,
        tempfile.TemporaryDirectory(prefix="bench-history-") as work,
    ):
        print(f"history of {count} events on {topic}:", flush=True)
        t0_ms = history_start_ms(count)
        figure("prefill (raw batched producer)", prefill(bootstrap, topic, count, t0_ms), "events/s")
        small = f"{topic}-small"
        small_t0 = history_start_ms(SMALL_EVENTS)
        prefill(bootstrap, small, SMALL_EVENTS, small_t0)
        targets = measure(bootstrap, topic, count, t0_ms, Path(work))
        big, little = History(topic, count, t0_ms), History(small, SMALL_EVENTS, small_t0)
        targets += measure_commands(bootstrap, big, little, Path(work))
    print(f"load average after: {load_average()}", flush=True)
    return targets


@dataclass(frozen=True, slots=True)
class History:
    """One synthetic history on a topic: how many events, and the first one's log time."""

    topic: str
    count: int
    t0_ms: int

    def middle_ms(self) -> int:
        return self.t0_ms + (self.count // 2) * STEP_MS


@dataclass(frozen=True, slots=True)
class BuiltArchive:
    """The synthetic history archived on its own: the archive's folder and the history it
    holds (its topic, on a broker gone since; event i at log offset i)."""

    location: Path
    history: History


def built_archive(count: int, work: Path) -> BuiltArchive:
    """The :func:`synthetic_history` of ``count`` events produced to a fresh topic (on
    ``KAFKA_BOOTSTRAP_SERVERS``, else a LocalKafka started here) and archived with ``aclstore
    history archive --once`` into ``work/archive``.

    With ``ACLSTORE_BENCH_CACHE=DIR`` the archive built for a count is kept under
    ``DIR/history-archive-<count>`` (with the history's first log time) and copied from there
    on the next call instead of being built again."""
    cache = os.environ.get("ACLSTORE_BENCH_CACHE")
    kept = Path(cache) / f"history-archive-{count}" if cache else None
    location = work / "archive"
    if kept is not None and (kept / "history.json").is_file():
        started = time.perf_counter()
        shutil.copytree(kept / "archive", location)
        history = History(**json.loads((kept / "history.json").read_text()))
        figure(f"archive of {count} events copied from {kept}", time.perf_counter() - started, "s")
        return BuiltArchive(location, history)
    history = History(f"bench-history-{uuid.uuid4().hex[:8]}", count, history_start_ms(count))
    with bootstrap_or_local_broker("bench-history", heap="1g") as bootstrap:
        rate = prefill(bootstrap, history.topic, count, history.t0_ms)
        figure(f"prefill of {count} events (raw batched producer)", rate, "events/s")
        archived = archive_argv(bootstrap, history, location)
        _timed(f"aclstore history archive --once ({count} events)", archived)
    if kept is not None:
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(location, kept / "archive")
        fields = {"topic": history.topic, "count": history.count, "t0_ms": history.t0_ms}
        (kept / "history.json").write_text(json.dumps(fields))
    return BuiltArchive(location, history)


def _question(bootstrap: str, history: History, archive: Path, *words: str) -> list[str]:
    """``aclstore history WORDS`` on the history's topic and archive, answering in JSON."""
    return aclstore_argv(
        "history", *words, "--bootstrap-servers", bootstrap, "--topic", history.topic,
        "--archive", str(archive), "--format", "json",
    )  # fmt: skip


def _who(bootstrap: str, history: History, archive: Path, *extra: str) -> list[str]:
    return _question(bootstrap, history, archive, "who", "--resource-type", "TOPIC", "--resource-name",
                     "orders", "--operation", "READ", "--host", WATCHED_HOST, "--at",
                     str(history.middle_ms()), *extra)  # fmt: skip


def _when(bootstrap: str, history: History, archive: Path, *extra: str) -> list[str]:
    return _question(bootstrap, history, archive, "when", "--principal", WATCHED.principal,
                     "--resource-type", "TOPIC", "--resource-name", "orders", "--operation", "READ",
                     "--host", WATCHED_HOST, *extra)  # fmt: skip


def _timed(label: str, argv: list[str]) -> CommandRun:
    done = run_command(argv).check()
    figure(f"{label} (peak RSS {done.peak_rss_mb:.0f} MB, load {load_average()})", done.wall_s, "s")
    return done


def _check_who(label: str, run: CommandRun, history: History) -> None:
    """The answer names User:bob exactly when the watched binding is live at the middle (only
    it ever lets bob READ orders: no super user is bob, no DENY names him, wildcard and
    prefixed bindings on other principals keep "no ACL found" from applying)."""
    allowed = {e["principal"] for e in json.loads(run.stdout)["allowed"]}
    expected = watched_live_at(history.count, history.count // 2)
    if (WATCHED.principal in allowed) != expected:
        raise RuntimeError(f"{label}: User:bob allowed {not expected}; the history says {expected}")


def _check_when(label: str, run: CommandRun, history: History) -> None:
    found = len(json.loads(run.stdout)["intervals"])
    if found != watched_intervals(history.count):
        raise RuntimeError(f"{label}: {found} intervals; the history has {watched_intervals(history.count)}")


def _median_of_three(label: str, argv: list[str], check: Callable[[CommandRun], None]) -> float:
    """``argv`` run three times, each answer checked: the median wall (s)."""
    runs = [_timed(f"aclstore history {label}, run {n}", argv) for n in (1, 2, 3)]
    for one in runs:
        check(one)
    return median([one.wall_s for one in runs])


def _answers_who(history: History, own: CommandRun | None = None) -> Callable[[CommandRun], None]:
    """A ``who --remote`` answer's check: the history's, and (``own``) the same as the answer
    of a Spark of its own."""

    def check(run: CommandRun) -> None:
        _check_who("who (remote)", run, history)
        if own is not None and json.loads(run.stdout) != json.loads(own.stdout):
            raise RuntimeError("who --remote and who on a Spark of its own differ")

    return check


def _answers_when(history: History, own: CommandRun) -> Callable[[CommandRun], None]:
    def check(run: CommandRun) -> None:
        _check_when("when (remote)", run, history)
        if json.loads(run.stdout) != json.loads(own.stdout):
            raise RuntimeError("when --remote and when on a Spark of its own differ")

    return check


def archive_argv(bootstrap: str, history: History, archive: Path) -> list[str]:
    """``aclstore history archive --once`` of the history's topic into ``archive``."""
    return aclstore_argv("history", "archive", "--once", "--bootstrap-servers", bootstrap,
                         "--topic", history.topic, "--archive", str(archive))  # fmt: skip


def measure_commands(bootstrap: str, big: History, small: History, work: Path) -> list[Target]:
    """The commands as a user types them, each a fresh process: the archive, then the questions
    with a Spark of their own and asked of a Spark Connect server (``--remote``), started once
    (its start, and the first question after it, printed apart)."""
    archive = work / "archive-cli"
    argv = archive_argv(bootstrap, big, archive)
    archived = _timed(f"aclstore history archive --once ({big.count} events, JVM start included)", argv)
    small_archive = work / "archive-small"
    _timed(f"aclstore history archive --once ({small.count} events)",
           archive_argv(bootstrap, small, small_archive))  # fmt: skip

    who_own = _timed("aclstore history who, a Spark of its own", _who(bootstrap, big, archive))
    _check_who("who (own Spark)", who_own, big)
    when_own = _timed("aclstore history when, a Spark of its own", _when(bootstrap, big, archive))
    _check_when("when (own Spark)", when_own, big)

    state = work / "spark-connect"
    port = free_port()
    start = aclstore_argv("spark-connect", "start", "--port", str(port), "--state-dir", str(state))
    url = _timed("aclstore spark-connect start", start).stdout.decode().strip()
    try:
        remote = ("--remote", url)
        asked = _who(bootstrap, small, small_archive, *remote)
        first = _timed("first question after the start (who, small history)", asked)
        _check_who("who (small, first)", first, small)
        who_small_s = _median_of_three("who --remote, small history", asked, _answers_who(small))
        big_who = _who(bootstrap, big, archive, *remote)
        first_big = _timed("first question of the big archive (who)", big_who)
        _check_who("who (remote, first)", first_big, big)
        who_s = _median_of_three("who --remote", big_who, _answers_who(big, who_own))
        big_when = _when(bootstrap, big, archive, *remote)
        when_s = _median_of_three("when --remote", big_when, _answers_when(big, when_own))
    finally:
        run_command(aclstore_argv("spark-connect", "stop", "--state-dir", str(state)))
    return [
        Target("archive_cli", big.count / archived.wall_s, "events/s", 100_000),
        Target("who_cli_10m", who_s, "s", 10, higher_is_better=False),
        Target("when_cli_10m", when_s, "s", 10, higher_is_better=False),
        Target("who_cli_small", who_small_s, "s", 3, higher_is_better=False),
    ]


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
    # In the archive's own warm session, inner calls: figures, not what a user types.
    figure("in-session archive rate", archive_rate, "events/s")
    figure("in-session who", who_s, "s")
    figure("in-session when", when_s, "s")
    return []
