"""``ui_when_answer`` of ``python -m bench console``: the Access over time page's "when" against
the command line's own time for the same question.

An ``aclstore serve`` node (a child process, the embedded default) started with
``--history-remote`` naming a Spark Connect server (``aclstore spark-connect start``'s, on a
free port), a history written through its admin API (N changes: the watched binding of
``User:bob`` created and deleted in turn, among others), archived with ``aclstore history
archive --once``.  Both sides warm (one question each first), then three rounds each:

* the command: ``aclstore history when … --remote URL --format json``, its wall time;
* the page: ``/ui/access`` with the same fields, from the form's submit to the intervals in
  the document (the page's ``when-asked`` and ``when-drawn`` performance marks).

TARGET ``ui_when_answer``: the page's median at most the command's median + 1 s.  Both answers
are checked: the number of intervals the writes made (hand-counted from the toggling).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from bench.process import load_average, run_command
from bench.report import Target, figure, median
from bench.sidecar import _Server
from replicator.client import StoreClient
from replicator.client.config import ClientConfig
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

CHROMIUM: Final = "/usr/bin/chromium"
ROUNDS: Final = 3
FIELDS: Final = {"principal": "User:bob", "resourceType": "TOPIC", "resourceName": "orders",
                 "operation": "READ", "host": "10.0.0.1"}  # fmt: skip
WATCHED: Final = AclBinding.of(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "*",
                               AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip


def _other(i: int) -> AclBinding:
    return AclBinding.of(ResourceType.TOPIC, f"t-{i % 50}", PatternType.LITERAL, f"User:u{i}", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip


def _write_history(node: _Server, changes: int) -> int:
    """``changes`` write requests: every tenth toggles the watched binding, the others create a
    binding of another principal.  Returns the intervals of the watched one (hand-counted)."""
    toggles = 0
    with StoreClient(ClientConfig(url=node.url, token=node.token, timeout_s=60.0)) as client:
        for i in range(changes):
            if i % 10 == 0:
                if toggles % 2 == 0:
                    client.create_acls([WATCHED])
                else:
                    client.delete_acls([WATCHED.to_filter()])
                toggles += 1
            else:
                client.create_acls([_other(i)])
    return (toggles + 1) // 2


def _aclstore() -> str:
    return str(Path(sys.executable).with_name("aclstore"))


def _cli_when(data_dir: Path, remote: str) -> list[str]:
    return [_aclstore(), "history", "when", "--data-dir", str(data_dir), "--remote", remote,
            "--principal", FIELDS["principal"], "--resource-type", FIELDS["resourceType"],
            "--resource-name", FIELDS["resourceName"], "--operation", FIELDS["operation"],
            "--host", FIELDS["host"], "--format", "json"]  # fmt: skip


def _cli_round(argv: list[str], intervals: int) -> float:
    done = run_command(argv).check()
    found = len(json.loads(done.stdout)["intervals"])
    if found != intervals:
        raise RuntimeError(f"the command's when: {found} intervals; the writes made {intervals}")
    print(f"    the command: {done.wall_s:.2f} s (load {load_average()})", flush=True)
    return done.wall_s


def _page_round(page: Any, url: str, intervals: int) -> float:
    page.goto(url)
    page.wait_for_function(
        "() => performance.getEntriesByName('when-drawn').length > 0"
        " || ['failed', 'cancelled'].includes(document.getElementById('when-status').dataset.phase)",
        timeout=600_000,
    )
    status = page.locator("#when-status")
    if status.get_attribute("data-phase") != "done":
        raise RuntimeError(f"the page's when failed: {status.text_content()}")
    found = page.locator("#timeline rect.interval").count()
    if found != intervals:
        raise RuntimeError(f"the page's when: {found} intervals; the writes made {intervals}")
    took_ms = page.evaluate(
        "performance.getEntriesByName('when-drawn')[0].startTime"
        " - performance.getEntriesByName('when-asked')[0].startTime"
    )
    print(f"    the page: {float(took_ms) / 1000.0:.2f} s (load {load_average()})", flush=True)
    return float(took_ms) / 1000.0


def run(quick: bool) -> list[Target]:
    from playwright.sync_api import sync_playwright

    from cli.spark_connect import start_server, stop_server
    from devtools.kafka_process import free_port

    changes = 200 if quick else 20_000
    print(f"  ui_when_answer: a history of {changes:,} writes; load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-console-history-") as tmp:
        state = Path(tmp) / "spark-connect"
        started = time.perf_counter()
        record = start_server(state, port=free_port(), master="local[2]")
        figure("Spark Connect server started", time.perf_counter() - started, "s")
        node: _Server | None = None
        try:
            (Path(tmp) / "node").mkdir()
            data_dir = Path(tmp) / "node" / "data"
            node = _Server(data_dir, ["--history-remote", record.url])  # with decision workers
            intervals = _write_history(node, changes)
            started = time.perf_counter()
            run_command([_aclstore(), "history", "archive", "--once", "--data-dir", str(data_dir)]).check()
            figure("history archived", time.perf_counter() - started, "s")
            argv = _cli_when(data_dir, record.url)
            figure("the command's when, warming", _cli_round(argv, intervals), "s")
            cli_s = [_cli_round(argv, intervals) for _ in range(ROUNDS)]
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
                    url = f"{node.url}/ui/access?{urlencode(FIELDS)}"
                    figure("the page's when, warming", _page_round(page, url, intervals), "s")
                    page_s = [_page_round(page, url, intervals) for _ in range(ROUNDS)]
                finally:
                    browser.close()
        finally:
            if node is not None:
                node.stop()
            stop_server(state)
    each = ", ".join(f"{s:.2f}" for s in cli_s)
    figure(f"the command's when, median of {ROUNDS}", median(cli_s), f"s (each: {each})")
    each = ", ".join(f"{s:.2f}" for s in page_s)
    figure(f"the page's when, median of {ROUNDS}", median(page_s), f"s (each: {each})")
    print(f"  load average at the end: {load_average()}", flush=True)
    return [Target("ui_when_answer", median(page_s), "s", median(cli_s) + 1.0, higher_is_better=False)]
