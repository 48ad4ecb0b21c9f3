"""``aclstore import``: a bulk load of the bindings ``acls --list --format json`` prints.

The reading is checked against ``json.loads`` on random files cut into random chunks; the
command against real nodes on the embedded log: a listing moved from one node to another gives
the same listing, a second import writes nothing, a bad binding stops the load at a line the
error names with everything before it in the store, and running the command again resumes.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sidecar_support import run_cli, start_node

from cli.present.binding_stream import BindingFileError, binding_items
from replicator.server.node import Node
from store.log.embedded import EmbeddedChangeLog

ROOT = Path(__file__).resolve().parents[2]

NAMES = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
BINDINGS = st.fixed_dictionaries({
    "resourceType": st.sampled_from(["TOPIC", "GROUP"]), "resourceName": NAMES,
    "patternType": st.sampled_from(["LITERAL", "PREFIXED"]), "principal": NAMES.map("User:{}".format),
    "host": st.just("*"), "operation": st.sampled_from(["READ", "WRITE"]),
    "permissionType": st.sampled_from(["ALLOW", "DENY"]),
})  # fmt: skip


def _chunked(text: str, sizes: list[int]) -> list[str]:
    out, at, i = [], 0, 0
    while at < len(text):
        size = sizes[i % len(sizes)] if sizes else len(text)
        out.append(text[at : at + size])
        at, i = at + size, i + 1
    return out


def _shapes(bindings: list[dict[str, Any]], offset: int) -> list[str]:
    return [
        json.dumps({"bindings": bindings, "offset": offset}, indent=2, ensure_ascii=False),
        json.dumps({"offset": offset, "bindings": bindings}),
        json.dumps(bindings),
        "".join(json.dumps(b) + "\n" for b in bindings),
    ]


@settings(max_examples=150)
@given(st.lists(BINDINGS, max_size=12), st.lists(st.integers(1, 40), max_size=6), st.integers(0, 99))
def test_every_shape_in_any_chunks_reads_as_json_loads_does(
    bindings: list[dict[str, Any]], sizes: list[int], offset: int
) -> None:
    for text in _shapes(bindings, offset):
        items = list(binding_items(_chunked(text, sizes), "f.json"))
        assert [i.value for i in items] == bindings
        assert [i.number for i in items] == list(range(1, len(bindings) + 1))
        lines = text.split("\n")  # the lines an editor shows (not splitlines' separators)
        for item in items:  # the line each item starts on holds its opening brace
            assert "{" in lines[item.line - 1]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('{"bindings": [\n  {"a": 1},\n  {"b": 2\n', 3, "cut short"),
        ('[\n{"a": 1}\n{"b": 2}]', 3, "expected ',' or ']' after binding #1"),
        ('{"offset": 3}', 1, 'no "bindings"'),
        ("\n\nhello", 3, "found 'h'"),
        ('[{"a": 1}]\n]', 2, "unexpected ']'"),
        ('{"a": 1}\n{"b": tru}', 2, "Expecting value"),
    ],
)
def test_a_file_that_is_not_bindings_is_refused_at_its_line(text: str, line: int, words: str) -> None:
    for chunks in (_chunked(text, [2]), [text]):
        with pytest.raises(BindingFileError) as caught:
            list(binding_items(chunks, "f.json"))
        assert f"f.json, line {line}" in caught.value.message and words in caught.value.message


def _listing(node: Node, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, _ = run_cli(node, capsys, "acls --list --format json")
    assert code == 0
    return list(json.loads(out)["bindings"])


def _log_end(node: Node) -> int:
    with EmbeddedChangeLog(node.settings.data_dir / "log") as log:
        return log.watermarks()[1]


@pytest.fixture
def source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    node = start_node(tmp_path / "source")
    rng = random.Random(5)
    try:
        for i in range(40):
            kind = rng.choice(["--topic", "--group"])
            pattern = "prefixed" if i % 4 == 0 else "literal"
            verb = "--deny-principal" if i % 7 == 0 else "--allow-principal"
            operation = rng.choice(["Read", "Write"]) if kind == "--topic" else "Read"
            line = (f"acls --add {verb} User:svc-{i % 6} --operation {operation} "
                    f"{kind} name-{i} --resource-pattern-type {pattern}")  # fmt: skip
            assert run_cli(node, capsys, line)[0] == 0
        yield node
    finally:
        node.stop()


def test_a_listing_moves_to_another_node_and_loads_once(
    source: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = _listing(source, capsys)
    assert len(listed) == 40
    path = tmp_path / "acls.json"
    code, out, _ = run_cli(source, capsys, "acls --list --format json")
    path.write_text(out, encoding="utf-8")
    target = start_node(tmp_path / "target")
    try:
        code, out, err = run_cli(target, capsys, f"import {path} --batch 7 --format json")
        assert code == 0 and err == "", err  # stderr is not a terminal: no progress
        summary = json.loads(out)
        assert summary["bindings"] == 40 and summary["recordsWritten"] == 40
        assert summary["requests"] == 6  # 7 + 7 + 7 + 7 + 7 + 5
        assert summary["offset"] == _log_end(target) - 1
        assert _listing(target, capsys) == listed
        # Again: every binding is there already; nothing is written.
        end = _log_end(target)
        code, out, _ = run_cli(target, capsys, f"import {path}")
        assert code == 0 and "imported 40 binding(s)" in out and ": 0 new, 40 already there" in out
        assert _log_end(target) == end
    finally:
        target.stop()


def test_a_bad_binding_stops_the_load_at_its_line_and_the_same_command_resumes(
    source: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = _listing(source, capsys)
    bad = [*listed[:25], dict(listed[25], operation="REED"), *listed[26:]]
    path = tmp_path / "acls.jsonl"
    path.write_text("".join(json.dumps(b) + "\n" for b in bad), encoding="utf-8")
    target = start_node(tmp_path / "target")
    try:
        code, out, err = run_cli(target, capsys, f"import {path} --batch 10")
        assert code == 2 and out == ""
        assert f"{path}, line 26 (binding #26)" in err and "REED" in err
        assert "the 20 binding(s) before it are in the store" in err  # two requests of 10
        assert "run the same command again once it is fixed" in err
        assert _listing(target, capsys) == sorted_like(listed[:20], listed)
        path.write_text("".join(json.dumps(b) + "\n" for b in listed), encoding="utf-8")
        code, out, _ = run_cli(target, capsys, f"import {path} --batch 10")
        assert code == 0 and ": 20 new, 20 already there" in out
        assert _listing(target, capsys) == listed
    finally:
        target.stop()


def sorted_like(subset: list[dict[str, Any]], order: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``subset`` in the order ``order`` (a listing: DescribeAcls order) has them."""
    keys = [json.dumps(b, sort_keys=True) for b in subset]
    return [b for b in order if json.dumps(b, sort_keys=True) in keys]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_and_stdin_through_the_console_script(
    source: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, listing, _ = run_cli(source, capsys, "acls --list --format json")
    path = tmp_path / "acls.json"
    path.write_text(listing, encoding="utf-8")
    target = start_node(tmp_path / "target")
    try:
        terminal = _Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        code, _, _ = run_cli(target, capsys, f"import {path} --batch 15")
        monkeypatch.undo()
        assert code == 0
        shown = terminal.getvalue()
        assert shown.endswith("\n") and "import: 40 bindings" in shown.split("\r")[-1]
        assert "import: 15 bindings" in shown and "% of the file" in shown
        # The same listing on stdin of the console script, into a third node.
        third = start_node(tmp_path / "third")
        try:
            assert third.info is not None
            done = subprocess.run(
                [sys.executable, "-m", "cli", "import", "-", "--store", third.url,
                 "--command-config", str(third.info.credential.properties_path)],
                input=listing, capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert "imported 40 binding(s) from stdin" in done.stdout and done.stderr == ""
            assert _listing(third, capsys) == _listing(source, capsys)
        finally:
            third.stop()
    finally:
        target.stop()
