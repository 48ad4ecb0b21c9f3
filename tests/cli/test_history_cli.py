"""``aclstore history``: the command line's refusals (one line on stderr, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from cli.history import apply_plan
from replicator.client import ClientConfig, StoreClient
from replicator.server.node import Node, NodeSettings
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.log import ChangeLog

WHO = ["history", "who", "--resource-type", "TOPIC", "--resource-name", "orders",
       "--operation", "READ", "--host", "10.0.0.1"]  # fmt: skip
WHEN = ["history", "when", "--principal", "User:bob", "--resource-type", "TOPIC",
        "--resource-name", "orders", "--operation", "READ", "--host", "10.0.0.1"]  # fmt: skip


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``aclstore argv``; assert exit 2 and a one-line error; return that line."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's error path
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["history", "snapshot", "--at", "yesterday"], "time 'yesterday' is not a time"),
        (["history", "snapshot", "--at", "2026-13-01"], "time '2026-13-01' is not a time"),
        (["history", "events", "--from", "12:00"], "time '12:00' is not a time"),
        (["history", "diff", "--from", "0", "--to", "soon"], "time 'soon' is not a time"),
        ([*WHO, "--at", "tomorrow"], "time 'tomorrow' is not a time"),
        ([*WHEN, "--to", "1e9"], "time '1e9' is not a time"),
        (["history", "restore", "--at", "2026-11-23T25:00Z"], "is not a time"),
        (["history", "snapshot", "--offset", "-3"], "offset '-3' is not a log offset"),
        (["history", "snapshot", "--offset", "x"], "offset 'x' is not a log offset"),
        (["history", "snapshot"], "one of the arguments --at --offset is required"),
        (["history", "snapshot", "--at", "0", "--offset", "1"], "not allowed with argument"),
        ([*WHO[:3], "TABLE", *WHO[4:], "--at", "0"], "unknown resource type 'TABLE'"),
        ([*WHO[:3], "ANY", *WHO[4:], "--at", "0"], "unknown resource type 'ANY'"),
        ([*WHO[:7], "READS", *WHO[8:], "--at", "0"], "unknown operation 'READS'"),
        ([*WHEN[:3], "bob", *WHEN[4:]], "principal 'bob': expected a string in format"),
        ([*WHEN, "--from", "2026-11-24", "--to", "2026-11-23"], "is after --to"),
        ([*WHEN, "--plot", "when.svg"], "name the file *.png"),
        (["history", "events", "--topic", "acls"], "--topic needs --bootstrap-servers"),
        (["history", "events", "--format", "xml"], "invalid choice: 'xml'"),
        (["history", "restore"], "one of the arguments --at --offset is required"),
        (["history", "events", "--limit", "0"], "--limit '0' is not a page size"),
        (["history", "events", "--limit", "-5"], "--limit '-5' is not a page size"),
        (["history", "events", "--limit", "ten"], "--limit 'ten' is not a page size"),
        (["history", "events", "--after", "-1"], "--after '-1' is not a log offset"),
        (["history", "events", "--after", "1.5"], "leave --after out for the first page"),
        (["history"], "required: SUBCOMMAND"),
    ],
)
def test_refusals_are_one_line_with_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    line = refused(capsys, argv)
    assert expected in line, line


@pytest.mark.unit
def test_malformed_time_names_the_accepted_forms(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, ["history", "snapshot", "--at", "last tuesday"])
    assert "epoch milliseconds" in line and "ISO-8601" in line and "--at" in line


def _binding(name: str, principal: str) -> AclBinding:
    return AclBinding.of(ResourceType.TOPIC, name, PatternType.LITERAL, principal, "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip


def test_apply_plan_writes_deletes_creates_and_settings_in_one_request(tmp_path: Path) -> None:
    """A node on the embedded log: the plan lands as one batch at one offset; the rest stays."""
    from store.codec import decode_event
    from store.log import EmbeddedChangeLog

    node = Node(NodeSettings(data_dir=tmp_path / "node", listen="127.0.0.1:0", audit=None))
    node.start()
    assert node.info is not None
    admin = ClientConfig.resolve(command_config=node.info.credential.properties_path)
    try:
        keep, drop, back = _binding("keep", "User:a"), _binding("drop", "User:b"), _binding("back", "User:c")
        with StoreClient(admin) as client:
            before = client.create_acls([keep, drop])
            applied = apply_plan(client, creates=[back], deletes=[drop],
                                 settings=[("allow.everyone.if.no.acl.found", "true")])  # fmt: skip
            listed = client.describe_acls(AclBindingFilter())
            configs = client.describe_configs(["allow.everyone.if.no.acl.found"])
        assert (applied.deleted, applied.created) == (1, 1)
        # AclDeleted + tombstone, AclCreated, ConfigAltered: one request, one offset at its end.
        assert before.offset is not None and applied.offsets == (before.offset + 4,)
        assert set(listed.bindings) == {keep, back}
        assert listed.offset == applied.offsets[-1]
        assert [c.value for c in configs.configs] == ["true"]
    finally:
        node.stop()
    with EmbeddedChangeLog(tmp_path / "node" / "log") as log:
        written = log.read(before.offset + 1)
    events = [decode_event(r.value) for r in written if r.value is not None]
    assert len(written) == 4 and len(events) == 3 and len({e.request_id for e in events}) == 1


# --- end to end on real Spark: the embedded log, archived, then asked ---------------------------

BOB = _binding("orders", "User:bob")
ALICE = _binding("orders", "User:alice")
EVE_DENY = AclBinding.of(ResourceType.TOPIC, "ord", PatternType.PREFIXED, "User:eve", "*",
                         AclOperation.ALL, AclPermissionType.DENY)  # fmt: skip
EVE = _binding("orders", "User:eve")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def history_log(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[ChangeLog, list[str]]:
    """A fresh log on either backend, and the ``history`` options that select it."""
    from store.log import EmbeddedChangeLog, KafkaChangeLog

    data = tmp_path / "data"
    if request.param == "embedded":
        return EmbeddedChangeLog(data / "log"), ["--data-dir", str(data)]
    bootstrap = request.getfixturevalue("kafka_bootstrap")
    topic = request.getfixturevalue("unique_topic")("history")
    selection = ["--data-dir", str(data), "--bootstrap-servers", bootstrap, "--topic", topic]
    return KafkaChangeLog(bootstrap, topic), selection


@pytest.mark.spark
def test_history_end_to_end(
    spark: object,
    history_log: tuple[ChangeLog, list[str]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """Writes with known offsets, the archive, then each question against hand-worked answers."""
    from store.admin import AclAdmin

    log, where = history_log
    clock = iter(range(1_000_000_000_000, 1_000_000_000_000 + 10**9, 60_000))
    with log:
        admin = AclAdmin(log, super_users=["User:admin"], clock=lambda: next(clock))
        created_bob = admin.create_acls([BOB], actor="User:admin").offset
        created_alice = admin.create_acls([ALICE, EVE, EVE_DENY], actor="User:admin").offset
        deleted_bob = admin.delete_acls([BOB.to_filter()], actor="User:admin").offset
    _run(capsys, "history", "archive", "--once", *where)

    events = json.loads(_run(capsys, "history", "events", *where, "--format", "json"))
    assert isinstance(events, list)  # issue 10: a plain list of events
    created = [e for e in events if e["type"] == "ACL_CREATED"]
    assert [e["binding"][3] for e in created] == ["User:bob", "User:alice", "User:eve", "User:eve"]
    assert created[0]["offset"] == created_bob
    assert events[-1]["offset"] == deleted_bob and events[-1]["type"] == "ACL_DELETED"
    assert set(created[0]) >= {"offset", "time", "type", "binding", "actor"}

    snapshot = _run(capsys, "history", "snapshot", *where, "--offset", str(created_alice), "--format", "csv")
    assert sorted(line.split(",")[4] for line in snapshot.splitlines()[1:]) == [
        "User:alice", "User:bob", "User:eve", "User:eve",
    ]  # fmt: skip

    who_args = ["history", "who", *where, "--resource-type", "TOPIC", "--resource-name", "orders",
                "--operation", "READ", "--host", "10.0.0.1", "--format", "json"]  # fmt: skip
    before = json.loads(_run(capsys, *who_args, "--offset", str(created_alice)))
    after = json.loads(_run(capsys, *who_args, "--offset", str(deleted_bob)))
    # eve's READ ALLOW loses to her prefixed DENY on "ord": she is denied, not allowed.
    assert {e["principal"] for e in before["allowed"]} == {"User:bob", "User:alice"}
    assert {e["principal"] for e in after["allowed"]} == {"User:alice"}
    assert before["superUsers"] == [] and before["everyone"] is False

    png = tmp_path / "when.png"
    when = json.loads(_run(capsys, "history", "when", *where, "--principal", "User:bob",
                           "--resource-type", "TOPIC", "--resource-name", "orders", "--operation",
                           "READ", "--host", "10.0.0.1", "--format", "json", "--plot", str(png)))  # fmt: skip
    (interval,) = when["intervals"]
    # A delete writes AclDeleted, then the binding's tombstone (the offset the write reports):
    # the interval closes at the AclDeleted, one before.
    assert (interval["fromOffset"], interval["toOffset"]) == (created_bob, deleted_bob - 1)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    plan = json.loads(_run(capsys, "history", "restore", *where, "--offset", str(created_alice),
                           "--format", "json"))  # fmt: skip
    assert plan["creates"] == [list(BOB.fields())] and plan["deletes"] == []


@pytest.mark.spark
def test_a_time_before_the_archive_is_a_one_line_error(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    data = tmp_path / "data"
    with EmbeddedChangeLog(data / "log") as log:
        AclAdmin(log, super_users=["User:admin"]).create_acls([BOB], actor="User:admin")
    _run(capsys, "history", "archive", "--once", "--data-dir", str(data))
    line = refused(capsys, ["history", "snapshot", "--data-dir", str(data), "--at", "2001-01-01"])
    assert "978307200000 ms is before the first change" in line  # 2001-01-01T00:00Z


@pytest.mark.spark
def test_history_diff_and_restore_on_the_embedded_default(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's tour on the default store: diff between two times, then a restore dry run
    that names the bindings and the settings in force then (hand-worked from the writes)."""
    import time

    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    data = tmp_path / "data"
    where = ["--data-dir", str(data)]
    with EmbeddedChangeLog(data / "log") as log:
        admin = AclAdmin(log, super_users=["User:admin"])
        admin.create_acls([BOB], actor="User:admin")
        time.sleep(0.01)  # distinct log times: a time names the last record written by then
        admin.alter_configs({"super.users": "User:ops"}, actor="User:admin")
        time.sleep(0.01)
        admin.create_acls([ALICE, EVE_DENY], actor="User:admin")
        admin.delete_acls([BOB.to_filter()], actor="User:admin")
        admin.alter_configs({"super.users": None}, actor="User:admin")
    _run(capsys, "history", "archive", "--once", *where)
    events = json.loads(_run(capsys, "history", "events", *where, "--format", "json"))
    by_type = [(e["type"], e["offset"]) for e in events]
    assert [t for t, _ in by_type] == ["ACL_CREATED", "CONFIG_ALTERED", "ACL_CREATED", "ACL_CREATED",
                                       "ACL_DELETED", "ACL_DELETED", "CONFIG_ALTERED"]  # fmt: skip
    settings_set = events[1]
    then, now = str(int(_ms(settings_set["time"]))), str(int(_ms(events[-1]["time"])))

    changed = json.loads(_run(capsys, "history", "diff", *where, "--from", then, "--to", now,
                              "--format", "json"))  # fmt: skip
    assert {tuple(b) for b in changed["added"]} == {ALICE.fields(), EVE_DENY.fields()}
    assert changed["removed"] == [list(BOB.fields())]
    assert changed["settings"] == [{"name": "super.users", "old": "User:ops", "new": None}]
    assert changed["fromOffset"] == settings_set["offset"] and changed["toOffset"] == events[-1]["offset"]
    table = _run(capsys, "history", "diff", *where, "--from", then, "--to", now)
    assert "added" in table and "removed" in table and "super.users" in table

    plan = json.loads(_run(capsys, "history", "restore", *where, "--at", then, "--format", "json"))
    assert plan["creates"] == [list(BOB.fields())]
    assert {tuple(b) for b in plan["deletes"]} == {ALICE.fields(), EVE_DENY.fields()}
    assert plan["settings"] == {"super.users": "User:ops"}
    dry_run = _run(capsys, "history", "restore", *where, "--at", then)
    assert "super.users" in dry_run and "User:ops" in dry_run


def _ms(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000


@pytest.mark.spark
def test_events_pages_concatenated_are_the_whole_answer(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``events --limit N --after OFFSET``, page after page with random sizes, on a real archive
    and the log's tail after it: the pages put together are the unpaged answer, which is the
    log's own events (read back from the log); each page is at most N long, and only the last
    has no ``next``.  Small first windows make a page take several reads (:mod:`jobs.history.paging`)."""
    import random

    import jobs.history.paging
    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    monkeypatch.setattr(jobs.history.paging, "FIRST_WINDOW", 1)
    data = tmp_path / "data"
    where = ["--data-dir", str(data), "--format", "json"]
    clock = iter(range(1_000_000_000_000, 1_000_000_000_000 + 10**9, 1_000))
    names = [f"t{i}" for i in range(14)]
    with EmbeddedChangeLog(data / "log") as log:
        admin = AclAdmin(log, super_users=["User:admin"], clock=lambda: next(clock))
        for name in names:
            admin.create_acls([_binding(name, "User:bob")], actor="User:admin")
        for name in names[::3]:
            admin.delete_acls([_binding(name, "User:bob").to_filter()], actor="User:admin")
        admin.alter_configs({"super.users": "User:ops"}, actor="User:admin")
    _run(capsys, "history", "archive", "--once", "--data-dir", str(data))
    with EmbeddedChangeLog(data / "log") as log:  # the tail: written after the archive's run
        admin = AclAdmin(log, super_users=["User:admin"], clock=lambda: next(clock))
        admin.create_acls([_binding("late", "User:eve"), _binding("later", "User:eve")], actor="User:admin")
        written = log.read(0)
    logged = [r.offset for r in written]  # one event a record: a delete's tombstone is one too

    whole = json.loads(_run(capsys, "history", "events", *where))
    assert [e["offset"] for e in whole] == logged  # every event, the tail's included
    kinds = [e["type"] for e in whole]  # hand-worked: 14 + 2 creates, 5 deletes of 2 records, a setting
    assert [kinds.count(k) for k in ("ACL_CREATED", "ACL_DELETED", "CONFIG_ALTERED")] == [16, 10, 1]
    # Log times are the log's append times, so events of one burst may share a millisecond:
    # the window's ends are picked among the distinct times by fraction, never crossing.
    times = sorted({e["time"] for e in whole})
    ranges = [[], ["--from", times[len(times) // 4], "--to", times[(3 * len(times)) // 4]]]
    rng = random.Random(37)
    for window in ranges:
        expected = json.loads(_run(capsys, "history", "events", *where, *window))
        assert expected and (window == [] or len(expected) < len(whole))
        pages: list[list[dict[str, object]]] = []
        cursor: list[str] = []
        while True:
            limit = rng.randint(1, 9)
            page = json.loads(_run(capsys, "history", "events", *where, *window, *cursor,
                                   "--limit", str(limit)))  # fmt: skip
            assert set(page) == {"events", "next", "offset"} and len(page["events"]) <= limit
            assert page["offset"] == written[-1].offset
            pages.append(page["events"])
            if page["next"] is None:
                break
            assert len(page["events"]) == limit and page["next"] == page["events"][-1]["offset"]
            cursor = ["--after", str(page["next"])]
        assert [e for p in pages for e in p] == expected, window
    # a cursor alone: everything above it, as one page
    middle = whole[len(whole) // 2]["offset"]
    rest = json.loads(_run(capsys, "history", "events", *where, "--after", str(middle)))
    assert rest == {"events": [e for e in whole if e["offset"] > middle], "next": None,
                    "offset": written[-1].offset}  # fmt: skip
    # the table: at most N rows, and where the next page starts
    code = cli.main(["history", "events", "--data-dir", str(data), "--limit", "3", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0 and len(out.strip().splitlines()) == 1 + 3, out  # the header and 3 rows
    assert f"--after {whole[2]['offset']}" in err
