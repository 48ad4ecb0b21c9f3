"""The Safety page's and the guard's pure parts: a downgrade answer's body indexed by list and
read a page at a time, the previewed scope, the guarded change's request."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from replicator.access.parallel import DowngradeDocument
from replicator.contract.access import DowngradeCheckAnswer
from replicator.contract.fields import BadRequestError
from replicator.server.console.guard import guarded_change, previewed_scope
from replicator.server.console.spool import LISTS, SpooledAnswer, index_body
from store.access_diff import AclState, change_diff, older_reader_state
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.unit


def _binding(name: str, principal: str, pattern: PatternType = PatternType.LITERAL,
             permission: AclPermissionType = AclPermissionType.ALLOW,
             resource_type: ResourceType = ResourceType.TOPIC) -> AclBinding:  # fmt: skip
    return AclBinding.of(resource_type, name, pattern, principal, "*", AclOperation.READ, permission)


def _body(bindings: list[AclBinding], to: int) -> tuple[bytes, DowngradeCheckAnswer]:
    """The body the node writes for the downgrade check of ``bindings`` (the access diff of the
    pure engine, written as the node's worker writes it), and the answer it holds."""
    now = AclState.of(bindings, frozenset(), False)
    then, stopping = older_reader_state(now, to)
    diff = change_diff(now, then)
    answer = DowngradeCheckAnswer(
        safe=not diff.widened, to=to, ignored=sorted(now.bindings - then.bindings), stopping=stopping,
        widened=list(diff.widened), narrowed=list(diff.narrowed), offset=41,
    )  # fmt: skip
    out = io.BytesIO()
    DowngradeDocument.of_answer(answer).write(out)
    return out.getvalue(), answer


def _unsafe() -> list[AclBinding]:
    return [
        _binding("*", "User:*"),
        *(_binding(f"s{i}-", f"User:u{i}", PatternType.PREFIXED, AclPermissionType.DENY) for i in range(7)),
    ]


@pytest.mark.parametrize("bindings", [_unsafe(), [_binding("orders", "User:alice")], []])
def test_the_body_is_read_back_a_page_at_a_time(bindings: list[AclBinding], tmp_path: Path) -> None:
    body, answer = _body(bindings, to=1)
    whole = json.loads(body)  # the independent reading: the body parsed whole
    spooled = SpooledAnswer(body, str(tmp_path))
    try:
        assert spooled.counts() == {name: len(whole[name]) for name in LISTS}
        for name in LISTS:
            for limit in (1, 3, 100):
                read: list[object] = []
                skip = 0
                while True:
                    page = spooled.page(name, skip, limit)
                    assert page.total == len(whole[name])
                    if not page.items:
                        break
                    read += page.items
                    skip += len(page.items)
                assert read == whole[name], (name, limit)
        with pytest.raises(BadRequestError, match="list 'other'"):
            spooled.page("other", 0, 1)
    finally:
        spooled.close()
    assert not Path(spooled.path).exists()
    if bindings == _unsafe():  # hand-worked: the 7 DENYs are ignored, each reopens its prefix
        assert len(whole["ignored"]) == 7 and not answer.safe and len(whole["widened"]) >= 7


def test_an_item_outside_every_list_is_refused() -> None:
    with pytest.raises(ValueError, match="outside every list"):
        index_body(b'{"safe":true,"to":1,"ignored":[],"stopping":0\n{"x":1}\n')


def test_the_previewed_scope_holds_every_pattern_that_decides_the_name() -> None:
    change = _binding("payments", "User:dave")
    scope = previewed_scope(change)
    deciding = [
        _binding("payments", "User:x"), _binding("*", "User:y"),
        _binding("pay", "User:z", PatternType.PREFIXED, AclPermissionType.DENY),
        _binding("p", "User:z", PatternType.PREFIXED),
    ]  # fmt: skip
    assert all(scope.contains(b) for b in deciding)
    group = _binding("payments", "User:x", resource_type=ResourceType.GROUP)
    unrelated = [_binding("orders", "User:x"), group]
    assert not any(scope.contains(b) for b in unrelated)


def test_the_guarded_change_carries_the_preview_offset() -> None:
    row = {"resourceType": "TOPIC", "resourceName": "payments", "patternType": "LITERAL",
           "principal": "User:dave", "host": "*", "operation": "WRITE",
           "permissionType": "ALLOW"}  # fmt: skip
    add = guarded_change({"action": "add", "binding": row, "previewOffset": 12})
    assert add["creates"][0]["principal"] == "User:dave" and "deletes" not in add
    assert add["ifScopeUnchangedSince"] == 12 and add["scope"]
    remove = guarded_change({"action": "remove", "binding": row, "previewOffset": 12})
    assert remove["deletes"][0]["resourceName"] == "payments" and "creates" not in remove
    with pytest.raises(BadRequestError, match="previewOffset"):
        guarded_change({"action": "add", "binding": row})
    with pytest.raises(BadRequestError, match="action"):
        guarded_change({"action": "alter", "binding": row, "previewOffset": 1})
