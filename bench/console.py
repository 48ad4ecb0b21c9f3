"""``python -m bench console [--quick]``: the web console's ACL page at 1,000,000 bindings.

An ``aclstore serve`` node (a child process, the embedded default) is loaded with N bindings
(1,000,000; 100,000 with ``--quick``; the ``bench downgrade`` shape) through its admin API, as
``bench listing`` loads it.  Then the distribution's Chromium (``/usr/bin/chromium``, driven by
playwright) logs in and opens the ACLs page, five times each:

* the first page of everything (100 rows): TARGET ``ui_first_paint``, the median time from the
  navigation's start to the rows in the document (the page's ``acls-listed`` performance mark),
  at most 1 s;
* the first page of one principal's ACLs (read from the node's by-principal table);
* the page at row N/2 as the next links reach it, with its cursor (``after``: the row before
  it), which the node's listing resumes after: a figure that should not grow with the depth;
* the same page by ``skip`` N/2 alone (a hand-made address): the node reads and drops the
  rows before it, so this one grows with its depth (printed, no target).

The load average is printed before and after: on shared cores the times follow it.

Then ``ui_when_answer`` (:mod:`bench.console_history`): the Access over time page's answer
against the command line's own time for the same question, on ``bench history``'s archived
history of 10,000,000 events (200 writes with ``--quick``), and the Changes feed's pages as
figures.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final
from urllib.parse import urlencode

from bench.downgrade import synthetic_bindings
from bench.listing import load_node
from bench.process import load_average
from bench.report import Target, figure, median
from bench.sidecar import _Server
from replicator.client import StoreClient
from replicator.client.config import ClientConfig

CHROMIUM: Final = "/usr/bin/chromium"
ROUNDS: Final = 5


def _caught_up(node: _Server) -> None:
    """Wait until the node's replica has applied every write of the load: the pages are timed
    on a node at rest, not one still applying a million changes."""
    started = time.perf_counter()
    with StoreClient(ClientConfig(url=node.url, token=node.token, timeout_s=60.0)) as client:
        while True:
            status = client.status()
            if status.ready and status.lag == 0:
                break
            time.sleep(1.0)
    figure("replica caught up after the load", time.perf_counter() - started, "s")


def _listed_ms(page: object, url: str) -> float:
    """Open ``url``; the time from the navigation's start to the page's rows, in ms."""
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    page.goto(url)
    page.wait_for_function(
        "() => performance.getEntriesByName('acls-listed').length > 0"
        " || document.getElementById('listing-status').classList.contains('error')",
        timeout=600_000,
    )
    status = page.locator("#listing-status")
    if "error" in (status.get_attribute("class") or ""):
        raise RuntimeError(f"the page failed: {status.text_content()}")
    return float(page.evaluate("performance.getEntriesByName('acls-listed')[0].startTime"))


def _timed(what: str, page: object, url: str) -> float:
    samples = [_listed_ms(page, url) for _ in range(ROUNDS)]
    figure(f"{what}, median of {ROUNDS}", median(samples), f"ms (each: {_ms(samples)})")
    return median(samples)


def _row_at(node: _Server, row: int) -> dict[str, str]:
    """The binding at ``row`` (from 0) of the whole listing, as the page shows a row: the
    cursor of the page after it."""
    with StoreClient(ClientConfig(url=node.url, token=node.token, timeout_s=600.0)) as client:
        seen = 0
        for r in client.list_acls():
            if seen + len(r.acls) > row:
                principal, host, operation, permission = r.acls[row - seen]
                return {"resourceType": r.resource_type, "resourceName": r.name,
                        "patternType": r.pattern_type, "principal": principal, "host": host,
                        "operation": operation, "permissionType": permission}  # fmt: skip
            seen += len(r.acls)
    raise RuntimeError(f"the listing has fewer than {row + 1} rows")


def _ms(samples: Sequence[float]) -> str:
    return ", ".join(f"{s:.0f}" for s in samples)


def run(quick: bool) -> list[Target]:
    from playwright.sync_api import sync_playwright

    size = 100_000 if quick else 1_000_000
    bindings = list(synthetic_bindings(size))
    random.Random(7).shuffle(bindings)
    principal = bindings[0].principal
    print(f"  bindings: {len(bindings):,}", flush=True)
    print(f"  load average (1, 5, 15 min) at the start: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-console-") as tmp:
        (Path(tmp) / "node").mkdir()
        node = _Server(Path(tmp) / "node" / "data")  # serve's defaults: decision workers
        try:
            started = time.perf_counter()
            load_node(node, bindings)
            took = time.perf_counter() - started
            figure("node loaded", took, f"s ({len(bindings) / took:.0f} bindings/s)")
            del bindings
            _caught_up(node)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
                )
                try:
                    page = browser.new_context().new_page()
                    page.set_default_timeout(600_000)  # shared cores: a slow answer is a figure
                    page.goto(f"{node.url}/ui/login")
                    page.fill("#token", node.token)
                    page.click("#token-login button[type=submit]")
                    page.wait_for_url(f"{node.url}/ui/acls")
                    first = _timed("first page of every ACL", page, f"{node.url}/ui/acls")
                    _timed(f"first page of {principal}'s ACLs", page,
                           f"{node.url}/ui/acls?principal={principal}")  # fmt: skip
                    cursor = json.dumps(_row_at(node, size // 2 - 1))
                    deep = urlencode({"skip": size // 2, "after": cursor})
                    _timed(f"the page at row {size // 2:,} by its cursor", page,
                           f"{node.url}/ui/acls?{deep}")  # fmt: skip
                    _timed(f"the page at row {size // 2:,} by skip alone (read and dropped)", page,
                           f"{node.url}/ui/acls?skip={size // 2}")  # fmt: skip
                finally:
                    browser.close()
        finally:
            node.stop()
    print(f"  load average (1, 5, 15 min) at the end: {load_average()}", flush=True)
    from bench.console_history import run as when_answer

    return [Target("ui_first_paint", first, "ms", 1000.0, higher_is_better=False), *when_answer(quick)]
