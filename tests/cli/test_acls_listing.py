"""``aclstore acls --list`` streamed, against the output of the whole answer formatted at once.

The reference is what ``--list`` printed before the listing was streamed: every filter's
bindings described, deduplicated, sorted, then formatted by :mod:`cli.acl_command`
(``resource_acls_text`` of ``group_by_pattern``; for ``--format json`` the API's binding JSON,
``json.dumps(indent=2, ensure_ascii=False)``).  The bindings it formats are the ones this test
created, selected with Kafka's filter semantics (``AclBindingFilter.matches``), not read back.
The writers are also checked alone, on random sets split into random pieces.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from sidecar_support import admin_client, start_node

import cli
from cli import acl_command as ac
from cli.acl_listing import write_bindings_json, write_resource_acls
from replicator.contract.bindings import binding_json
from replicator.contract.listing import ListedAcls
from replicator.server.node import Node
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.unit

NAMES = ["orders", "orders-", "ord", "*", "team1.", "team1.app", "t\u00e9", "\ue000x", "\U0001f600",
         "a\"b", "back\\slash", "tab\there", "kafka-cluster"]  # fmt: skip
PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:ops", "User:\u00e9l\u00e8ve", "User:\U0001f600"]
HOSTS = ["*", "10.0.0.1", "::1"]
OPERATIONS = [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL]


def random_bindings(rng: random.Random, count: int) -> list[AclBinding]:
    found: dict[AclBinding, None] = {}
    while len(found) < count:
        rt = rng.choice([ResourceType.TOPIC, ResourceType.TOPIC, ResourceType.GROUP,
                         ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER])  # fmt: skip
        name = "kafka-cluster" if rt is ResourceType.CLUSTER else rng.choice(NAMES)
        pt = PatternType.LITERAL if rt is ResourceType.CLUSTER or rng.random() < 0.7 else PatternType.PREFIXED
        op = rng.choice(OPERATIONS) if rt is not ResourceType.TRANSACTIONAL_ID else AclOperation.WRITE
        if rt is ResourceType.CLUSTER:
            op = rng.choice([AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.ALL])
        perm = AclPermissionType.DENY if rng.random() < 0.2 else AclPermissionType.ALLOW
        found[AclBinding.of(rt, name, pt, rng.choice(PRINCIPALS), rng.choice(HOSTS), op, perm)] = None
    return list(found)


def whole_answer_output(bindings: Sequence[AclBinding], args: Sequence[str], offset: int) -> str:
    """What ``--list`` printed from whole answers: ``_acls_list`` before streaming."""
    options = cli.build_parser().parse_args(["acls", "--list", *args])
    from cli.acls import _acl_options

    parsed = _acl_options(options)
    filters = ac.list_filters(parsed)
    principals = ac.list_principals(parsed)
    found = sorted({b for b in bindings if any(f.matches(b) for f in filters)})
    if options.format == "json":
        shown = [b for b in found if not principals or b.principal in principals]
        value = {"bindings": [binding_json(b) for b in shown], "offset": offset}
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    out = io.StringIO()
    if not principals:
        text = ac.resource_acls_text(ac.group_by_pattern(found))
        if text:
            print(text, file=out)
    for principal in principals:
        print(f"ACLs for principal `{principal}`", file=out)
        text = ac.resource_acls_text(ac.group_by_pattern(b for b in found if b.principal == principal))
        if text:
            print(text, file=out)
    return out.getvalue()


def pieces(bindings: Sequence[AclBinding], rng: random.Random) -> Iterator[ListedAcls]:
    """Sorted bindings as a listing's resources, each pattern cut into random pieces."""
    run: list[AclBinding] = []
    for b in [*sorted(bindings), None]:
        if run and (b is None or b.pattern != run[0].pattern or rng.random() < 0.3):
            p = run[0]
            rows = [[x.principal, x.host, x.operation.name, x.permission_type.name] for x in run]
            yield ListedAcls(p.resource_type.name, p.name, p.pattern_type.name, rows)  # type: ignore[arg-type]
            run = []
        if b is not None:
            run.append(b)


@pytest.mark.parametrize("seed", range(6))
def test_the_writers_print_what_the_whole_answer_printed(seed: int) -> None:
    rng = random.Random(seed)
    bindings = random_bindings(rng, rng.choice([0, 1, 5, 300]))
    text = io.StringIO()
    write_resource_acls(pieces(bindings, rng), text)
    assert text.getvalue() == whole_answer_output(bindings, [], 0)
    document = io.StringIO()
    write_bindings_json(pieces(bindings, rng), document, lambda: seed)
    assert document.getvalue() == whole_answer_output(bindings, ["--format", "json"], seed)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, list[AclBinding], int]]:
    node = start_node(tmp_path_factory.mktemp("listing") / "node")
    bindings = random_bindings(random.Random(42), 1500)
    with admin_client(node) as client:
        for start in range(0, len(bindings), 500):
            answer = client.create_acls(bindings[start : start + 500])
            assert not [r for r in answer.results if r.error is not None]
    assert answer.offset is not None
    yield node, bindings, answer.offset
    node.stop()


COMMAND_LINES = [
    [],
    ["--topic", "orders"],
    ["--topic", "orders", "--group", "ord", "--topic", "*"],
    ["--topic", "orders-x", "--resource-pattern-type", "match"],
    ["--topic", "team1.app", "--resource-pattern-type", "match", "--topic", "orders",
     "--resource-pattern-type", "any"],
    ["--resource-pattern-type", "prefixed"],
    ["--principal", "User:alice"],
    ["--principal", "User:\U0001f600", "--principal", "User:nobody", "--principal", "Group:ops"],
    ["--topic", "*", "--resource-pattern-type", "match", "--principal", "User:bob"],
    ["--cluster"],
    ["--transactional-id", "ord", "--resource-pattern-type", "prefixed"],
    ["--topic", "nothing-here"],
]  # fmt: skip


@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("args", COMMAND_LINES, ids=lambda a: " ".join(a) or "all")
def test_a_streamed_list_prints_what_the_whole_answer_printed(
    loaded: tuple[Node, list[AclBinding], int], args: list[str], fmt: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    node, bindings, offset = loaded
    assert node.info is not None
    admin = str(node.info.credential.properties_path)
    argv = [*args, "--format", fmt] if fmt == "json" else args
    code = cli.main(["acls", "--store", node.url, "--command-config", admin, "--list", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == whole_answer_output(bindings, argv, offset)
    if fmt == "table":
        assert err == f"(log offset {offset})\n"


Run = Callable[..., str]


def test_a_listing_follows_the_writes_acknowledged_before_it(tmp_path: Path) -> None:
    node = start_node(tmp_path / "node")
    try:
        with admin_client(node) as client:
            for i in range(20):
                binding = AclBinding.of(
                    ResourceType.TOPIC, f"t{i}", PatternType.LITERAL, "User:a", "*",
                    AclOperation.READ, AclPermissionType.ALLOW,
                )  # fmt: skip
                written = client.create_acls([binding]).offset
                listing = client.list_acls()
                listed = [r.name for r in listing]
                assert listing.offset is not None and written is not None
                assert listing.offset >= written and f"t{i}" in listed
    finally:
        node.stop()
