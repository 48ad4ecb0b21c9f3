"""Helpers of the web console's tests: the seeded ACLs, logging in, screenshots, the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from replicator.client.config import read_properties
from replicator.properties import TOKEN_KEY
from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

CHROMIUM = Path("/usr/bin/chromium")
BULK = 230
"""ACLs of ``User:bulk`` on the topics ``bulk-000``..., more than two pages of 100."""


def _binding(
    principal: str, operation: AclOperation, resource_type: ResourceType, name: str,
    pattern_type: PatternType = PatternType.LITERAL,
    permission: AclPermissionType = AclPermissionType.ALLOW, host: str = "*",
) -> AclBinding:  # fmt: skip
    return AclBinding.of(resource_type, name, pattern_type, principal, host, operation, permission)


SEEDED: tuple[AclBinding, ...] = (
    _binding("User:alice", AclOperation.READ, ResourceType.TOPIC, "orders"),
    _binding("User:alice", AclOperation.WRITE, ResourceType.TOPIC, "orders", host="198.51.100.7"),
    _binding("User:alice", AclOperation.READ, ResourceType.GROUP, "billing"),
    _binding("User:bob", AclOperation.READ, ResourceType.TOPIC, "ord", PatternType.PREFIXED),
    _binding("User:bob", AclOperation.READ, ResourceType.TOPIC, "orders",
             permission=AclPermissionType.DENY),
    _binding("User:carol", AclOperation.DESCRIBE, ResourceType.TOPIC, "*"),
    _binding("User:carol", AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster"),
    *(_binding("User:bulk", AclOperation.READ, ResourceType.TOPIC, f"bulk-{i:03d}")
      for i in range(BULK)),
)  # fmt: skip


def admin_token(node: Node) -> str:
    assert node.info is not None
    return read_properties(node.info.credential.properties_path)[TOKEN_KEY]


def log_in(page: Page, node: Node, token: str | None = None) -> None:
    page.goto(f"{node.url}/ui/login")
    page.fill("#token", token if token is not None else admin_token(node))
    page.click("#token-login button[type=submit]")
    page.wait_for_url(f"{node.url}/ui/acls")


def screenshot(page: Page, tmp_path: Path, name: str) -> Path:
    """The page as it is now, under the test's tmp folder; its path is printed."""
    path = tmp_path / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def listing_loaded(page: Page) -> None:
    """Wait until the page's listing has been answered (rows or an error)."""
    page.wait_for_function(
        "() => { const s = document.getElementById('listing-status');"
        " return s.dataset.offset !== undefined || s.classList.contains('error'); }"
    )


def rendered_rows(page: Page) -> list[dict[str, Any]]:
    """The rows of the ACL table, as the CLI's JSON names a binding's fields."""
    cells: list[list[str]] = page.locator("#acl-rows tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).slice(0, 7).map(c => c.textContent))"
    )
    keys = ("resourceType", "resourceName", "patternType", "principal", "host", "operation",
            "permissionType")  # fmt: skip
    return [dict(zip(keys, row, strict=True)) for row in cells]
