"""ACLs as code end to end: ``aclstore export``, ``plan``, ``apply`` and ``drift`` against a
real node, on the embedded log and on a real Kafka topic.

Expectations are independent of the code under test: the live state after an apply is compared
with set algebra over what was declared and what was there; every widened or narrowed row's
witness is decided before and after by the pure decision rules over plain lists of bindings
(``reference_results``), never by the access diff that produced it; actors and offsets are the
ones the test's own writes returned."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sidecar_support import admin_client, reference_results, run_cli, start_node

import cli
from replicator.contract.bindings import binding_from_json
from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.desired import ResourcePrefix, Scope, export_text
from store.events import ConfigAltered

T, G = ResourceType.TOPIC, ResourceType.GROUP
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ADMIN = "User:admin"


def b(rt: ResourceType, name: str, principal: str, op: AclOperation, *, pt: PatternType = PatternType.LITERAL,
      perm: AclPermissionType = ALLOW, host: str = "*") -> AclBinding:  # fmt: skip
    return AclBinding.of(rt, name, pt, principal, host, op, perm)


class Flow:
    """A node and how ``drift`` reaches its log."""

    def __init__(self, node: Node, log_args: str) -> None:
        self.node, self.log_args = node, log_args

    def live(self) -> set[AclBinding]:
        with admin_client(self.node) as client:
            return set(client.describe_acls().bindings)

    def create(self, bindings: list[AclBinding]) -> int:
        with admin_client(self.node) as client:
            answer = client.create_acls(bindings)
        assert all(r.error is None for r in answer.results) and answer.offset is not None
        return answer.offset


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def flow(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Flow]:
    if request.param == "embedded":
        node = start_node(tmp_path / "node")
        args = f"--data-dir {tmp_path / 'node'}"
    else:
        bootstrap = request.getfixturevalue("kafka_bootstrap")
        topic = request.getfixturevalue("unique_topic")("gitops")
        node = start_node(tmp_path / "node", bootstrap_servers=bootstrap, topic=topic)
        args = f"--bootstrap-servers {bootstrap} --topic {topic}"
    yield Flow(node, args)
    node.stop()


ORDERS = """\
version: 1
scope:
  principals: [User:orders-app]
  resources:
    - {resourceType: TOPIC, prefix: orders.}
acls:
  - principals: [User:orders-app]
    roles: [producer]
    resources:
      - {resourceType: TOPIC, name: orders., patternType: PREFIXED}
  - principals: [User:bob]
    permission: DENY
    operations: [READ]
    resources:
      - {resourceType: TOPIC, name: orders.secret}
"""
DECLARED = {b(T, "orders.", "User:orders-app", op, pt=PatternType.PREFIXED)
            for op in (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE)} | {
    b(T, "orders.secret", "User:bob", AclOperation.READ, perm=DENY)}  # fmt: skip


def witness_flips(
    rows: list[dict[str, Any]], before: set[AclBinding], after: set[AclBinding], widened: bool
) -> None:
    for row in rows:
        w = row["witness"]
        action = [(AclOperation[w["operation"]], ResourceType[w["resourceType"]], w["resourceName"])]
        was = reference_results(before, w["principal"], w["host"], action)
        now = reference_results(after, w["principal"], w["host"], action)
        assert (was, now) == ((["DENIED"], ["ALLOWED"]) if widened else (["ALLOWED"], ["DENIED"])), row


def test_plan_apply_drift_end_to_end(flow: Flow, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = flow.node
    outside = b(G, "billing", "User:carol", AclOperation.READ)
    stray = b(T, "orders.old", "User:dave", AclOperation.READ)  # in scope by prefix, not declared
    flow.create([outside, stray])
    before = flow.live()
    path = tmp_path / "orders.yaml"
    path.write_text(ORDERS)

    code, out, err = run_cli(node, capsys, f"plan -f {path} --format json --out {tmp_path / 'p.json'}")
    assert code == 2, err
    doc = json.loads(out)  # stdout is the document alone; the log line went to stderr
    assert "plan saved" in err and doc == json.loads((tmp_path / "p.json").read_text())
    assert set(doc) == {  # the stable document a CI reads
        "kind", "formatVersion", "store", "offset", "accessJudgedAt", "files", "scope", "changes",
        "add", "remove", "widened", "narrowed", "counts",
    }  # fmt: skip
    assert (doc["kind"], doc["formatVersion"], doc["files"]) == ("aclstore.plan", 1, [str(path)])
    assert {binding_from_json(x) for x in doc["add"]} == DECLARED
    assert {binding_from_json(x) for x in doc["remove"]} == {stray}
    assert doc["offset"] == log_end(node) and doc["changes"] is True
    after = (before - {stray}) | DECLARED
    assert doc["widened"] and doc["narrowed"]
    witness_flips(doc["widened"], before, after, widened=True)
    witness_flips(doc["narrowed"], before, after, widened=False)

    code, out, err = run_cli(node, capsys, f"plan -f {path} --deny-widen")
    assert code == 1 and "--deny-widen refuses" in err and "Plan: 4 to add, 1 to remove" in out

    code, out, err = run_cli(
        node, capsys, f"apply --plan {tmp_path / 'p.json'} --format json --reference abc123"
    )
    assert code == 0, err
    applied = json.loads(out)
    assert flow.live() == after
    assert applied["recordsWritten"] == 6  # 5 bindings and the reference
    events = log_events(node, doc["offset"] + 1)
    assert {e["offset"] for e in events} <= set(range(doc["offset"] + 1, applied["offset"] + 1))
    assert {e["actor"] for e in events} == {ADMIN} and len({e["requestId"] for e in events}) == 1
    assert [e["reference"] for e in events if e["reference"] is not None] == ["abc123"]
    code, out, _ = run_cli(node, capsys, "configs --describe")
    assert code == 0 and "acl.change.reference=abc123" in out.replace(" ", ""), out

    code, out, _ = run_cli(node, capsys, f"apply -f {path}")  # twice: a no-op
    assert code == 0 and out.startswith("No changes") and flow.live() == after
    code, out, _ = run_cli(node, capsys, f"plan -f {path} --format json")
    assert code == 0 and json.loads(out)["changes"] is False

    # drift: an out-of-band grant in scope, by another actor, and a declared binding removed
    assert node.admin is not None
    node.admin.super_users = node.admin.super_users | {"User:mallory"}
    sneaked = node.admin.create_acls(
        [b(T, "orders.x", "User:eve", AclOperation.READ)], actor="User:mallory"
    ).offset
    declared = b(T, "orders.secret", "User:bob", AclOperation.READ, perm=DENY)
    removed = node.admin.delete_acls([declared.to_filter()], actor="User:mallory").offset
    code, out, err = run_cli(node, capsys, f"drift -f {path} {flow.log_args} --format json")
    assert code == 2, err
    report = json.loads(out)
    [undeclared] = report["undeclared"]
    assert (undeclared["actor"], undeclared["offset"], undeclared["reference"]) == (
        "User:mallory",
        sneaked,
        None,
    )
    [missing] = report["missing"]
    assert (missing["actor"], missing["offset"]) == (
        "User:mallory",
        removed - 1,
    )  # the AclDeleted, then its tombstone
    assert missing["declaredAt"] == f"{path}:15"
    [out_of_scope] = report["outside"]
    assert binding_from_json(out_of_scope["binding"]) == outside and out_of_scope["actor"] == ADMIN

    # the file no longer declares the producer role: its bindings, written by the apply, drift
    # with the apply's actor and reference
    path.write_text(
        ORDERS.replace("roles: [producer]", "roles: [consumer]").replace(
            "patternType: PREFIXED}",
            "patternType: PREFIXED}\n      - {resourceType: GROUP, name: orders-app}",
        )
    )
    code, out, err = run_cli(node, capsys, f"drift -f {path} {flow.log_args} --format json")
    assert code == 2, err
    produced = [d for d in json.loads(out)["undeclared"] if d["binding"]["principal"] == "User:orders-app"]
    # producer's WRITE, DESCRIBE, CREATE less consumer's READ, DESCRIBE on the topic
    assert {d["binding"]["operation"] for d in produced} == {"WRITE", "CREATE"}
    assert {(d["actor"], d["reference"]) for d in produced} == {(ADMIN, "abc123")}


def log_end(node: Node) -> int:
    """The offset of the node's state now (nothing was written since the plan)."""
    with admin_client(node) as client:
        return client.describe_acls().offset


def log_events(node: Node, since: int) -> list[dict[str, Any]]:
    """The ACL events after ``since``, read from the node's admin state's log (the one fold)."""
    from store.fold import fold_records

    assert node.admin is not None
    log = node.admin.log
    out: list[dict[str, Any]] = []
    end = log.watermarks()[1]
    offset = since
    while offset < end:
        records = log.read(offset, timeout=2.0)
        for change in fold_records(records):
            if change.event is not None:
                e = change.event
                reference = (
                    e.value if isinstance(e, ConfigAltered) and e.name == "acl.change.reference" else None
                )
                out.append({"offset": change.offset, "actor": e.actor, "requestId": e.request_id,
                            "reference": reference})  # fmt: skip
        offset = records[-1].offset + 1 if records else offset
    return out


def test_a_stale_saved_plan_is_refused_naming_who_changed_what_and_writes_nothing(
    flow: Flow, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = flow.node
    path = tmp_path / "orders.yaml"
    path.write_text(ORDERS)
    assert run_cli(node, capsys, f"plan -f {path} --out {tmp_path / 'p.json'}")[0] == 2
    assert node.admin is not None
    node.admin.super_users = node.admin.super_users | {"User:mallory"}
    sneaked = node.admin.create_acls(
        [b(T, "orders.y", "User:eve", AclOperation.READ)], actor="User:mallory"
    ).offset
    live = flow.live()
    code, out, err = run_cli(node, capsys, f"apply --plan {tmp_path / 'p.json'}")
    assert code == 1 and out == ""
    assert "User:mallory" in err and f"offset {sneaked}" in err and "orders.y" in err
    assert flow.live() == live  # nothing written


def test_export_round_trips_and_plans_no_change(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(34)
    bindings = {random_binding(rng) for _ in range(60)}
    with admin_client(node) as client:
        client.create_acls(sorted(bindings))
    code, out, err = run_cli(node, capsys, "export --principal User:p1 --resource-prefix TOPIC:a")
    assert code == 0 and "exported" in err
    scope = Scope(principals=frozenset({"User:p1"}), resource_prefixes=frozenset({ResourcePrefix(T, "a")}))
    assert (
        out.split("\n", 2)[2]
        == export_text({x for x in bindings if scope.contains(x)}, scope).split("\n", 1)[1]
    )
    (tmp_path / "e.yaml").write_text(out)
    code, out, _ = run_cli(node, capsys, f"plan -f {tmp_path / 'e.yaml'} --format json")
    assert code == 0 and json.loads(out)["changes"] is False


def random_binding(
    rng: random.Random, principals: tuple[str, ...] = ("User:p1", "User:p2", "User:*")
) -> AclBinding:
    rt = rng.choice([T, G])
    op = rng.choice([AclOperation.READ, AclOperation.DESCRIBE] + ([AclOperation.WRITE] if rt is T else []))
    return b(rt, rng.choice(["a", "ab", "b", "ba", "*"]), rng.choice(principals), op,
             pt=rng.choice([PatternType.LITERAL, PatternType.PREFIXED]) if True else PatternType.LITERAL,
             perm=rng.choice([ALLOW, ALLOW, DENY]), host=rng.choice(["*", "10.0.0.1"]))  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_plan_then_apply_gives_exactly_the_declared_state_in_scope_and_leaves_the_rest(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int
) -> None:
    rng = random.Random(seed)
    live = {random_binding(rng) for _ in range(rng.randint(0, 40))}
    if live:
        with admin_client(node) as client:
            client.create_acls(sorted(live))
    scope = Scope(
        everything=seed == 5,
        principals=frozenset(rng.sample(["User:p1", "User:p2"], rng.randint(0, 2))),
        resource_prefixes=frozenset(ResourcePrefix(rng.choice([T, G]), rng.choice(["a", "b", ""]))
                                    for _ in range(rng.randint(1, 2))),
    )  # fmt: skip
    declared = {x for x in (random_binding(rng) for _ in range(40)) if scope.contains(x)}
    path = tmp_path / "d.yaml"
    path.write_text(export_text(declared, scope))
    before = flow_live(node)
    code, out, err = run_cli(node, capsys, f"plan -f {path} --format json")
    doc = json.loads(out)
    assert code == (2 if doc["changes"] else 0), err
    after_expected = {x for x in before if not scope.contains(x)} | declared
    witness_flips(doc["widened"], before, after_expected, widened=True)
    witness_flips(doc["narrowed"], before, after_expected, widened=False)
    assert run_cli(node, capsys, f"apply -f {path}")[0] == 0
    after = flow_live(node)
    assert {x for x in after if scope.contains(x)} == declared
    assert {x for x in after if not scope.contains(x)} == {x for x in before if not scope.contains(x)}
    code, out, _ = run_cli(node, capsys, f"apply -f {path} --format json")
    assert code == 0 and json.loads(out)["applied"] is False


def flow_live(node: Node) -> set[AclBinding]:
    with admin_client(node) as client:
        return set(client.describe_acls().bindings)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("plan -f {missing}", "cannot be read"),
        ("plan -f {bad}", "bad.yaml:1: version: 2"),
        ("plan --nope", "arguments are required: -f/--file"),
        ("plan -f {bad} --nope", "unrecognized arguments"),
        ("apply", "give the desired-state files"),
    ],
)
def test_errors_exit_1_never_2(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, says: str
) -> None:
    (tmp_path / "bad.yaml").write_text(ORDERS.replace("version: 1", "version: 2"))
    words = line.format(missing=tmp_path / "none.yaml", bad=tmp_path / "bad.yaml")
    try:
        code, out, err = run_cli(node, capsys, words)
    except SystemExit as exc:
        code = int(exc.code or 0)
        out, err = capsys.readouterr()
    assert code == 1 and out == "" and says in err


@pytest.mark.parametrize("seed", range(3))
def test_the_node_lists_exactly_a_scope(node: Node, seed: int) -> None:
    rng = random.Random(100 + seed)
    bindings = {random_binding(rng) for _ in range(80)}
    scope = Scope(
        principals=frozenset(rng.sample(["User:p1", "User:p2", "User:*"], rng.randint(0, 2))),
        resource_prefixes=frozenset({ResourcePrefix(rng.choice([T, G]), rng.choice(["a", "b", ""]))}),
    )
    with admin_client(node) as client:
        client.create_acls(sorted(bindings))
        listing = client.list_acls(scope=scope)
        listed = {
            AclBinding.of(ResourceType[r.resource_type], r.name, PatternType[r.pattern_type], p, h,
                          AclOperation[o], AclPermissionType[q])
            for r in listing for p, h, o, q in r.acls
        }  # fmt: skip
    assert listed == {x for x in bindings if scope.contains(x)}


def test_concurrent_guarded_applies_through_the_node_write_once(node: Node) -> None:
    """Eight writers, one plan offset, racing through the node's HTTP API: the node checks and
    writes under one lock, so exactly one batch lands; the others are refused with 409."""
    import threading

    from replicator.client import StoreClientError

    scope = Scope(resource_prefixes=frozenset({ResourcePrefix(T, "orders.")}))
    with admin_client(node) as client:
        planned = client.describe_acls().offset
    barrier, outcomes = threading.Barrier(8), []

    def apply(i: int) -> None:
        with admin_client(node) as client:
            barrier.wait()
            try:
                client.alter_acls(creates=[b(T, f"orders.{i}", "User:app", AclOperation.READ)], scope=scope,
                                  if_scope_unchanged_since=planned)  # fmt: skip
                outcomes.append(200)
            except StoreClientError as exc:
                outcomes.append(exc.status)

    threads = [threading.Thread(target=apply, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [200] + [409] * 7
    assert len([x for x in flow_live(node) if scope.contains(x)]) == 1


def test_a_wrong_guess_of_the_scope_is_dropped(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """plan lists the scope it reads ahead while the rest of the file is read; a guess the
    whole file contradicts is never used (here: one that owns everything)."""
    import cli.gitops

    flow = Flow(node, "")
    flow.create(
        [b(T, "orders.old", "User:dave", AclOperation.READ), b(G, "billing", "User:carol", AclOperation.READ)]
    )
    path = tmp_path / "orders.yaml"
    path.write_text(ORDERS)
    code, out, _ = run_cli(node, capsys, f"plan -f {path} --format json")
    right = json.loads(out)
    monkeypatch.setattr(cli.gitops, "scope_ahead", lambda text, source: Scope(everything=True))
    code2, out, _ = run_cli(node, capsys, f"plan -f {path} --format json")
    guessed = json.loads(out)
    assert code == code2 == 2
    assert (guessed["add"], guessed["remove"], guessed["scope"]) == (
        right["add"],
        right["remove"],
        right["scope"],
    )
    assert {binding_from_json(x) for x in guessed["remove"]} == {
        b(T, "orders.old", "User:dave", AclOperation.READ)
    }


def test_plan_against_another_node_compares_the_files_with_its_acls(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Promotion: the files applied to one node (staging) plan no change there, and plan
    their ACLs as additions against another node (production, empty) named by --against."""
    other = start_node(tmp_path / "other")
    try:
        (tmp_path / "orders.yaml").write_text(ORDERS)
        assert run_cli(node, capsys, f"apply -f {tmp_path / 'orders.yaml'}")[0] == 0
        code, out, _ = run_cli(node, capsys, f"plan -f {tmp_path / 'orders.yaml'} --format json")
        assert code == 0 and json.loads(out)["changes"] is False
        assert other.info is not None
        against = f"--against {other.url} --command-config {other.info.credential.properties_path}"
        words = ["plan", "-f", str(tmp_path / "orders.yaml"), "--format", "json", *against.split()]
        code = cli.main(words)
        document = json.loads(capsys.readouterr().out)
        assert code == 2 and document["changes"] is True and not document["remove"]
        assert document["store"] == other.url
        with admin_client(node) as client:
            live = set(client.describe_acls().bindings)
        assert {binding_from_json(x) for x in document["add"]} == live
    finally:
        other.stop()
