"""The history pages on a node not told where its history lives: the question is refused with
the options that fix it, and nothing runs."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from console_support import log_in, screenshot
from playwright.sync_api import Page, expect

from replicator.server.node import Node


def test_without_a_history_the_page_names_the_fix(node: Node, page: Page, tmp_path: Path) -> None:
    log_in(page, node)
    fields = {"principal": "User:alice", "resourceType": "TOPIC", "resourceName": "orders",
              "operation": "READ"}  # fmt: skip
    page.goto(f"{node.url}/ui/access?{urlencode(fields)}")
    status = page.locator("#when-status")
    expect(status).to_have_attribute("data-phase", "failed")
    expect(status).to_contain_text("HistoryNotConfiguredError")
    expect(status).to_contain_text("--history-archive")
    screenshot(page, tmp_path, "access-no-history")
    page.goto(f"{node.url}/ui/changes")
    expect(page.locator("#feed-status")).to_contain_text("--history-archive")
    assert node.questions is not None and node.questions.running() == 0
