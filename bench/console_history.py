"""``ui_when_answer`` of ``python -m bench console``: the Access over time page's "when" against
the command line's own time for the same question; and the Changes feed's pages, as figures.

An ``aclstore serve`` node (a child process, the embedded default) started with
``--history-remote`` naming a Spark Connect server (``aclstore spark-connect start``'s, on a
free port) and a history:

* the full run: ``bench history``'s synthetic history of 10,000,000 events (N with ``--events
  N``), produced to a fresh topic and archived (:func:`bench.history.built_archive`, kept
  under ``$ACLSTORE_BENCH_CACHE`` when set, so a second run copies it instead of building it)
  and given to the node as ``--history-archive``.  The node's own log is empty: the questions,
  the page's and the command's alike, ask the archive with an empty tail after it;
* ``--quick``: 200 writes through the node's admin API (the watched binding of ``User:bob``
  created and deleted in turn, among others), archived with ``aclstore history archive
  --once`` from the node's log.

Both sides warm (one question each first), then three rounds each:

* the command: ``aclstore history when … --remote URL --format json``, its wall time;
* the page: ``/ui/access`` with the same fields, from the form's submit to the intervals in
  the document (the page's ``when-asked`` and ``when-drawn`` performance marks).

TARGET ``ui_when_answer``: the page's median at most the command's median + 1 s.  Both answers
are checked: the number of the watched binding's intervals (hand-counted from the toggling, or
:func:`bench.history.watched_intervals`).

Figures (no TARGET), three rounds each after one to warm: the feed's first page and the page
at the middle of the history by its cursor, as the Changes page asks them (from its
``feed-asked`` to its ``feed-shown`` mark), and the same pages as ``aclstore history events
--limit 100 [--after OFFSET]``.  Every record of these histories is one event, so a page's
offsets are known: the hundred after its cursor; both answers are checked against them.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from bench.history import WATCHED_HOST, BuiltArchive, built_archive, watched_intervals
from bench.process import load_average, run_command
from bench.report import Target, figure, median
from bench.sidecar import _Server
from replicator.client import StoreClient
from replicator.client.config import ClientConfig
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

CHROMIUM: Final = "/usr/bin/chromium"
ROUNDS: Final = 3
PAGE: Final = 100
"""The feed's page (the Changes page's own size)."""
BIG_HISTORY: Final = 10_000_000
FIELDS: Final = {"principal": "User:bob", "resourceType": "TOPIC", "resourceName": "orders",
                 "operation": "READ", "host": "10.0.0.1"}  # fmt: skip
WATCHED: Final = AclBinding.of(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "*",
                               AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip


def _other(i: int) -> AclBinding:
    return AclBinding.of(ResourceType.TOPIC, f"t-{i % 50}", PatternType.LITERAL, f"User:u{i}", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip


def _write_history(node: _Server, changes: int) -> tuple[int, int]:
    """``changes`` write requests: every tenth toggles the watched binding, the others create a
    binding of another principal.  Returns the intervals of the watched one (hand-counted) and
    the last offset written."""
    toggles, last = 0, -1
    with StoreClient(ClientConfig(url=node.url, token=node.token, timeout_s=60.0)) as client:
        for i in range(changes):
            if i % 10 == 0:
                if toggles % 2 == 0:
                    written = client.create_acls([WATCHED]).offset
                else:
                    written = client.delete_acls([WATCHED.to_filter()]).offset
                toggles += 1
            else:
                written = client.create_acls([_other(i)]).offset
            assert written is not None
            last = written
    return (toggles + 1) // 2, last


def _aclstore() -> str:
    return str(Path(sys.executable).with_name("aclstore"))


@dataclass(frozen=True, slots=True)
class Asked:
    """A history as both sides ask it: the command's options that name it (``where``), the
    "when" fields, the watched binding's intervals and the history's last offset."""

    where: tuple[str, ...]
    fields: dict[str, str]
    intervals: int
    last: int


def _cli_when(asked: Asked) -> list[str]:
    f = asked.fields
    return [_aclstore(), "history", "when", *asked.where, "--principal", f["principal"],
            "--resource-type", f["resourceType"], "--resource-name", f["resourceName"],
            "--operation", f["operation"], "--host", f["host"], "--format", "json"]  # fmt: skip


def _page_offsets(asked: Asked, after: int | None) -> list[int]:
    """The offsets of the feed's page after ``after``: one event a record, so the next ones."""
    first = 0 if after is None else after + 1
    return list(range(first, min(first + PAGE, asked.last + 1)))


def _cli_feed(asked: Asked, after: int | None) -> float:
    cursor = [] if after is None else ["--after", str(after)]
    argv = [_aclstore(), "history", "events", *asked.where, "--limit", str(PAGE), *cursor, "--format", "json"]
    done = run_command(argv).check()
    found = [e["offset"] for e in json.loads(done.stdout)["events"]]
    if found != _page_offsets(asked, after):
        raise RuntimeError(f"the command's page after {after}: offsets {found[:3]}…, not the history's")
    return done.wall_s


def _asked_in_page(page: Any, url: str, mark: str, status_id: str) -> None:
    """Open ``url`` and wait for the page's performance mark ``mark``, or for its question's
    status (the element ``status_id``) to say it failed; raise unless the question answered."""
    page.goto(url)
    page.wait_for_function(
        f"() => performance.getEntriesByName('{mark}').length > 0"
        f" || ['failed', 'cancelled'].includes(document.getElementById('{status_id}').dataset.phase)",
        timeout=600_000,
    )
    status = page.locator(f"#{status_id}")
    if status.get_attribute("data-phase") != "done":
        raise RuntimeError(f"the page's question ({mark}) failed: {status.text_content()}")


def _page_feed(page: Any, url: str, asked: Asked, after: int | None) -> float:
    _asked_in_page(page, url, "feed-shown", "feed-status")
    rows = page.locator("#feed-rows tr").evaluate_all("rs => rs.map(r => r.dataset.offset)")
    found = [int(o) for o in rows]
    if found != _page_offsets(asked, after):
        raise RuntimeError(f"the feed's page after {after}: offsets {found[:3]}…, not the history's")
    took_ms = page.evaluate(
        "performance.getEntriesByName('feed-shown')[0].startTime"
        " - performance.getEntriesByName('feed-asked')[0].startTime"
    )
    return float(took_ms) / 1000.0


def _feed_figures(page: Any, node_url: str, asked: Asked) -> None:
    """The feed's first page and the page at the history's middle, by the page and the command."""
    middle = (asked.last + 1) // 2
    for what, after, url in (
        ("first page", None, f"{node_url}/ui/changes"),
        (f"page at offset {middle:,} by its cursor", middle - 1, f"{node_url}/ui/changes?offset={middle}"),
    ):
        _page_feed(page, url, asked, after)
        shown = [_page_feed(page, url, asked, after) for _ in range(ROUNDS)]
        _cli_feed(asked, after)
        typed = [_cli_feed(asked, after) for _ in range(ROUNDS)]
        for who, samples in (("the page", shown), ("the command", typed)):
            figure(f"the feed's {what}, {who}, median of {ROUNDS}", median(samples),
                   f"s (each: {_each(samples)})")  # fmt: skip


def _each(samples: list[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in samples)


def _cli_round(argv: list[str], intervals: int) -> float:
    done = run_command(argv).check()
    found = len(json.loads(done.stdout)["intervals"])
    if found != intervals:
        raise RuntimeError(f"the command's when: {found} intervals; the writes made {intervals}")
    print(f"    the command: {done.wall_s:.2f} s (load {load_average()})", flush=True)
    return done.wall_s


def _page_round(page: Any, url: str, intervals: int) -> float:
    _asked_in_page(page, url, "when-drawn", "when-status")
    found = page.locator("#timeline rect.interval").count()
    if found != intervals:
        raise RuntimeError(f"the page's when: {found} intervals; the writes made {intervals}")
    took_ms = page.evaluate(
        "performance.getEntriesByName('when-drawn')[0].startTime"
        " - performance.getEntriesByName('when-asked')[0].startTime"
    )
    print(f"    the page: {float(took_ms) / 1000.0:.2f} s (load {load_average()})", flush=True)
    return float(took_ms) / 1000.0


def _written(tmp: Path, remote: str, changes: int) -> tuple[_Server, Asked]:
    """The quick history: ``changes`` writes through the node, archived from its log."""
    (tmp / "node").mkdir()
    data_dir = tmp / "node" / "data"
    node = _Server(data_dir, ["--history-remote", remote])  # with decision workers
    try:
        intervals, last = _write_history(node, changes)
        started = time.perf_counter()
        run_command([_aclstore(), "history", "archive", "--once", "--data-dir", str(data_dir)]).check()
        figure("history archived", time.perf_counter() - started, "s")
    except BaseException:
        node.stop()
        raise
    return node, Asked(("--data-dir", str(data_dir), "--remote", remote), dict(FIELDS), intervals, last)


def _archived(tmp: Path, remote: str, built: BuiltArchive) -> tuple[_Server, Asked]:
    """The big history: ``bench history``'s archive, given to a node whose own log is empty."""
    (tmp / "node").mkdir()
    data_dir = tmp / "node" / "data"
    archive = str(built.location)
    node = _Server(data_dir, ["--history-remote", remote, "--history-archive", archive])
    count = built.history.count
    where = ("--data-dir", str(data_dir), "--archive", archive, "--remote", remote)
    return node, Asked(where, {**FIELDS, "host": WATCHED_HOST}, watched_intervals(count), count - 1)


def run(quick: bool, events: int | None = None) -> list[Target]:
    """``events``: the size of the archived history (default 10,000,000; with ``--quick`` and
    no ``events``, 200 writes through the node instead)."""
    from playwright.sync_api import sync_playwright

    from cli.spark_connect import start_server, stop_server
    from devtools.kafka_process import free_port

    size = events if events is not None else None if quick else BIG_HISTORY
    shown = f"an archived history of {size:,} events" if size else "a history of 200 writes"
    print(f"  ui_when_answer: {shown}; load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-console-history-") as work:
        tmp = Path(work)
        built = built_archive(size, tmp) if size else None  # before the server: a quiet build
        state = tmp / "spark-connect"
        started = time.perf_counter()
        record = start_server(state, port=free_port(), master="local[2]")
        figure("Spark Connect server started", time.perf_counter() - started, "s")
        node: _Server | None = None
        try:
            if built is None:
                node, asked = _written(tmp, record.url, 200)
            else:
                node, asked = _archived(tmp, record.url, built)
            argv = _cli_when(asked)
            figure("the command's when, warming", _cli_round(argv, asked.intervals), "s")
            cli_s = [_cli_round(argv, asked.intervals) for _ in range(ROUNDS)]
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                     args=["--no-sandbox"])  # fmt: skip
                try:
                    page = browser.new_context().new_page()
                    page.set_default_timeout(600_000)
                    page.goto(f"{node.url}/ui/login")
                    page.fill("#token", node.token)
                    page.click("#token-login button[type=submit]")
                    page.wait_for_url(f"{node.url}/ui/acls")
                    url = f"{node.url}/ui/access?{urlencode(asked.fields)}"
                    figure("the page's when, warming", _page_round(page, url, asked.intervals), "s")
                    page_s = [_page_round(page, url, asked.intervals) for _ in range(ROUNDS)]
                    _feed_figures(page, node.url, asked)
                finally:
                    browser.close()
        finally:
            if node is not None:
                node.stop()
            stop_server(state)
    figure(f"the command's when, median of {ROUNDS}", median(cli_s), f"s (each: {_each(cli_s)})")
    figure(f"the page's when, median of {ROUNDS}", median(page_s), f"s (each: {_each(page_s)})")
    print(f"  load average at the end: {load_average()}", flush=True)
    return [Target("ui_when_answer", median(page_s), "s", median(cli_s) + 1.0, higher_is_better=False)]
