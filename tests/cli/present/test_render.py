"""Answers as table, CSV and JSON text (:mod:`cli.present.render`, the history's grids and
documents of :mod:`cli.present.history`), against hand-written expected text."""

from __future__ import annotations

import json

import pytest

from cli.present.history import (
    diff_grid,
    events_grid,
    restore_grid,
    snapshot_grid,
    when_grid,
    when_json,
    who_grid,
)
from cli.present.render import Grid, csv_text, render, table_text
from jobs.history import (
    DiffAnswer,
    HistoryEvent,
    Interval,
    RestorePlan,
    Snapshot,
    WhoAnswer,
    WhoEntry,
)
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.unit

T0 = 1_000_000_000_000  # 2001-09-09T01:46:40.000Z
READ_ORDERS = AclBinding.of(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "*",
                            AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
DENY_ORD = AclBinding.of(ResourceType.TOPIC, "ord", PatternType.PREFIXED, "User:eve", "10.0.0.9",
                         AclOperation.ALL, AclPermissionType.DENY)  # fmt: skip


def test_table_aligns_columns_and_ends_with_the_offset() -> None:
    grid = Grid(("a", "long header"), (("xyz", "1"), ("", "22")))
    assert table_text(grid, 7) == (
        "a    long header\n"
        "xyz  1\n"
        "     22\n"
        "(log offset 7)\n"
    )  # fmt: skip
    assert table_text(Grid(("a",), ()), 0) == "a\n(none)\n(log offset 0)\n"


def test_csv_quotes_as_rfc_4180_and_carries_the_offset() -> None:
    grid = Grid(("name", "value"), (("super.users", "User:a;User:b"), ('say "hi"', "x,y")))
    assert csv_text(grid, 12) == (
        "name,value,offset\r\n"
        "super.users,User:a;User:b,12\r\n"
        '"say ""hi""","x,y",12\r\n'
    )  # fmt: skip


def test_rows_must_match_the_header() -> None:
    with pytest.raises(ValueError, match="2 cells for 1 columns"):
        Grid(("a",), (("1", "2"),))


def test_events_table() -> None:
    events = [
        HistoryEvent(offset=3, time_ms=T0, type="ACL_CREATED", binding=READ_ORDERS,
                     actor="User:admin"),
        HistoryEvent(offset=4, time_ms=T0 + 1500, type="CONFIG_ALTERED",
                     config_name="super.users", config_value="User:ops"),
    ]
    assert render("table", events_grid(events), 4, None) == (
        "offset  time                      type            resourceType  resourceName  patternType"
        "  principal  host  operation  permissionType  config       value     actor\n"
        "3       2001-09-09T01:46:40.000Z  ACL_CREATED     TOPIC         orders        LITERAL"
        "      User:bob   *     READ       ALLOW" + " " * 34 + "User:admin\n"
        # Widths 12, 12, 11, 9, 4, 9, 14 of the blank binding columns, each plus 2, and the 2
        # after "type": 87 spaces before "config".
        "4       2001-09-09T01:46:41.500Z  CONFIG_ALTERED" + " " * 87 + "super.users  User:ops\n"
        "(log offset 4)\n"
    )


def test_snapshot_csv_sorts_bindings_and_settings() -> None:
    snapshot = Snapshot(offset=9, time_ms=None, bindings=(READ_ORDERS, DENY_ORD), settings={
        "super.users": "User:ops", "allow.everyone.if.no.acl.found": "false"})  # fmt: skip
    header = (
        "kind,resourceType,resourceName,patternType,principal,host,operation,permissionType,name,value,offset"
    )
    assert csv_text(snapshot_grid(snapshot), 9).splitlines() == [
        header,
        # Kafka's order of resources: within a type, names descending ("orders" before "ord").
        "binding,TOPIC,orders,LITERAL,User:bob,*,READ,ALLOW,,,9",
        "binding,TOPIC,ord,PREFIXED,User:eve,10.0.0.9,ALL,DENY,,,9",
        "setting,,,,,,,,allow.everyone.if.no.acl.found,false,9",
        "setting,,,,,,,,super.users,User:ops,9",
    ]


def test_who_lists_super_users_then_allowed_then_denied() -> None:
    who = WhoAnswer(
        offset=5, time_ms=None, everyone=True,
        allowed=(WhoEntry(principal="User:bob", deciding="ALLOW binding", binding=READ_ORDERS),
                 WhoEntry(principal="User:*", deciding="no ACL found")),
        denied=(WhoEntry(principal="User:eve", deciding="DENY binding", binding=DENY_ORD),),
        super_users=("User:ops",),
    )  # fmt: skip
    assert csv_text(who_grid(who), 5).splitlines() == [
        "decision,principal,deciding,binding,offset",
        "ALLOWED,User:ops,super.users,,5",
        'ALLOWED,User:bob,ALLOW binding,"(TOPIC, orders, LITERAL, User:bob, *, READ, ALLOW)",5',
        "ALLOWED,User:*,no ACL found,,5",
        'DENIED,User:eve,DENY binding,"(TOPIC, ord, PREFIXED, User:eve, 10.0.0.9, ALL, DENY)",5',
    ]


def test_when_table_leaves_an_open_interval_blank() -> None:
    opened = HistoryEvent(offset=3, time_ms=T0, type="ACL_CREATED", binding=READ_ORDERS)
    closed = HistoryEvent(offset=8, time_ms=T0 + 60_000, type="ACL_DELETED", binding=READ_ORDERS)
    reopened = HistoryEvent(offset=11, time_ms=T0 + 120_000, type="CONFIG_ALTERED",
                            config_name="allow.everyone.if.no.acl.found", config_value="true")  # fmt: skip
    intervals = [
        Interval(from_offset=3, to_offset=8, from_ms=T0, to_ms=T0 + 60_000, opened_by=opened,
                 closed_by=closed),
        Interval(from_offset=11, to_offset=None, from_ms=T0 + 120_000, to_ms=None,
                 opened_by=reopened),
    ]  # fmt: skip
    lines = table_text(when_grid(intervals), 12).splitlines()
    assert lines[0].split() == ["fromOffset", "toOffset", "from", "to", "openedBy", "closedBy"]
    assert lines[1].split()[:4] == ["3", "8", "2001-09-09T01:46:40.000Z", "2001-09-09T01:47:40.000Z"]
    assert lines[1].endswith(
        "3 ACL_CREATED (TOPIC, orders, LITERAL, User:bob, *, READ, ALLOW)"
        "  8 ACL_DELETED (TOPIC, orders, LITERAL, User:bob, *, READ, ALLOW)"
    )
    assert lines[2].split() == ["11", "2001-09-09T01:48:40.000Z", "11", "CONFIG_ALTERED",
                                "allow.everyone.if.no.acl.found=true"]  # fmt: skip
    assert lines[3] == "(log offset 12)"
    assert csv_text(when_grid(intervals[1:], series="User:bob READ TOPIC:orders"), 12).splitlines() == [
        "series,fromOffset,toOffset,from,to,openedBy,closedBy,offset",
        "User:bob READ TOPIC:orders,11,,2001-09-09T01:48:40.000Z,,"
        "11 CONFIG_ALTERED allow.everyone.if.no.acl.found=true,,12",
    ]


def test_diff_and_restore_csv() -> None:
    diff = DiffAnswer(
        from_offset=1, to_offset=20, added=(DENY_ORD,), removed=(READ_ORDERS,),
        settings_changed=(("super.users", None, "User:ops"),),
    )  # fmt: skip
    assert csv_text(diff_grid(diff), 20).splitlines()[1:] == [
        "added,TOPIC,ord,PREFIXED,User:eve,10.0.0.9,ALL,DENY,,,,20",
        "removed,TOPIC,orders,LITERAL,User:bob,*,READ,ALLOW,,,,20",
        "setting,,,,,,,,super.users,,User:ops,20",
    ]
    plan = RestorePlan(at_offset=1, offset=20, creates=(READ_ORDERS,), deletes=(DENY_ORD,))
    assert csv_text(restore_grid(plan), 20).splitlines() == [
        "action,resourceType,resourceName,patternType,principal,host,operation,permissionType,offset",
        "delete,TOPIC,ord,PREFIXED,User:eve,10.0.0.9,ALL,DENY,20",
        "create,TOPIC,orders,LITERAL,User:bob,*,READ,ALLOW,20",
    ]


def test_json_is_the_given_document_and_an_unknown_format_is_refused() -> None:
    assert render("json", Grid((), ()), 1, {"intervals": [], "offset": 1}) == (
        '{\n  "intervals": [],\n  "offset": 1\n}\n'
    )
    with pytest.raises(ValueError, match="'xml' is not one of table, json, csv"):
        render("xml", Grid((), ()), 1, None)


def test_when_json_is_issue_10s_shape() -> None:
    from jobs.history import WhenAnswer

    opened = HistoryEvent(offset=3, time_ms=T0, type="ACL_CREATED", binding=READ_ORDERS, actor="User:admin")
    answer = WhenAnswer(
        intervals=(Interval(from_offset=3, to_offset=None, from_ms=T0, to_ms=None, opened_by=opened),),
        offset=12,
    )
    document = json.loads(render("json", when_grid(answer.intervals), answer.offset, when_json(answer)))
    assert document["offset"] == 12
    (interval,) = document["intervals"]
    assert {k: interval[k] for k in ("fromOffset", "toOffset", "from", "to")} == {
        "fromOffset": 3, "toOffset": None, "from": "2001-09-09T01:46:40.000Z", "to": None,
    }  # fmt: skip
    assert interval["openedBy"]["binding"] == ["TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "ALLOW"]
    assert table_text(when_grid(answer.intervals), answer.offset).splitlines()[1].split()[:3] == [
        "3", "2001-09-09T01:46:40.000Z", "3",
    ]  # fmt: skip


def test_when_json_has_the_issue_shape() -> None:
    from jobs.history import WhenAnswer

    opened = HistoryEvent(offset=1, time_ms=1001, type="ACL_CREATED", binding=READ_ORDERS, actor="a")
    answer = WhenAnswer(
        intervals=(Interval(from_offset=1, to_offset=None, from_ms=0, to_ms=None, opened_by=opened),),
        offset=4,
    )
    doc = when_json(answer)
    assert doc["offset"] == 4
    [interval] = doc["intervals"]
    assert (interval["fromOffset"], interval["toOffset"], interval["from"], interval["to"]) == (
        1, None, "1970-01-01T00:00:00.000Z", None,
    )  # fmt: skip
    assert interval["openedBy"]["binding"] == ["TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "ALLOW"]
