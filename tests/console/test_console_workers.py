"""The console through a node's decision workers: a worker forwards the console's requests to
the node's process with the address the browser called (``Host``), so a browser logs in and
lists ACLs there as on a node without workers (``aclstore serve`` runs workers by default)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from console_support import SEEDED, listing_loaded, log_in, rendered_rows, screenshot
from playwright.sync_api import Page
from sidecar_support import admin_client, start_node

from replicator.server.node import Node


@pytest.fixture
def worker_node(tmp_path: Path) -> Iterator[Node]:
    node = start_node(tmp_path / "node", decision_workers=1)
    try:
        with admin_client(node) as client:
            assert all(r.error is None for r in client.create_acls(SEEDED).results)
        yield node
    finally:
        node.stop()


def test_log_in_and_list_through_a_decision_worker(worker_node: Node, page: Page, tmp_path: Path) -> None:
    assert worker_node.workers is not None  # the listener is the workers'
    log_in(page, worker_node)
    page.goto(f"{worker_node.url}/ui/acls?principal=User:alice")
    listing_loaded(page)
    assert [r["resourceName"] for r in rendered_rows(page)] == ["orders", "orders", "billing"]
    screenshot(page, tmp_path, "acls-through-a-worker")
