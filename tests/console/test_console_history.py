"""The console's history on real Spark: one node whose history holds known changes, archived,
asked through the console's calls and pages; each answer checked against the same question
asked as a user types it (``aclstore history … --format json`` over the same Connect server)
and against the offsets of the writes (hand-worked)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from history_support import ConsoleCalls, History, aclstore, build_history

from cli.spark_connect import ServerRecord

RESOURCE = {"resourceType": "TOPIC", "resourceName": "orders", "operation": "READ", "host": "10.0.0.1"}
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
    calls = ConsoleCalls(history.node)
    view = calls.ask("when", {"principal": "User:bob", **RESOURCE})
    assert view["phase"] == "done", view
    expected = aclstore(history, "history", "when", "--principal", "User:bob", *RESOURCE_ARGS)
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
