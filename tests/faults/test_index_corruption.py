"""A replica's RocksDB directory damaged between two runs of its node.

The node refuses to start, naming the index directory and the fix; started again with
``--rebuild-index`` it rebuilds the index from the log, and its bindings are then exactly the
log's (the log folded from its start by a fresh reader).  Each damage is one a disk or an
operator can do: a table file overwritten in place (same size: only its checksums show it),
one cut short, the MANIFEST overwritten, CURRENT naming a file that is not there.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fault_support import ServeFailed, ServeProcess, log_state, node_bindings, topic_binding


def _tables(index: Path) -> list[Path]:
    found = sorted(index.glob("*.sst"))
    assert found, f"no table file in {index}: the damage would test nothing"
    return found


def overwrite_table_block(index: Path) -> None:
    # The largest table holds the bindings (the other column family holds a few counters):
    # its size and footer stay right, so only a read of its blocks finds the damage.
    table = max(_tables(index), key=lambda path: path.stat().st_size)
    with table.open("r+b") as f:
        f.seek(16)
        f.write(b"\xa5" * 64)


def truncate_table(index: Path) -> None:
    table = _tables(index)[0]
    with table.open("r+b") as f:
        f.truncate(table.stat().st_size // 2)


def overwrite_manifest(index: Path) -> None:
    manifest = sorted(index.glob("MANIFEST-*"))[-1]
    manifest.write_bytes(b"\x00" * manifest.stat().st_size)


def current_names_nothing(index: Path) -> None:
    (index / "CURRENT").write_text("MANIFEST-999999\n")


DAMAGES: dict[str, Callable[[Path], None]] = {
    "table overwritten": overwrite_table_block,
    "table cut short": truncate_table,
    "MANIFEST overwritten": overwrite_manifest,
    "CURRENT names nothing": current_names_nothing,
}


@pytest.fixture(scope="module")
def written(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, Path]]:
    """A topic with bindings created and deleted, and a stopped node's data dir over it whose
    index has its bindings in table files."""
    import uuid

    topic = f"corrupt-{uuid.uuid4().hex[:10]}"
    data = tmp_path_factory.mktemp("corrupt") / "node"
    node = ServeProcess(data, "--bootstrap-servers", kafka_bootstrap, "--topic", topic,
                        "--no-audit")  # fmt: skip
    try:
        node.wait_ready()
        with node.admin() as admin:
            bindings = [topic_binding(f"User:u{i}", f"orders-{i % 7}") for i in range(60)]
            admin.create_acls(bindings)
            gone = admin.delete_acls([bindings[5].to_filter()])
            assert gone.offset is not None
            admin.describe_acls(min_offset=gone.offset)  # applied by the replica
    finally:
        assert node.stop() == 0, node.stderr()
    yield kafka_bootstrap, topic, data


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_index_is_refused_then_rebuilt_from_the_log(
    written: tuple[str, str, Path], damage: str, tmp_path: Path
) -> None:
    bootstrap, topic, original = written
    data = tmp_path / "node"
    shutil.copytree(original, data)
    index = data / "index"
    DAMAGES[damage](index)
    options = ("--bootstrap-servers", bootstrap, "--topic", topic, "--no-audit")

    with pytest.raises(ServeFailed) as refused:
        ServeProcess(data, *options).stop()
    assert refused.value.code == 1
    said = refused.value.stderr
    assert str(index) in said and "--rebuild-index" in said, said
    assert "Traceback" not in said, said

    node = ServeProcess(data, *options, "--rebuild-index")
    try:
        node.wait_ready()
        expected = log_state(bootstrap, topic)
        assert len(expected.index) == 59  # 60 created, one deleted
        assert node_bindings(node) == set(expected.index)
    finally:
        assert node.stop() == 0, node.stderr()
    # Started again without the flag, the rebuilt index is kept and served.
    again = ServeProcess(data, *options)
    try:
        assert again.wait_ready()["offset"] == expected.offset
        assert node_bindings(again) == set(expected.index)
    finally:
        again.stop()
