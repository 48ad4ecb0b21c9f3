"""The audit job's per-batch transformations over Arrow (pure: no Spark): parsing real encoded
events, dropping resends by spool sequence numbers, per-minute counts and new denials, worked
by hand and against a replay written as plain loops."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from jobs.audit.transform import (
    DECISION_ARROW_SCHEMA,
    LAST_DENIED_SCHEMA,
    decision_rows,
    first_sendings,
    merged_last_denied,
    minute_rows,
    new_denials,
)
from replicator.contract.audit_event import audit_event, encode_audit_event
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizationResult, Decision, DecisionRule

D = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
DENIED = Decision(AuthorizationResult.DENIED, DecisionRule.DEFAULT_DENY)
ALLOWED = Decision(AuthorizationResult.ALLOWED, DecisionRule.SUPER_USER)


def decisions(asked: list[tuple[str, datetime, str, str, str, str]]) -> pa.Table:
    """Rows of the decisions table: (id, time, principal, resource type, name, result)."""
    rows = [
        {"id": i, "time": t, "source": "src", "principal": p, "host": "10.0.0.1", "operation": "READ",
         "resourceType": rt, "resourceName": n, "patternType": "LITERAL", "result": res,
         "rule": "DEFAULT_DENY", "binding": None, "aclOffset": 7, "auditOffset": k}
        for k, (i, t, p, rt, n, res) in enumerate(asked)
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=DECISION_ARROW_SCHEMA)


def last_denied(pairs: dict[tuple[str, str, str], datetime]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"principal": p, "resourceType": rt, "resourceName": n, "lastDenied": t}
         for (p, rt, n), t in pairs.items()],
        schema=LAST_DENIED_SCHEMA,
    )


def as_dict(table: pa.Table) -> dict[tuple[str, str, str], datetime]:
    return {(r["principal"], r["resourceType"], r["resourceName"]): r["lastDenied"]
            for r in table.to_pylist()}  # fmt: skip


def test_new_denials_measured_against_the_last_denial_in_days() -> None:
    """Worked by hand, a 7-day window: the batch's denials against the last denials."""
    previous = last_denied({
        ("User:eve", "TOPIC", "payroll"): D - 3 * DAY, ("User:bob", "TOPIC", "orders"): D - 8 * DAY,
        ("User:ann", "TOPIC", "logs"): D + DAY,
    })  # fmt: skip
    rows = decisions([
        ("r1", D, "User:eve", "TOPIC", "payroll", "DENIED"),  # 3 days after the last: not new
        ("r2", D, "User:bob", "TOPIC", "orders", "DENIED"),  # 8 days after: new
        ("r3", D + DAY, "User:bob", "TOPIC", "orders", "DENIED"),  # a day after r2: not new
        ("r4", D, "User:carl", "TOPIC", "x", "DENIED"),  # never denied before: new
        ("r5", D + 10 * DAY, "User:carl", "TOPIC", "x", "DENIED"),  # 10 days after r4: new
        ("r6", D, "User:ann", "TOPIC", "logs", "DENIED"),  # before the last recorded: late
        ("r7", D, "User:dave", "TOPIC", "y", "ALLOWED"),
        ("r8", D, "User:bob", "GROUP", "orders", "DENIED"),  # another resource type: new
    ])  # fmt: skip
    got = {r["id"]: r["previousDenied"] for r in new_denials(rows, previous, 7).to_pylist()}
    assert got == {"r2": D - 8 * DAY, "r4": None, "r5": D, "r8": None}
    assert as_dict(merged_last_denied(previous, rows)) == {
        ("User:eve", "TOPIC", "payroll"): D, ("User:bob", "TOPIC", "orders"): D + DAY,
        ("User:carl", "TOPIC", "x"): D + 10 * DAY, ("User:ann", "TOPIC", "logs"): D + DAY,
        ("User:bob", "GROUP", "orders"): D,
    }  # fmt: skip


def test_last_denials_keep_the_later_of_both_sides() -> None:
    """Hand-worked: a pair on both sides (the later kept either way) and on one side only."""
    hour = timedelta(hours=1)
    previous = last_denied({("User:eve", "TOPIC", "a"): D, ("User:eve", "TOPIC", "b"): D + hour,
                            ("User:bob", "TOPIC", "a"): D})  # fmt: skip
    rows = decisions([("1", D + hour, "User:eve", "TOPIC", "a", "DENIED"),
                      ("2", D, "User:eve", "TOPIC", "b", "DENIED"),
                      ("3", D + 2 * hour, "User:ann", "GROUP", "a", "DENIED"),
                      ("4", D + 3 * hour, "User:ann", "GROUP", "b", "ALLOWED")])  # fmt: skip
    assert as_dict(merged_last_denied(previous, rows)) == {
        ("User:eve", "TOPIC", "a"): D + hour, ("User:eve", "TOPIC", "b"): D + hour,
        ("User:bob", "TOPIC", "a"): D, ("User:ann", "GROUP", "a"): D + 2 * hour,
    }  # fmt: skip


def test_new_denials_over_random_batches_match_a_replay() -> None:
    """Random denials of 4 principals on 3 topics over 60 days, cut into batches at random;
    each batch's new denials against a replay of the rule as plain loops, the last denials
    carried from batch to batch as the job carries them."""
    rng = random.Random(7)
    for _ in range(20):
        asked = []
        for k in range(rng.randint(1, 80)):
            t = D + timedelta(hours=rng.randint(0, 60 * 24))
            asked.append((f"e{k}", t, f"User:u{rng.randint(0, 3)}", "TOPIC", f"t{rng.randint(0, 2)}",
                          rng.choice(("DENIED", "DENIED", "ALLOWED"))))  # fmt: skip
        cuts = sorted(rng.sample(range(1, len(asked)), min(3, len(asked) - 1))) if len(asked) > 1 else []
        carried = last_denied({})
        replay_last: dict[tuple[str, str, str], datetime] = {}
        for start, end in zip([0, *cuts], [*cuts, len(asked)], strict=True):
            batch = asked[start:end]
            rows = decisions(batch).set_column(
                13, "auditOffset", pa.array(range(start, end), pa.int64()))  # fmt: skip
            got = {r["id"]: r["previousDenied"] for r in new_denials(rows, carried, 7).to_pylist()}
            expected: dict[str, datetime | None] = {}
            before_batch = dict(replay_last)
            by_pair: dict[tuple[str, str, str], list[tuple[datetime, int, str]]] = {}
            for k, (i, t, p, rt, n, res) in enumerate(batch, start):
                if res == "DENIED":
                    by_pair.setdefault((p, rt, n), []).append((t, k, i))
            for pair, denials in by_pair.items():
                previous = before_batch.get(pair)
                for t, _, i in sorted(denials):
                    late = pair in before_batch and t <= before_batch[pair]
                    if not late and (previous is None or previous < t - 7 * DAY):
                        expected[i] = previous
                    previous = t
                replay_last[pair] = max([*([before_batch[pair]] if pair in before_batch else []),
                                         *(t for t, _, _ in denials)])  # fmt: skip
            assert got == expected
            carried = merged_last_denied(carried, rows)
            assert as_dict(carried) == replay_last


def spool_id(spool: str, sequence: int) -> str:
    return f"{spool}{sequence:016x}"


def test_resends_are_behind_their_spool_and_other_ids_are_kept_once_per_batch() -> None:
    """Hand-worked: two spools, resends in the same batch and in a later one (after the
    sequence numbers of the batch before), an id of another form twice in one batch."""
    a, b = "0123456789abcdef", "fedcba9876543210"

    def batch(ids: list[str]) -> pa.Table:
        return decisions([(i, D, "User:eve", "TOPIC", "t", "DENIED") for i in ids])

    first = [spool_id(a, 0), spool_id(a, 1), spool_id(b, 0), spool_id(a, 1), spool_id(a, 0),
             spool_id(a, 2), "other", "other", spool_id(b, 5)]  # fmt: skip
    kept, reached = first_sendings(batch(first), {})
    assert kept["id"].to_pylist() == [spool_id(a, 0), spool_id(a, 1), spool_id(b, 0), spool_id(a, 2),
                                      "other", spool_id(b, 5)]  # fmt: skip
    assert reached == {a: 2, b: 5}
    second = [spool_id(b, 3), spool_id(a, 2), spool_id(a, 3), "other", spool_id(b, 6), "0123"]
    kept, reached = first_sendings(batch(second), reached)
    assert kept["id"].to_pylist() == [spool_id(a, 3), "other", spool_id(b, 6), "0123"]
    assert reached == {a: 3, b: 6}


def records(values: list[bytes | None]) -> pa.Table:
    return pa.table({
        "key": pa.array([b"k"] * len(values), pa.binary()), "value": pa.array(values, pa.binary()),
        "offset": pa.array(range(10, 10 + len(values)), pa.int64()),
        "timestampMs": pa.array([0] * len(values), pa.int64()),
    })  # fmt: skip


def test_decision_rows_from_encoded_events() -> None:
    """Real encoded events (one decided by a binding, a name with a quote, a tab and a
    non-ASCII letter), with a tombstone, a value that is not JSON, another event type and an
    event printed over two lines among them: the rows by hand."""
    binding = AclBinding.of(ResourceType.TOPIC, "orders", PatternType.PREFIXED, "User:bob", "*",
                            AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
    by_acl = Decision(AuthorizationResult.ALLOWED, DecisionRule.MATCHING_ACL, binding)
    time_ns = 1_700_000_000_123_456_000
    first = encode_audit_event(audit_event(
        event_id=spool_id("0123456789abcdef", 4), source="aclstore://n1", time_ns=time_ns,
        principal="User:bob", host="10.0.0.2",
        action=Action(AclOperation.READ, ResourceType.TOPIC, "orders-eu"),
        decision=by_acl, offset=12,
    ))  # fmt: skip
    odd_name = 'pay"roll\tö'
    second = encode_audit_event(audit_event(
        event_id="e2", source="aclstore://n1", time_ns=time_ns + 1_000, principal="User:eve",
        host="10.0.0.3", action=Action(AclOperation.WRITE, ResourceType.TOPIC, odd_name), decision=DENIED,
        offset=13,
    ))  # fmt: skip
    other_type = json.dumps({**json.loads(second), "id": "e3", "type": "io.example.other"}).encode()
    two_lines = json.dumps({**json.loads(second), "id": "e4"}, indent=1).encode()
    rows = decision_rows(records([first, None, b"not json", second, other_type, two_lines]))
    got = rows.to_pylist()
    assert [r["id"] for r in got] == [spool_id("0123456789abcdef", 4), "e2", "e4"]
    assert [r["auditOffset"] for r in got] == [10, 13, 15]
    assert got[0]["time"] == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    assert (got[0]["principal"], got[0]["host"], got[0]["operation"], got[0]["resourceType"],
            got[0]["resourceName"], got[0]["patternType"], got[0]["result"], got[0]["rule"],
            got[0]["aclOffset"]) == ("User:bob", "10.0.0.2", "READ", "TOPIC", "orders-eu", "LITERAL",
                                     "ALLOWED", "MATCHING_ACL", 12)  # fmt: skip
    assert json.loads(got[0]["binding"]) == {
        "resourceType": "TOPIC", "resourceName": "orders", "patternType": "PREFIXED",
        "principal": "User:bob", "host": "*", "operation": "READ", "permissionType": "ALLOW",
    }  # fmt: skip
    assert (got[1]["resourceName"], got[1]["result"], got[1]["rule"], got[1]["binding"]) == (
        odd_name, "DENIED", "DEFAULT_DENY", None)  # fmt: skip
    assert got[2]["resourceName"] == odd_name and got[2]["time"] == got[1]["time"]


def test_decision_rows_of_a_batch_of_decisions_only() -> None:
    """A batch of decision events only (no tombstone, no other type: what the job nearly always
    reads) gives the rows the same events give among a tombstone and another event type, the
    offsets aside; each binding's text is on its own decision's row, by hand."""
    binding = AclBinding.of(ResourceType.GROUP, "g-", PatternType.PREFIXED, "User:ann", "*",
                            AclOperation.READ, AclPermissionType.DENY)  # fmt: skip
    by_acl = Decision(AuthorizationResult.DENIED, DecisionRule.MATCHING_ACL, binding)

    def event(number: int, decision: Decision) -> bytes:
        return encode_audit_event(audit_event(
            event_id=f"e{number}", source="aclstore://n1", time_ns=1_700_000_000_000_000_000 + number,
            principal="User:ann", host="10.0.0.2",
            action=Action(AclOperation.READ, ResourceType.GROUP, f"g-{number}"), decision=decision, offset=3,
        ))  # fmt: skip

    other = json.dumps({**json.loads(event(9, DENIED)), "type": "io.example.other"}).encode()
    for chosen in ([by_acl, DENIED, by_acl, ALLOWED], [DENIED, ALLOWED, DENIED]):
        events: list[bytes | None] = [event(n, d) for n, d in enumerate(chosen)]
        alone = decision_rows(records(events)).to_pylist()
        among = decision_rows(records([None, *events, other])).to_pylist()
        assert [{**r, "auditOffset": r["auditOffset"] + 1} for r in alone] == among
        assert [r["id"] for r in alone] == [f"e{n}" for n in range(len(chosen))]
        named = [None if r["binding"] is None else json.loads(r["binding"]) for r in alone]
        assert named == [
            {"resourceType": "GROUP", "resourceName": "g-", "patternType": "PREFIXED",
             "principal": "User:ann", "host": "*", "operation": "READ", "permissionType": "DENY"}
            if d is by_acl else None
            for d in chosen
        ]  # fmt: skip


def test_minute_rows_count_each_key_in_the_minute_of_its_time() -> None:
    m = D.replace(minute=7)
    rows = decisions([
        ("1", m, "User:eve", "TOPIC", "a", "DENIED"),
        ("2", m + timedelta(seconds=59.999), "User:eve", "TOPIC", "a", "DENIED"),
        ("3", m + timedelta(seconds=60), "User:eve", "TOPIC", "a", "DENIED"),
        ("4", m + timedelta(seconds=5), "User:eve", "TOPIC", "a", "ALLOWED"),
        ("5", m + timedelta(seconds=5), "User:bob", "TOPIC", "a", "DENIED"),
    ])  # fmt: skip
    got = Counter({(r["minute"], r["principal"], r["result"]): r["decisions"]
                   for r in minute_rows(rows).to_pylist()})  # fmt: skip
    assert got == Counter({
        (m, "User:eve", "DENIED"): 2, (m + timedelta(minutes=1), "User:eve", "DENIED"): 1,
        (m, "User:eve", "ALLOWED"): 1, (m, "User:bob", "DENIED"): 1,
    })  # fmt: skip


def test_first_sendings_over_random_resends_match_a_replay() -> None:
    """Three spools (one numbering near 2**64), each shipped in order with random resends of
    what it sent before, interleaved with ids of another form, cut into batches: the events
    kept against a replay as plain loops."""
    rng = random.Random(11)
    starts = {"00000000000000a1": 0, "00000000000000b2": 5_000, "ffffffff00000000": 2**64 - 300}
    for _ in range(30):
        sent: list[str] = []
        shipped = dict.fromkeys(starts, 0)
        for _ in range(rng.randint(1, 200)):
            spool = rng.choice(list(starts))
            roll = rng.random()
            if roll < 0.1:
                sent.append(rng.choice(["x", "y", "z", "", "0123456789ABCDEF0123456789ABCDEF"]))
            elif roll < 0.3 and shipped[spool]:
                again = rng.randint(max(0, shipped[spool] - 5), shipped[spool] - 1)  # a resend
                sent.append(spool_id(spool, starts[spool] + again))
            else:
                sent.append(spool_id(spool, starts[spool] + shipped[spool]))
                shipped[spool] += 1
        cuts = sorted(rng.sample(range(1, len(sent)), min(3, len(sent) - 1))) if len(sent) > 1 else []
        reached: dict[str, int] = {}
        replay: dict[str, int] = {}
        for start, end in zip([0, *cuts], [*cuts, len(sent)], strict=True):
            batch = sent[start:end]
            rows = decisions([(i, D, "User:eve", "TOPIC", "t", "DENIED") for i in batch])
            kept, reached = first_sendings(rows, reached)
            expected, seen = [], set()
            for event_id in batch:
                if len(event_id) == 32 and all(c in "0123456789abcdef" for c in event_id):
                    spool, number = event_id[:16], int(event_id[16:], 16)
                    if number > replay.get(spool, -1):
                        replay[spool] = number
                        expected.append(event_id)
                elif event_id not in seen:
                    seen.add(event_id)
                    expected.append(event_id)
            assert kept["id"].to_pylist() == expected
            assert reached == replay
