"""A node answers dry runs and downgrade checks from its own index (``/v1/acls/dry-run``,
``/v1/format/downgrade-check``): the same rows as the pure engine
(``compact(access_diff(before, after))``) on the same state, built here from the bindings the
test wrote, and the same bindings added, removed and ignored as worked out here; in the node
(a small change) and in the worker process (``*``, or any change with the in-process limit
at 0) alike."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from sidecar_support import ADMIN, admin_client, create_acls, start_node

from replicator.access.analyst import AccessAnalyst
from replicator.client import StoreClient, StoreClientError
from replicator.contract.access import (
    DowngradeCheckAnswer,
    DowngradeCheckRequest,
    DryRunAnswer,
    DryRunRequest,
)
from replicator.server.node import Node
from store.access_diff import AccessDiff, AclState, access_diff, compact, older_reader_state
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.downgrade import analyse_downgrade, downgrade_refusal
from store.settings import StoreSettings

pytestmark = pytest.mark.unit

NAMES = ["a", "ab", "abc", "abd", "b", "ba", "topic-1", "topic-10", "é", "é1"]


def random_binding(rng: random.Random) -> AclBinding:
    literal_star = rng.random() < 0.05
    return AclBinding.of(
        rng.choice([ResourceType.TOPIC, ResourceType.GROUP]),
        "*" if literal_star else rng.choice(NAMES),
        PatternType.LITERAL if literal_star or rng.random() < 0.6 else PatternType.PREFIXED,
        rng.choice(["User:alice", "User:bob", "User:*"]), rng.choice(["*", "10.0.0.1"]),
        rng.choice([AclOperation.READ, AclOperation.WRITE, AclOperation.ALL, AclOperation.DESCRIBE]),
        AclPermissionType.DENY if rng.random() < 0.3 else AclPermissionType.ALLOW,
    )  # fmt: skip


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[tuple[Node, StoreClient, AclState]]:
    node = start_node(tmp_path / "node", audit=None)
    client = admin_client(node)
    rng = random.Random(7)
    bindings = {random_binding(rng) for _ in range(120)}
    create_acls(client, sorted(bindings))
    client.alter_configs({"super.users": "User:root"})
    try:
        yield node, client, AclState.of(bindings, ["User:root"])
    finally:
        client.close()
        node.stop()


def rows(diff: AccessDiff) -> tuple[set[object], set[object]]:
    return set(diff.widened), set(diff.narrowed)


def test_downgrade_checks_are_the_pure_engines(filled: tuple[Node, StoreClient, AclState]) -> None:
    _, client, state = filled
    for version in (1, 2, 3):
        older, stopping = older_reader_state(state, version)
        expected = compact(access_diff(state, older))
        answer = client.downgrade_check(version)
        assert rows(AccessDiff(tuple(answer.widened), tuple(answer.narrowed))) == rows(expected)
        assert answer.ignored == sorted(state.bindings - older.bindings)
        assert answer.stopping == stopping and answer.safe == (not expected.widened)
    assert client.downgrade_check(1).ignored  # the PREFIXED ones: the check is not vacuous
    walk = client.analysis_progress()  # the last walk, as the worker told it
    assert not walk.running and walk.question == "downgrade_check"
    assert walk.read == walk.total == len(state.bindings)


def _expected(state: AclState, creates: list[AclBinding], deletes: list[AclBindingFilter]) -> DryRunAnswer:
    added = sorted(set(creates) - state.bindings)
    removed = sorted(b for b in state.bindings if any(f.matches(b) for f in deletes))
    after = AclState((state.bindings | set(added)) - set(removed), state.super_users)
    diff = compact(access_diff(state, after))
    return DryRunAnswer(added=added, removed=removed, widened=list(diff.widened),
                        narrowed=list(diff.narrowed), offset=0)  # fmt: skip


def _same(got: DryRunAnswer, want: DryRunAnswer) -> None:
    assert (got.added, got.removed) == (want.added, want.removed)
    assert set(got.widened) == set(want.widened) and set(got.narrowed) == set(want.narrowed)
    assert len(got.widened) == len(want.widened) and len(got.narrowed) == len(want.narrowed)


def test_dry_runs_in_the_node_and_in_the_worker_are_the_pure_engines(
    filled: tuple[Node, StoreClient, AclState],
) -> None:
    node, client, state = filled
    assert node.replica is not None and node.admin is not None
    in_worker = AccessAnalyst(node.replica.index, node.admin.sync, in_process_limit=0)
    rng = random.Random(8)
    live = sorted(state.bindings)
    star_deny = AclBinding.of(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:bob", "*",
                              AclOperation.READ, AclPermissionType.DENY)  # fmt: skip
    cases: list[tuple[list[AclBinding], list[AclBindingFilter]]] = [
        ([star_deny], []),
        ([live[0], random_binding(rng)], []),
        ([], [AclBindingFilter(pattern_filter=live[3].pattern.to_filter())]),
    ]
    for _ in range(6):
        creates = [random_binding(rng) for _ in range(rng.randrange(3))] + rng.sample(live, 1)
        deletes = [b.to_filter() for b in rng.sample(live, rng.randrange(3))]
        cases.append((creates, deletes))
    changed_something = False
    for creates, deletes in cases:
        want = _expected(state, creates, deletes)
        got = client.dry_run_acls(creates=creates, deletes=deletes)
        _same(got, want)
        worker = in_worker.dry_run(DryRunRequest(creates=list(creates), deletes=deletes))
        if not (want.added or want.removed):  # nothing to judge: answered in the node
            continue
        assert isinstance(worker, bytes)  # the worker answered
        _same(DryRunAnswer.from_json(json.loads(worker)), want)
        changed_something |= bool(want.widened or want.narrowed)
    assert changed_something


def test_a_dry_run_needs_a_change_and_describe_on_the_cluster(
    filled: tuple[Node, StoreClient, AclState],
) -> None:
    _, client, _ = filled
    with pytest.raises(Exception, match="a dry run needs creates or deletes"):
        client.dry_run_acls()
    with pytest.raises(Exception, match="must be an event format"):
        client.call("POST", "/v1/format/downgrade-check", {"to": 0})


def test_the_nodes_format_gate_refuses_as_the_in_process_gate(
    filled: tuple[Node, StoreClient, AclState],
) -> None:
    """The node's gate (the node asks its worker) against :func:`store.downgrade` run here
    on the same state: both refuse, naming the same number of ignored bindings."""
    _, client, state = filled
    settings = StoreSettings({"super.users": "User:root"})
    here = downgrade_refusal(analyse_downgrade(state.bindings, settings, 1, local_super_users=[ADMIN]))
    assert here is not None
    with pytest.raises(StoreClientError) as refused:
        client.alter_configs({"acl.format.version": "1"})
    ignored = len(older_reader_state(state, 1)[0].bindings ^ state.bindings)
    assert f"ignores {ignored} live binding(s)" in refused.value.message
    assert type(here).__name__ == refused.value.error


def test_a_downgrade_check_walked_in_parts_by_several_processes_is_the_pure_engines(
    filled: tuple[Node, StoreClient, AclState],
) -> None:
    """The worker's walk in parts of 5 bindings by more processes: the same rows as the
    pure engine, and the ignored bindings in DescribeAcls order, at formats 1 and 2 (whose
    readers miss the log's ``super.users``: the root's rows change too) and 3; the format
    gate's verdict counts as the in-process gate's."""
    node, _, state = filled
    assert node.replica is not None and node.admin is not None
    # three: the gate leaves one core to decisions, and walks with two
    parted = AccessAnalyst(node.replica.index, node.admin.sync, processes=3, part_size=5)
    root_rows = 0
    for version in (1, 2, 3):
        older, stopping = older_reader_state(state, version)
        expected = compact(access_diff(state, older))
        summary, body = parted.downgrade_check(DowngradeCheckRequest(to=version))
        answer = DowngradeCheckAnswer.from_json(json.loads(body))
        assert summary == {"safe": answer.safe, "stopping": answer.stopping, "offset": answer.offset}
        assert rows(AccessDiff(tuple(answer.widened), tuple(answer.narrowed))) == rows(expected)
        assert len(answer.widened) + len(answer.narrowed) == len(expected.widened) + len(expected.narrowed)
        assert answer.ignored == sorted(state.bindings - older.bindings)
        assert answer.stopping == stopping and answer.safe == (not expected.widened)
        root_rows += sum(r.names.name == "" for r in (*expected.widened, *expected.narrowed))
        walk = parted.progress()
        assert not walk.running and walk.read == walk.total == len(state.bindings)
    assert root_rows  # User:root's access everywhere: rows the parts held for the root's
    verdict = parted.format_gate(1, node.admin.sync(), [ADMIN])
    here = analyse_downgrade(state.bindings, StoreSettings({"super.users": "User:root"}), 1,
                             local_super_users=[ADMIN])  # fmt: skip
    widened = compact(here.diff).widened
    assert (verdict.ignored, verdict.widened) == (len(here.ignored), len(widened))
    refusal = downgrade_refusal(here)
    assert verdict.refusal is not None and refusal is not None
    assert type(verdict.refusal) is type(refusal)
