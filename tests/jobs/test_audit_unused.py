"""Unused grants on real Spark: real audit events (the contract's encoder, the job's parsing)
against a live set, the answer worked out by hand from the decisions listed below."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from cli.present.audit import unused_json
from jobs.audit.transform import decision_rows
from jobs.audit.unused import LiveGrant, live_frame, unused_grants, unused_rows
from jobs.common.events import HistoryEvent
from replicator.contract.audit_event import audit_event, encode_audit_event
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule

pytestmark = [pytest.mark.spark]

TOPIC, READ, WRITE = ResourceType.TOPIC, AclOperation.READ, AclOperation.WRITE
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
T0 = 1_700_000_000_000  # the window's start (--since), ms
HOUR, DAY = 3_600_000, 86_400_000

BOB_READS = AclBinding.of(TOPIC, "orders", LITERAL, "User:bob", "*", READ, ALLOW)
CAROL_WRITES = AclBinding.of(TOPIC, "orders", LITERAL, "User:carol", "*", WRITE, ALLOW)
ANYONE_READS_PUB = AclBinding.of(TOPIC, "pub", PREFIXED, "User:*", "*", READ, ALLOW)
DAVE_FROM_ONE_HOST = AclBinding.of(TOPIC, "orders", LITERAL, "User:dave", "10.0.0.1", READ, ALLOW)
DAVE_FROM_ANY_HOST = AclBinding.of(TOPIC, "orders", LITERAL, "User:dave", "*", READ, ALLOW)  # not live
NO_EVE = AclBinding.of(TOPIC, "orders", LITERAL, "User:eve", "*", READ, DENY)
LIVE = (BOB_READS, CAROL_WRITES, ANYONE_READS_PUB, DAVE_FROM_ONE_HOST, NO_EVE)


def acl_allowed(binding: AclBinding) -> Decision:
    return Decision(AuthorizationResult.ALLOWED, DecisionRule.MATCHING_ACL, binding)


# (ms, principal, operation, topic, decision)
ASKED = [
    (T0 - 40 * DAY, "User:bob", READ, "orders", acl_allowed(BOB_READS)),  # before the window...
    (T0 + HOUR, "User:bob", READ, "orders", acl_allowed(BOB_READS)),  # ...and in it: used
    (T0 - 2 * DAY, "User:carol", WRITE, "orders", acl_allowed(CAROL_WRITES)),  # before only: unused
    (T0 + 2 * HOUR, "User:ann", READ, "pub-news", acl_allowed(ANYONE_READS_PUB)),  # used
    # the same fields but host *: a different binding, so dave's live one stays never used
    (T0 + 3 * HOUR, "User:dave", READ, "orders", acl_allowed(DAVE_FROM_ANY_HOST)),
    (T0 + 4 * HOUR, "User:eve", READ, "orders",
     Decision(AuthorizationResult.DENIED, DecisionRule.MATCHING_ACL, NO_EVE)),  # a DENY decided
    (T0 + 5 * HOUR, "User:root", WRITE, "orders",
     Decision(AuthorizationResult.ALLOWED, DecisionRule.SUPER_USER)),  # no binding decided
]  # fmt: skip


def test_live_allows_that_decided_nothing_in_the_window(spark: Any) -> None:
    records = []
    for i, (ms, principal, op, topic, decision) in enumerate(ASKED):
        event = audit_event(
            event_id=f"e{i}", source="aclstore://test", time_ns=ms * 1_000_000, principal=principal,
            host="10.0.0.1", action=Action(op, TOPIC, topic), decision=decision, offset=7,
        )  # fmt: skip
        records.append((f"e{i}".encode(), encode_audit_event(event), i, ms))
    columns = ("key", "value", "offset", "timestampMs")
    arrow = pa.Table.from_pylist([dict(zip(columns, r, strict=True)) for r in records])
    table = spark.createDataFrame(decision_rows(arrow))
    grants = [
        LiveGrant(binding=b, granted_by=HistoryEvent(offset=i, time_ms=T0 - 90 * DAY + i, type="ACL_CREATED",
                                                     binding=b, actor="User:admin"))
        for i, b in enumerate(LIVE)
    ]  # fmt: skip
    got = unused_json(unused_rows(unused_grants(table, live_frame(spark, grants), T0).collect()))
    carol_last = datetime.fromtimestamp((T0 - 2 * DAY) / 1000, UTC).isoformat(timespec="microseconds")
    assert [(g["binding"], g["grantedOffset"], g["grantedBy"], g["lastUsed"]) for g in got] == [
        (list(DAVE_FROM_ONE_HOST.fields()), 3, "User:admin", None),  # never used: first
        (list(CAROL_WRITES.fields()), 1, "User:admin", carol_last),
    ]
    assert got[0]["granted"] == "2023-08-16T22:13:20.003Z"  # T0 - 90 days + 3 ms, by hand

    # A window starting after every decision: every live ALLOW is unused, DENY never listed.
    later = unused_json(unused_rows(unused_grants(table, live_frame(spark, grants), T0 + DAY).collect()))
    assert [g["binding"][3] for g in later] == ["User:dave", "User:carol", "User:bob", "User:*"]
