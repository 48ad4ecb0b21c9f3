"""The console's Safety page in a real browser: the downgrade check's verdict and witnesses,
paged, against ``aclstore downgrade-check --format json`` run as a process on the same node;
and the plan of a pasted ACLs file against ``aclstore plan -f FILE --format json``.

One node for the module, seeded with KIP-290's hole many times over: every principal may read
every topic, and :data:`SECRETS` PREFIXED DENYs (which a format-1 reader ignores) each take a
prefix away from one principal, so the check is unsafe with more than a page of rows."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_support import log_in, screenshot
from playwright.sync_api import Page, expect
from sidecar_support import admin_client, start_node

from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

SECRETS = 130
ROWS = 100
_ACLSTORE = str(Path(sys.executable).parent / "aclstore")
_FIELDS = ("resourceType", "resourceName", "patternType", "principal", "host", "operation",
           "permissionType")  # fmt: skip


def _seed() -> list[AclBinding]:
    out = [AclBinding.of(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:*", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)]  # fmt: skip
    out += [
        AclBinding.of(ResourceType.TOPIC, f"secret-{i:03d}-", PatternType.PREFIXED, f"User:u{i:03d}",
                      "*", AclOperation.READ, AclPermissionType.DENY)
        for i in range(SECRETS)
    ]  # fmt: skip
    out.append(AclBinding.of(ResourceType.GROUP, "billing", PatternType.LITERAL, "User:alice", "*",
                             AclOperation.READ, AclPermissionType.ALLOW))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def safety_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    node = start_node(tmp_path_factory.mktemp("safety") / "node")
    try:
        with admin_client(node) as client:
            answer = client.create_acls(_seed())
        assert all(r.error is None for r in answer.results)
        yield node
    finally:
        node.stop()


def _aclstore(node: Node, *args: str) -> tuple[int, str, str]:
    """``aclstore`` as a process of its own against ``node``, with its admin credential."""
    assert node.info is not None
    done = subprocess.run(
        [_ACLSTORE, args[0], "--store", node.url, "--command-config",
         str(node.info.credential.properties_path), *args[1:]],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def _witness(delta: dict[str, Any]) -> tuple[str, str]:
    w = delta["witness"]
    text = f"{w['principal']} from {w['host']}: {w['operation']} {w['resourceType']} '{w['resourceName']}'"
    return delta["operation"], text


def _cells(page: Page, selector: str) -> list[list[str]]:
    rows: list[list[str]] = page.locator(selector).evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    return rows


def _all_pages(page: Page, name: str) -> list[list[str]]:
    """Every row of one list, page by page through its Next button."""
    box = f'.witness-list[data-list="{name}"]'
    out = _cells(page, f"{box} tbody tr")
    while page.locator(f"{box} .next").is_visible():
        skip = len(out)
        page.click(f"{box} .next")
        expect(page.locator(box)).to_have_attribute("data-skip", str(skip))
        out += _cells(page, f"{box} tbody tr")
    return out


def test_downgrade_check_as_the_cli(safety_node: Node, page: Page, tmp_path: Path) -> None:
    node = safety_node
    log_in(page, node)
    page.goto(f"{node.url}/ui/safety")
    page.fill("#downgrade input[name=to]", "1")
    page.click("#downgrade-button")
    expect(page.locator("#downgrade-answer")).to_be_visible(timeout=60_000)
    screenshot(page, tmp_path, "safety-downgrade")
    code, out, err = _aclstore(node, "downgrade-check", "--to", "1", "--format", "json")
    assert code == 1, err  # unsafe: the CLI's gate
    expected = json.loads(out)
    assert expected["safe"] is False and len(expected["ignored"]) == SECRETS
    assert page.locator("#verdict").get_attribute("data-safe") == "false"
    expect(page.locator("#verdict")).to_contain_text("UNSAFE")
    status = page.locator("#downgrade-status")
    assert status.get_attribute("data-offset") == str(expected["offset"])

    widened = _all_pages(page, "widened")
    assert len(widened) > ROWS  # more than a page: the Next button was used
    assert [(row[0], row[4]) for row in widened] == [_witness(d) for d in expected["widened"]]
    assert [(row[0], row[4]) for row in _all_pages(page, "narrowed")] == [
        _witness(d) for d in expected["narrowed"]
    ]
    ignored = _all_pages(page, "ignored")
    assert ignored == [[b[k] for k in _FIELDS] for b in expected["ignored"]]
    # hand-worked: the older reader ignores exactly the seeded PREFIXED DENYs, and each of them
    # reopens READ on its own prefix to its own principal
    assert {(r[1], r[3]) for r in ignored} == {(f"secret-{i:03d}-", f"User:u{i:03d}") for i in range(SECRETS)}
    reopened = {(w.split(" from ")[0], w.split("'")[1]) for op, w in
                ((row[0], row[4]) for row in widened) if op == "READ"}  # fmt: skip
    assert {(f"User:u{i:03d}", f"secret-{i:03d}-") for i in range(SECRETS)} <= reopened
    screenshot(page, tmp_path, "safety-downgrade-last-pages")

    # a format that reads every binding: safe, nothing ignored (and the CLI agrees)
    page.fill("#downgrade input[name=to]", "99")
    page.click("#downgrade-button")
    expect(page.locator("#verdict")).to_have_attribute("data-safe", "true", timeout=60_000)
    code, out, err = _aclstore(node, "downgrade-check", "--to", "99", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["ignored"] == [] and _all_pages(page, "ignored") == []


PLAN = """\
version: 1
scope:
  principals: [User:alice]
  resources:
    - {resourceType: TOPIC, prefix: secret-000-}
acls:
  - principals: [User:alice]
    permission: ALLOW
    operations: [WRITE]
    resources:
      - {resourceType: TOPIC, name: payments}
  - principals: [User:u000]
    permission: DENY
    operations: [READ]
    resources:
      - {resourceType: TOPIC, name: secret-000-a}
"""


def test_plan_of_a_pasted_file_as_the_cli(safety_node: Node, page: Page, tmp_path: Path) -> None:
    node = safety_node
    path = tmp_path / "acls.yaml"
    path.write_text(PLAN)
    code, out, err = _aclstore(node, "plan", "-f", str(path), "--format", "json")
    assert code == 2, err  # changes
    expected = json.loads(out)
    log_in(page, node)
    page.goto(f"{node.url}/ui/safety")
    page.fill("#plan textarea[name=text]", PLAN)
    page.click("#plan-button")
    expect(page.locator("#plan-answer")).to_be_visible()
    screenshot(page, tmp_path, "safety-plan")
    assert page.locator("#plan-status").get_attribute("data-offset") == str(expected["offset"])
    as_rows = lambda bindings: [[b[k] for k in _FIELDS] for b in bindings]  # noqa: E731
    assert _cells(page, "#plan-add tbody tr") == as_rows(expected["add"])
    assert _cells(page, "#plan-remove tbody tr") == as_rows(expected["remove"])
    assert [(r[0], r[4]) for r in _cells(page, "#plan-widened tbody tr")] == [
        _witness(d) for d in expected["widened"]
    ]
    assert [(r[0], r[4]) for r in _cells(page, "#plan-narrowed tbody tr")] == [
        _witness(d) for d in expected["narrowed"]
    ]
    # hand-worked: alice's WRITE on payments and u000's literal DENY are added; alice's READ on
    # the billing group is hers (in scope) and undeclared, so removed, and so is u000's PREFIXED
    # DENY on secret-000- (in scope by the prefix)
    assert {(r[1], r[3], r[5]) for r in _cells(page, "#plan-add tbody tr")} == {
        ("payments", "User:alice", "WRITE"), ("secret-000-a", "User:u000", "READ")}  # fmt: skip
    assert {(r[1], r[3]) for r in _cells(page, "#plan-remove tbody tr")} == {
        ("billing", "User:alice"), ("secret-000-", "User:u000")}  # fmt: skip
    # nothing was written: the CLI plans the same again
    again = json.loads(_aclstore(node, "plan", "-f", str(path), "--format", "json")[1])
    assert again["offset"] == expected["offset"]

    # a file the loader refuses says why, in the loader's words (the line)
    page.fill("#plan textarea[name=text]", "version: 1\nacls: [{principals: [alice]}]\n")
    page.click("#plan-button")
    expect(page.locator("#plan-status")).to_have_class("error")
