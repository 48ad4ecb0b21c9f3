"""A batch of log records as one value: how the embedded log stores a ``delete`` log's appends.

Kafka stores records in batches (a ``RecordBatch`` holds a base offset and the records after
it); the embedded log does the same for a log that is never compacted: one SQLite row per
append, holding the base offset, the append's timestamp, the records' sizes and their bytes.
A reader gets the same records, offsets and timestamps as from one row per record; what it
saves is the per-row work of the writer (a B-tree entry, a bound parameter set and a row
header per record).  Pure functions: no I/O.

``sizes`` holds, per record, the key's length and the value's length (-1 for a tombstone) as
little-endian signed 32-bit integers; ``data`` the keys and values in order.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Final

TOMBSTONE: Final = -1


class RecordBatchError(ValueError):
    """A stored batch whose sizes do not match its bytes (changed outside the store)."""


def pack(records: Sequence[tuple[bytes, bytes | None]]) -> tuple[bytes, bytes]:
    """``(sizes, data)`` of ``records`` (keys and values, a value None for a tombstone)."""
    sizes: list[int] = []
    parts: list[bytes] = []
    for key, value in records:
        sizes.append(len(key))
        parts.append(key)
        if value is None:
            sizes.append(TOMBSTONE)
        else:
            sizes.append(len(value))
            parts.append(value)
    return struct.pack(f"<{len(sizes)}i", *sizes), b"".join(parts)


def unpack(
    base_offset: int, timestamp_ms: int, sizes: bytes, data: bytes, *, from_offset: int = 0
) -> Iterator[tuple[int, bytes, bytes | None, int]]:
    """The batch's records from ``from_offset`` as ``(offset, key, value, timestamp_ms)``."""
    if len(sizes) % 8:
        raise RecordBatchError(f"the batch at offset {base_offset} has sizes of {len(sizes)} bytes")
    lengths = struct.unpack(f"<{len(sizes) // 4}i", sizes)
    at = 0
    for i in range(0, len(lengths), 2):
        key_length, value_length = lengths[i], lengths[i + 1]
        end = at + key_length + max(value_length, 0)
        if key_length < 0 or value_length < TOMBSTONE or end > len(data):
            raise RecordBatchError(f"the batch at offset {base_offset} is shorter than its sizes")
        offset = base_offset + i // 2
        if offset >= from_offset:
            key = data[at : at + key_length]
            value = None if value_length == TOMBSTONE else data[at + key_length : end]
            yield offset, key, value, timestamp_ms
        at = end
    if at != len(data):
        raise RecordBatchError(f"the batch at offset {base_offset} is longer than its sizes")
