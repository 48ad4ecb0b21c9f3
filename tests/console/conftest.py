"""Fixtures of the web console's tests: a real node on the embedded log, seeded with known ACLs,
and the distribution's Chromium driven by PyPI's playwright.

The browser is ``/usr/bin/chromium`` (``make test`` installs it when it is missing); playwright
launches it through ``executable_path`` and never downloads one of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replicator"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from console_support import CHROMIUM, SEEDED
from playwright.sync_api import Browser, Page, sync_playwright
from sidecar_support import admin_client, start_node

from replicator.server.node import Node


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs it (apt-get install -y chromium), or "
            "install the distribution's chromium package"
        )
    with sync_playwright() as playwright:
        # --no-sandbox: the suite may run as root, where Chromium's sandbox refuses to start
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    """A node on the embedded log holding :data:`SEEDED`."""
    n = start_node(tmp_path / "node")
    try:
        with admin_client(n) as client:
            answer = client.create_acls(SEEDED)
        assert all(r.error is None for r in answer.results)
        yield n
    finally:
        n.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()
