"""The console's history on real Spark: one node whose history holds known changes, archived,
asked through the console's calls and pages; each answer checked against the same question
asked as a user types it (``aclstore history … --format json`` over the same Connect server)
and against the offsets of the writes (hand-worked)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from console_history_support import (
    ALICE,
    BOB,
    CAROL,
    CAROL_DENY,
    Command,
    ConsoleCalls,
    History,
    aclstore,
    build_history,
    read,
)
from console_support import log_in, screenshot
from playwright.sync_api import Page, expect
from sidecar_support import admin_client

from cli.spark_connect import ServerRecord

RESOURCE = {"resourceType": "TOPIC", "resourceName": "orders", "operation": "READ", "host": "10.0.0.1"}
DAN = read("User:dan")
RESOURCE_ARGS = ["--resource-type", "TOPIC", "--resource-name", "orders", "--operation", "READ",
                 "--host", "10.0.0.1"]  # fmt: skip


@pytest.fixture(scope="module")
def history(
    spark: object, spark_connect: tuple[Path, ServerRecord], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[History]:
    built = build_history(tmp_path_factory.mktemp("history") / "node", spark_connect[1].url)
    try:
        yield built
    finally:
        built.node.stop()


def test_the_console_asks_what_the_command_line_asks(history: History) -> None:
    """``when`` through the console's job: the command's own document, and the intervals the
    writes make (bob: created, deleted, created again, still open)."""
    reference = Command(history, "history", "when", "--principal", "User:bob", *RESOURCE_ARGS)
    calls = ConsoleCalls(history.node)
    view = calls.ask("when", {"principal": "User:bob", **RESOURCE})
    assert view["phase"] == "done", view
    expected = reference.answer()
    assert view["answer"] == expected
    spans = [(i["fromOffset"], i["toOffset"]) for i in view["answer"]["intervals"]]
    # a delete writes AclDeleted, then the tombstone the write answers with: closed one before
    assert spans == [(history.bob_created, history.bob_deleted - 1), (history.bob_again, None)]
    assert view["records"] == 2 and view["elapsedS"] > 0
    first = view["answer"]["intervals"][0]
    assert first["openedBy"]["actor"] == "User:admin" and first["closedBy"]["type"] == "ACL_DELETED"


def test_a_refusal_of_the_command_comes_back_as_its_message(history: History) -> None:
    calls = ConsoleCalls(history.node)
    view = calls.ask("who", {**RESOURCE, "at": "2001-01-01"})
    assert view["phase"] == "failed"
    assert "978307200000 ms is before the first change" in view["error"]  # 2001-01-01T00:00Z
    status, refused = calls.post("/ui/api/history/ask", {"question": "who", "fields": {**RESOURCE}})
    assert status == 400 and "give one of at" in refused["message"]


# --- the pages, in a real browser ------------------------------------------------------------------


def _done(page: Page, status_id: str) -> None:
    """Wait until the question shown in ``status_id`` has ended; it must have answered."""
    page.wait_for_function(
        f"() => ['done', 'failed', 'cancelled'].includes("
        f"document.getElementById('{status_id}').dataset.phase)", timeout=120_000
    )  # fmt: skip
    status = page.locator(f"#{status_id}")
    assert status.get_attribute("data-phase") == "done", status.text_content()


def _cells(page: Page, rows: str) -> list[list[str]]:
    found: list[list[str]] = page.locator(f"{rows} tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.dataset.binding !== undefined"
        " && c.dataset.binding !== '' ? c.dataset.binding : c.textContent))"
    )
    return found


def _who_rows(who: dict[str, Any]) -> list[list[Any]]:
    """The rows ``history who``'s JSON makes, as the page should show them (hand-written
    from the document's fields, as ``who_grid`` orders them)."""
    rows: list[list[Any]] = [["ALLOWED", u, "super.users", ""] for u in who["superUsers"]]
    rows += [["ALLOWED", e["principal"], e["deciding"], e["binding"] or ""] for e in who["allowed"]]
    rows += [["DENIED", e["principal"], e["deciding"], e["binding"] or ""] for e in who["denied"]]
    return rows


def _parsed(rows: list[list[str]]) -> list[list[Any]]:
    return [[json.loads(c) if c.startswith("[") else c for c in row] for row in rows]


def test_when_and_who_in_the_page(history: History, page: Page, tmp_path: Path) -> None:
    node = history.node
    reference = Command(history, "history", "when", "--principal", "User:bob", *RESOURCE_ARGS)
    log_in(page, node)
    query = urlencode({"principal": "User:bob", **RESOURCE})
    page.goto(f"{node.url}/ui/access?{query}")  # the fields in the address ask at once
    # progress while it runs: the job's phase and elapsed time, as the node reports them
    page.wait_for_function(
        "() => /^when: running, \\d+\\.\\d s$/.test(document.getElementById('when-status').textContent)"
    )
    _done(page, "when-status")
    expected = reference.answer()
    drawn = page.locator("#timeline rect.interval").evaluate_all(
        "rects => rects.map(r => [r.dataset.fromOffset, r.dataset.toOffset])"
    )
    listed = page.locator("#interval-rows tr").evaluate_all(
        "rows => rows.map(r => [r.dataset.fromOffset, r.dataset.toOffset])"
    )
    from_cli = [[str(i["fromOffset"]), "" if i["toOffset"] is None else str(i["toOffset"])]
                for i in expected["intervals"]]  # fmt: skip
    assert drawn == listed == from_cli
    assert from_cli == [[str(history.bob_created), str(history.bob_deleted - 1)],
                        [str(history.bob_again), ""]]  # fmt: skip
    # each edge links to the change that opened or closed it, named with actor, offset, time
    edges = page.locator("#timeline a line.edge").evaluate_all("ls => ls.map(l => l.dataset.offset)")
    changes = [e["offset"] for i in expected["intervals"] for e in (i["openedBy"], i["closedBy"]) if e]
    assert edges == [str(o) for o in changes]
    first_link = page.locator("#interval-rows a.change").first
    opened = expected["intervals"][0]["openedBy"]
    assert first_link.text_content() == (f"offset {opened['offset']}, {opened['type']} by "
                                         f"{opened['actor']} at {opened['time']}")  # fmt: skip
    screenshot(page, tmp_path, "access-when")

    # a point inside bob's first interval: who was allowed then, as the command answers it
    page.locator("#timeline rect.interval").first.click()
    _done(page, "who-status")
    at = page.locator("#who-at").get_attribute("data-ms")
    assert at is not None
    who = aclstore(history, "history", "who", *RESOURCE_ARGS, "--at", at)
    shown = _parsed(_cells(page, "#who-rows"))
    assert shown == _who_rows(who)
    assert ["ALLOWED", "User:bob", "MATCHING_ACL", list(BOB.fields())] in shown  # inside his interval
    screenshot(page, tmp_path, "access-who")

    # the first edge's link opens the feed on that change
    first_link.click()
    page.wait_for_url(f"{node.url}/ui/changes?*")
    _done(page, "feed-status")
    highlighted = page.locator("#feed-rows tr.highlight")
    assert highlighted.get_attribute("data-offset") == str(opened["offset"])


def test_the_feed_and_a_diff_in_the_page(history: History, page: Page, tmp_path: Path) -> None:
    node = history.node
    reference = Command(history, "history", "events")
    log_in(page, node)
    page.goto(f"{node.url}/ui/changes")
    _done(page, "feed-status")
    events = reference.answer()
    shown = _parsed(_cells(page, "#feed-rows"))
    assert shown == _feed_rows(events)
    # hand-worked: the seven writes (a delete is one AclDeleted each), in the log's order
    assert [(row[0], row[2]) for row in shown] == [
        (str(history.bob_created), "ACL_CREATED"), (str(history.alice_created), "ACL_CREATED"),
        (str(history.bob_deleted - 1), "ACL_DELETED"), (str(history.bob_deleted), "ACL_DELETED"),
        (str(history.bob_again), "ACL_CREATED"), (str(history.carol_created - 1), "ACL_CREATED"),
        (str(history.carol_created), "ACL_CREATED"), (str(history.alice_deleted - 1), "ACL_DELETED"),
        (str(history.alice_deleted), "ACL_DELETED"),
    ], shown  # fmt: skip
    screenshot(page, tmp_path, "changes-feed")

    since, until = events[1]["time"], events[-1]["time"]  # alice created .. alice deleted
    diff_reference = Command(history, "history", "diff", "--from", since, "--to", until)
    page.fill("#diff-form input[name=from]", since)
    page.fill("#diff-form input[name=to]", until)
    page.click("#diff-button")
    _done(page, "diff-status")
    diff = diff_reference.answer()
    rows = _parsed(_cells(page, "#diff-rows"))
    assert rows == [["added", b] for b in diff["added"]] + [["removed", b] for b in diff["removed"]]
    # hand-worked: carol's two bindings added; alice's removed (bob's was deleted and created again)
    assert sorted(map(tuple, diff["added"])) == sorted([CAROL.fields(), CAROL_DENY.fields()])
    assert diff["removed"] == [list(ALICE.fields())]
    screenshot(page, tmp_path, "changes-diff")


def _feed_rows(events: list[dict[str, Any]]) -> list[list[Any]]:
    """The rows the feed shows for ``history events``' events (hand-written from the fields)."""
    return [[str(e["offset"]), e["time"], e["type"], e["actor"] or "",
             e["binding"] if "binding" in e else f"{e['config']['name']} = {e['config']['value']}"]
            for e in events]  # fmt: skip


def test_the_feed_pages_as_the_command_line_pages(history: History, page: Page, tmp_path: Path) -> None:
    """Pages of 4 (``?rows=4``): the first and the second page are ``history events --limit 4``
    and ``--limit 4 --after <its next>`` as a user runs them; back, then on to the last page."""
    node = history.node
    whole = Command(history, "history", "events")
    first = Command(history, "history", "events", "--limit", "4")
    log_in(page, node)
    page.goto(f"{node.url}/ui/changes?rows=4")
    _done(page, "feed-status")
    every, one = whole.answer(), first.answer()
    assert one["next"] == every[3]["offset"]  # hand-worked: the fourth event's offset
    assert _parsed(_cells(page, "#feed-rows")) == _feed_rows(one["events"]) == _feed_rows(every[:4])
    assert page.locator("#feed-previous").is_hidden() and page.locator("#feed-first").is_hidden()
    second = Command(history, "history", "events", "--limit", "4", "--after", str(one["next"]))
    page.click("#feed-next")
    _done(page, "feed-status")
    expect(page.locator("#feed-status")).to_have_attribute("data-after", str(one["next"]))
    two = second.answer()
    assert _parsed(_cells(page, "#feed-rows")) == _feed_rows(two["events"]) == _feed_rows(every[4:8])
    screenshot(page, tmp_path, "changes-feed-page-2")

    page.click("#feed-previous")  # back by the remembered cursor: the first page again
    _done(page, "feed-status")
    expect(page.locator("#feed-status")).to_have_attribute("data-page", "1")
    assert _parsed(_cells(page, "#feed-rows")) == _feed_rows(every[:4])
    for _ in range(2):
        page.click("#feed-next")
        _done(page, "feed-status")
    expect(page.locator("#feed-status")).to_have_attribute("data-page", "3")
    assert _parsed(_cells(page, "#feed-rows")) == _feed_rows(every[8:])  # the ninth, the last
    assert page.locator("#feed-next").is_hidden()


def test_restore_is_a_preview_then_one_guarded_request(
    history: History, page: Page, tmp_path: Path
) -> None:
    """Last in the module: it changes the live ACLs.  Back to just after alice was created:
    bob and alice, no carol.  A plan made before another change is refused when confirmed: a
    binding's, or, when the plan sets a setting, that setting's."""
    node = history.node
    reference = Command(history, "history", "restore", "--offset", str(history.alice_created))
    log_in(page, node)
    page.goto(f"{node.url}/ui/changes?feed=off")
    page.fill("#restore-form input[name=offset]", str(history.alice_created))
    page.click("#restore-button")
    _done(page, "restore-status")
    plan = reference.answer()
    rows = _parsed(_cells(page, "#plan-rows"))
    assert rows == [["delete", b] for b in plan["deletes"]] + [["create", b] for b in plan["creates"]]
    assert plan["creates"] == [list(ALICE.fields())]
    assert sorted(map(tuple, plan["deletes"])) == sorted([CAROL.fields(), CAROL_DENY.fields()])
    screenshot(page, tmp_path, "changes-restore-preview")

    with admin_client(node) as client:  # a change after the plan was made
        client.create_acls([DAN])
    page.click("#restore-confirm")
    result = page.locator("#restore-result")
    expect(result).to_have_attribute("data-outcome", "refused")
    refusal = result.text_content() or ""
    assert "ScopeChangedError" in refusal and "User:dan" in refusal and "nothing written" in refusal
    with admin_client(node) as client:
        assert DAN in client.describe_acls().bindings  # nothing of the plan was written

    page.click("#restore-button")  # a new plan: dan's binding goes too
    _done(page, "restore-status")
    page.click("#restore-confirm")
    expect(result).to_have_attribute("data-outcome", "written")
    offset = int(page.locator("#restore-offset").text_content() or "-1")
    with admin_client(node) as client:
        live = client.describe_acls()
    assert set(live.bindings) == {BOB, ALICE}
    assert live.offset == offset
    screenshot(page, tmp_path, "changes-restored")

    # a plan that sets a setting is refused when that setting was altered after the plan
    everyone = "allow.everyone.if.no.acl.found"
    with admin_client(node) as client:
        client.alter_configs({everyone: "true"})
    page.click("#restore-button")  # the bindings are as then; the setting was its default
    _done(page, "restore-status")
    assert _parsed(_cells(page, "#plan-rows")) == [["set", f"{everyone} = (default)"]]
    with admin_client(node) as client:  # altered again after the plan
        client.alter_configs({everyone: "false"})
    page.click("#restore-confirm")
    expect(result).to_have_attribute("data-outcome", "refused")
    refusal = result.text_content() or ""
    assert f"setting {everyone} set to 'false'" in refusal and "nothing written" in refusal
    with admin_client(node) as client:
        assert [c.value for c in client.describe_configs([everyone]).configs] == ["false"]
