"""The ACL page's cursor in a real browser: the next and previous links carry the last row
before the page (``after``), the node's listing resumes after it, and the pages stitched
together are the CLI's listing; under writes between two pages, a page shows the state of its
own read: the rows of that state that come after its cursor in DescribeAcls order (a row
written before the cursor is not shown on later pages, a deleted one is gone, none comes
twice)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from console_support import BULK, listing_loaded, log_in, rendered_rows, screenshot
from playwright.sync_api import Page
from sidecar_support import admin_client, run_cli

from replicator.contract.bindings import binding_from_json
from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

_FIELDS = ("resourceType", "resourceName", "patternType", "principal", "host", "operation",
           "permissionType")  # fmt: skip


def _cli(node: Node, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    earlier = capsys.readouterr().out
    if earlier:
        with capsys.disabled():
            print(earlier, end="")
    code, out, err = run_cli(node, capsys, "acls --list --principal User:bulk --format json")
    assert code == 0, err
    return [{k: b[k] for k in _FIELDS} for b in json.loads(out)["bindings"]]


def _bulk(name: str) -> AclBinding:
    return AclBinding.of(ResourceType.TOPIC, name, PatternType.LITERAL, "User:bulk", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip


def _turn(page: Page, link: str) -> list[dict[str, Any]]:
    page.click(link)
    listing_loaded(page)
    return rendered_rows(page)


def _after(rows: list[dict[str, Any]], cursor: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows that come after ``cursor`` in DescribeAcls order (``AclBinding``'s own order)."""
    at = binding_from_json(cursor)
    return [r for r in rows if binding_from_json(r) > at]


def test_pages_resume_after_their_cursor(
    node: Node, page: Page, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_in(page, node)
    before = _cli(node, capsys)
    assert len(before) == BULK
    page.goto(f"{node.url}/ui/acls?principal=User:bulk")
    listing_loaded(page)
    first = rendered_rows(page)
    assert first == before[:100]
    second = _turn(page, "#next-page")
    assert "after=" in page.url and "skip=100" in page.url
    assert second == before[100:200]
    cursor = second[-1]

    # writes between two pages: one row before the cursor (names list in reverse, so bulk-200x
    # comes between bulk-201 and bulk-200, on the first page), one after it, one deleted after it
    early, late, gone = _bulk("bulk-200x"), _bulk("bulk-000x"), _bulk("bulk-010")
    with admin_client(node) as client:
        assert all(r.error is None for r in client.create_acls([early, late]).results)
        deleted = client.delete_acls([gone.to_filter()])
    assert [b for r in deleted.results for b in r.deleted] == [gone]
    now = _cli(node, capsys)
    assert len(now) == BULK + 1
    third = _turn(page, "#next-page")
    screenshot(page, tmp_path, "acls-cursor-after-writes")
    assert third == _after(now, cursor)
    shown = [*first, *second, *third]
    # hand-worked: the row written after the cursor is shown, the one written before it is not
    # (its page was read before it), the deleted one is not; nothing is shown twice
    names = [r["resourceName"] for r in shown]
    assert "bulk-000x" in names and "bulk-200x" not in names and "bulk-010" not in names
    assert len(names) == len(set(names)) == BULK  # 230 + 2 written - 1 deleted - 1 unseen
    assert [r for r in now if r["resourceName"] != "bulk-200x"] == shown

    # previous: the second page's cursor again, read from the state as it is now
    back = _turn(page, "#previous-page")
    assert "skip=100" in page.url and "after=" in page.url
    assert back == _after(now, first[-1])[:100] == second
    back = _turn(page, "#previous-page")
    assert "after=" not in page.url
    assert back == now[:100] and back[29]["resourceName"] == "bulk-200x"  # after bulk-229..201
