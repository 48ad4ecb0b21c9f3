"""The console's ACL page in a real browser: the listing and its filters against the CLI's JSON,
paging through it, and a change previewed with the node's dry run, then written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from console_support import BULK, listing_loaded, log_in, rendered_rows, screenshot
from playwright.sync_api import Page, expect
from sidecar_support import admin_client, run_cli

from replicator.server.node import Node
from store.access_diff import AccessDelta
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)

_FIELDS = ("resourceType", "resourceName", "patternType", "principal", "host", "operation",
           "permissionType")  # fmt: skip


def _cli_bindings(node: Node, capsys: pytest.CaptureFixture[str], options: str) -> list[dict[str, Any]]:
    earlier = capsys.readouterr().out  # the screenshots' paths, printed again past the capture
    if earlier:
        with capsys.disabled():
            print(earlier, end="")
    code, out, err = run_cli(node, capsys, f"acls --list {options} --format json")
    assert code == 0, err
    return [{k: b[k] for k in _FIELDS} for b in json.loads(out)["bindings"]]


def _open(page: Page, node: Node, **query: str) -> list[dict[str, Any]]:
    page.goto(f"{node.url}/ui/acls?{urlencode(query)}")
    listing_loaded(page)
    return rendered_rows(page)


# The filters of kafka-acls --list, as the page's fields and as the CLI's options.
FILTERS = [
    ("by-principal", {"principal": "User:alice"}, "--principal User:alice"),
    ("topic-literal", {"resourceType": "TOPIC", "resourceName": "orders"}, "--topic orders"),
    ("topic-wildcard", {"resourceType": "TOPIC", "resourceName": "*"}, "--topic '*'"),
    ("topic-match", {"resourceType": "TOPIC", "resourceName": "orders", "patternType": "match"},
     "--topic orders --resource-pattern-type match"),
    ("topic-prefixed", {"resourceType": "TOPIC", "resourceName": "ord", "patternType": "prefixed"},
     "--topic ord --resource-pattern-type prefixed"),
    ("topic-any", {"resourceType": "TOPIC", "resourceName": "orders", "patternType": "any"},
     "--topic orders --resource-pattern-type any"),
    ("group", {"resourceType": "GROUP", "resourceName": "billing"}, "--group billing"),
    ("cluster-and-principal", {"resourceType": "CLUSTER", "principal": "User:carol"},
     "--cluster --principal User:carol"),
]  # fmt: skip


def test_list_and_filter_as_kafka_acls(
    node: Node, page: Page, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_in(page, node)
    listing_loaded(page)
    screenshot(page, tmp_path, "acls-first-page")
    for name, fields, options in FILTERS:
        shown = _open(page, node, **fields)
        expected = _cli_bindings(node, capsys, options)
        assert shown == expected, name
        assert expected, f"{name}: the seed must give the filter something to list"
        screenshot(page, tmp_path, f"acls-{name}")
    # hand-worked: alice has three ACLs; orders as MATCH is the literal pair of alice, bob's
    # DENY, bob's prefix ord and carol's wildcard
    assert len(_open(page, node, principal="User:alice")) == 3
    matched = _open(page, node, resourceType="TOPIC", resourceName="orders", patternType="match")
    assert {(r["principal"], r["patternType"]) for r in matched} == {
        ("User:alice", "LITERAL"), ("User:bob", "LITERAL"), ("User:bob", "PREFIXED"),
        ("User:carol", "LITERAL"),
    }  # fmt: skip
    # a filter the page refuses says why, in the node's words
    _open(page, node, resourceType="TOPIC", resourceName=" ")
    expect(page.locator("#listing-status")).to_contain_text("resourceName is empty")


def test_pages_of_the_listing(
    node: Node, page: Page, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_in(page, node)
    shown = _open(page, node, principal="User:bulk")
    pages = [shown]
    screenshot(page, tmp_path, "acls-page-1")
    while page.locator("#next-page").is_visible():
        page.click("#next-page")
        listing_loaded(page)
        pages.append(rendered_rows(page))
        screenshot(page, tmp_path, f"acls-page-{len(pages)}")
    assert [len(p) for p in pages] == [100, 100, BULK - 200]
    expected = _cli_bindings(node, capsys, "--principal User:bulk")
    assert len(expected) == BULK
    assert [row for p in pages for row in p] == expected
    assert "skip=200" in page.url
    expect(page.locator("#listing-status")).to_contain_text(f"ACLs 201\u2013{BULK} of {BULK}")


def _witness_text(row: AccessDelta) -> str:
    w = row.witness
    return f"{w.principal} from {w.host}: {w.operation.name} {w.resource_type.name} '{w.resource_name}'"


def _preview_rows(page: Page, table: str) -> list[tuple[str, str]]:
    """(operation, witness) of each row of the preview's ``widened`` or ``narrowed`` table."""
    cells: list[list[str]] = page.locator(f"#{table} tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    return [(c[0], c[4]) for c in cells]


PAYMENTS = AclBindingFilter(
    pattern_filter=ResourcePatternFilter(resource_type=ResourceType.TOPIC, name="payments")
)


def test_add_and_remove_through_the_preview(node: Node, page: Page, tmp_path: Path) -> None:
    dave = AclBinding.of(ResourceType.TOPIC, "payments", PatternType.LITERAL, "User:dave", "*",
                         AclOperation.WRITE, AclPermissionType.ALLOW)  # fmt: skip
    client = admin_client(node)
    log_in(page, node)
    assert _open(page, node, resourceType="TOPIC", resourceName="payments") == []

    # add: the preview is the node's dry run of the same change
    expected = client.dry_run_acls(creates=[dave])
    page.select_option("#change select[name=action]", "add")
    page.fill("#change input[name=principal]", "User:dave")
    page.select_option("#change select[name=operation]", "WRITE")
    page.select_option("#change select[name=resourceType]", "TOPIC")
    page.fill("#change input[name=resourceName]", "payments")
    page.click("#preview-button")
    expect(page.locator("#preview")).to_be_visible()
    widened = _preview_rows(page, "widened")
    assert widened == [(r.operation.name, _witness_text(r)) for r in expected.widened]
    assert _preview_rows(page, "narrowed") == []
    # hand-worked: ALLOW WRITE on a topic nobody may touch opens WRITE and the DESCRIBE it
    # implies, to dave alone
    assert {op for op, _ in widened} == {"WRITE", "DESCRIBE"}
    assert all(w.startswith("User:dave from ") for _, w in widened)
    assert page.locator("#preview-offset").text_content() == str(expected.offset)
    screenshot(page, tmp_path, "add-preview")

    page.click("#confirm")
    written = page.locator("#write-offset")
    expect(written).to_be_visible()
    offset = int(written.text_content() or "")
    described = client.describe_acls(PAYMENTS)
    assert described.bindings == [dave] and described.offset == offset == expected.offset + 1
    expect(page.locator("#acl-rows tr")).to_have_count(1)
    assert rendered_rows(page) == [{
        "resourceType": "TOPIC", "resourceName": "payments", "patternType": "LITERAL",
        "principal": "User:dave", "host": "*", "operation": "WRITE", "permissionType": "ALLOW",
    }]  # fmt: skip
    screenshot(page, tmp_path, "add-written")

    # remove that row: the preview narrows what the add widened
    page.click("#acl-rows tr button")
    assert page.locator("#change select[name=action]").input_value() == "remove"
    expected = client.dry_run_acls(deletes=[dave.to_filter()])
    page.click("#preview-button")
    expect(page.locator("#preview")).to_be_visible()
    narrowed = _preview_rows(page, "narrowed")
    assert narrowed == [(r.operation.name, _witness_text(r)) for r in expected.narrowed]
    assert {op for op, _ in narrowed} == {"WRITE", "DESCRIBE"}
    assert _preview_rows(page, "widened") == []
    screenshot(page, tmp_path, "remove-preview")
    page.click("#confirm")
    # the AclDeleted event and its key's tombstone (store.admin): two records
    expect(page.locator("#write-offset")).to_have_text(str(offset + 2))
    expect(page.locator("#acl-rows tr")).to_have_count(0)
    after = client.describe_acls(PAYMENTS)
    assert after.bindings == [] and after.offset == offset + 2
    screenshot(page, tmp_path, "remove-written")
    client.close()
