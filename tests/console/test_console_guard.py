"""The ACL page's preview guards its confirmation, in a real browser: a change confirmed after
the log changed the previewed scope is refused (409, naming the change's actor, offset and
time, as ``apply``'s ``ifScopeUnchangedSince`` is) and nothing is written; a write outside
that scope in between does not refuse it; previewed again, it is written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from console_support import listing_loaded, log_in, screenshot
from playwright.sync_api import Page, expect
from sidecar_support import admin_client

from replicator.server.console.guard import previewed_scope
from replicator.server.node import Node
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)

PAYMENTS = AclBindingFilter(
    pattern_filter=ResourcePatternFilter(resource_type=ResourceType.TOPIC, name="payments")
)


def _binding(principal: str, operation: AclOperation, name: str, *,
             pattern: PatternType = PatternType.LITERAL,
             permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:  # fmt: skip
    return AclBinding.of(ResourceType.TOPIC, name, pattern, principal, "*", operation, permission)


def _preview_add(page: Page, principal: str, operation: str, name: str) -> int:
    page.select_option("#change select[name=action]", "add")
    page.fill("#change input[name=principal]", principal)
    page.select_option("#change select[name=operation]", operation)
    page.select_option("#change select[name=resourceType]", "TOPIC")
    page.fill("#change input[name=resourceName]", name)
    page.click("#preview-button")
    expect(page.locator("#preview")).to_be_visible()
    return int(page.locator("#preview-offset").text_content() or "")


def test_a_preview_is_confirmed_only_while_its_scope_is_unchanged(
    node: Node, page: Page, tmp_path: Path
) -> None:
    assert node.info is not None
    actor = node.info.credential.principal
    client = admin_client(node)
    log_in(page, node)
    listing_loaded(page)

    # a write outside the previewed scope (another first letter) does not refuse the change
    dave_write = _binding("User:dave", AclOperation.WRITE, "payments")
    previewed = _preview_add(page, "User:dave", "WRITE", "payments")
    zeta = _binding("User:erin", AclOperation.READ, "zeta")
    assert not previewed_scope(dave_write).contains(zeta)
    assert client.create_acls([zeta]).offset == previewed + 1
    page.click("#confirm")
    expect(page.locator("#write-offset")).to_have_text(str(previewed + 2))
    assert client.describe_acls(PAYMENTS).bindings == [dave_write]

    # a write in the previewed scope in between: a PREFIXED DENY on pay..., which decides dave's
    # READ on payments: the confirmation is refused and nothing is written
    dave_read = _binding("User:dave", AclOperation.READ, "payments")
    previewed = _preview_add(page, "User:dave", "READ", "payments")
    widened = page.locator("#widened tbody tr").count()
    assert widened > 0  # READ on payments opens to dave
    deny = _binding("User:dave", AclOperation.READ, "pay", pattern=PatternType.PREFIXED,
                    permission=AclPermissionType.DENY)  # fmt: skip
    assert previewed_scope(dave_read).contains(deny)
    written = client.create_acls([deny]).offset
    assert written == previewed + 1
    with page.expect_response("**/ui/api/acls/change") as refusal:
        page.click("#confirm")
    assert refusal.value.status == 409
    body = json.loads(refusal.value.body())
    assert body["error"] == "ScopeChangedError"
    result = page.locator("#change-result")
    expect(result).to_have_class("error")
    text = result.text_content() or ""
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert f"created by {actor} at offset {written} ({today}T" in text, text
    assert "nothing was written" in text
    screenshot(page, tmp_path, "guard-refused")
    with admin_client(node) as fresh:
        described = fresh.describe_acls(PAYMENTS)
    assert set(described.bindings) == {dave_write} and described.offset == written

    # previewed again (the DENY now decides it: nothing widens), then confirmed: written
    again = _preview_add(page, "User:dave", "READ", "payments")
    assert again == written
    assert page.locator("#widened tbody tr").count() == 0
    page.click("#confirm")
    expect(page.locator("#write-offset")).to_have_text(str(written + 1))
    assert set(client.describe_acls(PAYMENTS).bindings) == {dave_write, dave_read}
    screenshot(page, tmp_path, "guard-written")
    client.close()
