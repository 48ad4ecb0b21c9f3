"""The audit spool on a real directory: resume after a restart, torn tails, rolling, the bound.

Each "restart" is a new :class:`Spool` over the same directory, as a restarted node opens it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator.server.audit import AuditSpoolError, Position, Spool
from replicator.server.audit.spool import POSITION_FILE, SEGMENT_SUFFIX, SpoolReader

pytestmark = pytest.mark.unit


def body(*names: str) -> bytes:
    return ",".join(names).encode()


def append(spool: Spool, *names: str) -> int:
    """One request's events, named; the trimmed body keeps the first n names."""
    return spool.append(len(names), body(*names), lambda n: body(*names[:n]))


def bodies(spool: Spool, max_events: int = 1000) -> tuple[list[bytes], Position]:
    lines, after = spool.read(spool.shipped, max_events)
    return [line.body for line in lines], after


def test_a_restart_resumes_after_the_shipped_position(tmp_path: Path) -> None:
    spool = Spool(tmp_path, capacity=100, segment_bytes=1 << 20)
    append(spool, "a", "b")
    append(spool, "c")
    lines, after = spool.read(spool.shipped, 2)  # the first line: 2 events
    assert [(line.seq, line.count, line.body) for line in lines] == [(0, 2, b"a,b")]
    spool.commit(after)
    append(spool, "d", "e", "f")
    assert spool.backlog == 4
    spool.close()

    again = Spool(tmp_path, capacity=100, segment_bytes=1 << 20)
    assert (again.backlog, again.next_seq, again.spool_id) == (4, 6, spool.spool_id)
    lines, _ = again.read(again.shipped, 1000)
    assert [(line.seq, line.count, line.body) for line in lines] == [(2, 1, b"c"), (3, 3, b"d,e,f")]
    # Not committed: a second restart reads the same lines again (same numbers, same ids).
    again.close()
    third = Spool(tmp_path, capacity=100, segment_bytes=1 << 20)
    assert [line.seq for line in third.read(third.shipped, 1000)[0]] == [2, 3]
    third.close()


def test_a_torn_last_line_is_cut_off_and_numbering_continues(tmp_path: Path) -> None:
    spool = Spool(tmp_path, capacity=100, segment_bytes=1 << 20)
    append(spool, "a")
    append(spool, "b", "c")
    spool.close()
    (segment,) = tmp_path.glob(f"*{SEGMENT_SUFFIX}")
    with segment.open("ab") as f:
        f.write(b"3 2 d,")  # a prefix of a line: power lost mid-write
    again = Spool(tmp_path, capacity=100, segment_bytes=1 << 20)
    assert again.next_seq == 3
    append(again, "x")
    assert bodies(again)[0] == [b"a", b"b,c", b"x"]
    assert segment.read_bytes().endswith(b"3 1 x\n")
    again.close()


def test_segments_roll_and_shipped_ones_are_removed(tmp_path: Path) -> None:
    spool = Spool(tmp_path, capacity=1000, segment_bytes=20)
    for i in range(10):
        append(spool, f"event-{i}")  # each line is about 12 bytes: a segment every 2 lines
    names = sorted(p.name for p in tmp_path.glob(f"*{SEGMENT_SUFFIX}"))
    assert names[:3] == [f"{n:020d}{SEGMENT_SUFFIX}" for n in (0, 2, 4)]
    read, after = bodies(spool, 5)
    assert read == [f"event-{i}".encode() for i in range(5)]
    spool.commit(after)
    left = sorted(int(p.name[:20]) for p in tmp_path.glob(f"*{SEGMENT_SUFFIX}"))
    assert left[0] == 4 and spool.backlog == 5  # segment 4 holds event 5, not yet shipped
    assert bodies(spool)[0] == [f"event-{i}".encode() for i in range(5, 10)]
    spool.close()
    again = Spool(tmp_path, capacity=1000, segment_bytes=20)
    assert bodies(again)[0] == [f"event-{i}".encode() for i in range(5, 10)]
    again.close()


def test_the_backlog_bound_keeps_what_fits_and_counts_the_rest(tmp_path: Path) -> None:
    spool = Spool(tmp_path, capacity=5, segment_bytes=1 << 20)
    assert append(spool, "a", "b", "c") == 0
    assert append(spool, "d", "e", "f", "g") == 2
    assert append(spool, "h") == 1
    assert (spool.backlog, spool.dropped) == (5, 3)
    lines, after = spool.read(spool.shipped, 1000)
    assert [line.body for line in lines] == [b"a,b,c", b"d,e"]
    spool.commit(after)
    assert append(spool, "i") == 0
    spool.close()
    again = Spool(tmp_path, capacity=5, segment_bytes=1 << 20)
    assert (again.backlog, again.dropped) == (1, 3)  # the drop count survives the restart
    again.close()


def test_a_damaged_position_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    Spool(tmp_path, capacity=5, segment_bytes=1 << 20).close()
    (tmp_path / POSITION_FILE).write_text("not a position\n")
    with pytest.raises(AuditSpoolError, match="remove it"):
        Spool(tmp_path, capacity=5, segment_bytes=1 << 20)


def test_a_line_changed_on_disk_is_skipped_and_counted(tmp_path: Path) -> None:
    spool = Spool(tmp_path, capacity=100, segment_bytes=1 << 20)
    append(spool, "a")
    append(spool, "b", "c")
    append(spool, "d")
    spool.close()
    (segment,) = tmp_path.glob(f"*{SEGMENT_SUFFIX}")
    segment.write_bytes(segment.read_bytes().replace(b"1 2 b,c", b"garbage"))
    again = Spool(tmp_path, capacity=100, segment_bytes=1 << 20)
    lines, after = again.read(again.shipped, 1000)
    assert [(line.seq, line.body) for line in lines] == [(0, b"a"), (3, b"d")]
    assert again.corrupt_lines == 1 and after.seq == 4
    again.commit(after)
    assert again.backlog == 0
    again.close()


def test_a_reader_of_its_own_shares_the_figures_with_the_writer(tmp_path: Path) -> None:
    """The sender may be another process: it opens a SpoolReader over the same directory, and
    each side sees the other's counts through the mapped progress file."""
    spool = Spool(tmp_path, capacity=4, segment_bytes=1 << 20)
    reader = SpoolReader(tmp_path)
    assert reader.spool_id == spool.spool_id
    append(spool, "a", "b", "c")
    assert reader.backlog == 3
    lines, after = reader.read(reader.resume(), 1000)
    assert [line.body for line in lines] == [b"a,b,c"]
    assert append(spool, "d", "e") == 1  # the bound, before the reader's commit
    reader.commit(after)
    assert (spool.shipped, spool.backlog, reader.dropped) == (after, 1, 1)
    assert append(spool, "f", "g") == 0  # room again, seen by the writer
    spool.close()
    assert (SpoolReader(tmp_path).backlog, SpoolReader(tmp_path).dropped) == (3, 1)
