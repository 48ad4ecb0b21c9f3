"""The jobs' embedded source reads a log's records the same whichever way SQLite holds them.

An earlier version's audit log (one row a record, made with SQL alone) converted to
``cleanup.policy=delete`` and appended to (one row an append): the source's Arrow batches
for any range hold the records written, at their offsets, with their timestamps.  No Spark
session: :func:`record_batches` is what each task of the source runs.
"""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import pytest
from embedded_log_support import earlier_embedded_log, row_counts

from jobs.common import sqlite_source
from jobs.common.sqlite_source import EmbeddedLogStreamReader, record_batches
from store.log import EmbeddedChangeLog
from store.log.record_batches import RecordBatchError

pytestmark = pytest.mark.unit


def rows(data_dir: Path, start: int, end: int) -> list[tuple[int, bytes, bytes | None]]:
    out = []
    for batch in record_batches(str(data_dir), start, end):
        assert batch.schema.names == ["key", "value", "offset", "timestampMs"]
        columns = batch.to_pydict()
        out += zip(columns["offset"], columns["key"], columns["value"], strict=True)
    return out


def test_ranges_over_rows_and_batches_hold_the_records_written(tmp_path: Path) -> None:
    path = earlier_embedded_log(tmp_path, [(b"k0", b"v0", 1000), (b"k1", None, 1001)])
    with EmbeddedChangeLog(tmp_path, cleanup_policy="delete") as log:
        log.append([(b"k2", b"v2"), (b"k3", b"v3"), (b"k4", None)])
        log.append([(b"k5", b"v5")])
        stamps = [r.timestamp_ms for r in log.read(0, timeout=0.0)]
    assert row_counts(path) == (2, 2)
    written = [(0, b"k0", b"v0"), (1, b"k1", None), (2, b"k2", b"v2"), (3, b"k3", b"v3"),
               (4, b"k4", None), (5, b"k5", b"v5")]  # fmt: skip
    assert rows(tmp_path, 0, 6) == written
    for start in range(6):
        for end in range(start, 7):
            assert rows(tmp_path, start, end) == written[start:end], (start, end)
    assert stamps[:2] == [1000, 1001] and stamps[2] == stamps[3] == stamps[4]  # one append's
    read = [s for b in record_batches(str(tmp_path), 0, 6) for s in b.column("timestampMs").to_pylist()]
    assert read == stamps
    reader = EmbeddedLogStreamReader(str(tmp_path), max_records=4, min_partitions=2)
    assert reader.latestOffset() == {"offset": 6}
    parts = reader.partitions({"offset": 1}, {"offset": 6})
    assert [r for p in parts for r in rows(tmp_path, *p.value)] == written[1:]


@pytest.mark.parametrize("joined_at", [1, 7, 10_000])
def test_stored_batches_read_as_columns_are_the_records_the_log_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, joined_at: int
) -> None:
    # The source makes a stored batch's columns with whole-array operations; the log's own
    # read (record_batches.unpack, a step per record) is the reference.  Appends of 1 to 40
    # records, with empty keys and values, tombstones and bytes of every value, over ranges
    # starting and ending inside batches; joined into Arrow batches of at least `joined_at`.
    import random

    monkeypatch.setattr(sqlite_source, "ARROW_BATCH_ROWS", joined_at)
    rng = random.Random(joined_at)
    with EmbeddedChangeLog(tmp_path, cleanup_policy="delete") as log:
        for _ in range(30):
            log.append([
                (rng.randbytes(rng.randrange(0, 6)),
                 None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 30)))
                for _ in range(rng.randrange(1, 41))
            ])  # fmt: skip
        written = [(r.offset, r.key, r.value) for r in log.read(0, max_records=10_000, timeout=0.0)]
    assert row_counts(tmp_path / "changelog.sqlite3") == (0, 30)
    ends = sorted({0, len(written), *rng.sample(range(len(written) + 1), 12)})
    for start in ends:
        for end in ends:
            got = rows(tmp_path, start, end)
            assert got == written[start:end], (start, end)


def test_a_stored_batch_whose_sizes_do_not_match_its_bytes_is_refused(tmp_path: Path) -> None:
    with EmbeddedChangeLog(tmp_path, cleanup_policy="delete") as log:
        log.append([(b"k0", b"v0"), (b"k1", b"v1")])
    db = sqlite3.connect(tmp_path / "changelog.sqlite3")
    sizes = struct.pack("<4i", 2, 2, 2, 3)  # one byte more than the data holds
    for bad, message in ((sizes, "shorter than its sizes"), (sizes[:12], "has sizes of 12 bytes"),
                         (struct.pack("<4i", 2, 2, 2, 1), "longer than its sizes"),
                         (struct.pack("<4i", 2, 2, -1, 5), "shorter than its sizes")):  # fmt: skip
        db.execute("UPDATE record_batches SET sizes = ?", (bad,))
        db.commit()
        with pytest.raises(RecordBatchError, match=message):
            rows(tmp_path, 0, 2)
    db.close()
