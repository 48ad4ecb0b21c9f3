"""What the node's replica tells its decision workers, in one small shared file.

The replica (the index's only writer) publishes, after each commit, the offset it made
visible, and every few milliseconds whether it is ready, failed or stopped and what it knows
of the log's end.  Each decision worker maps the same file and reads it on every request: a
word compared, no system call.  A worker that sees a published offset beyond its own catches
up before it answers, so no worker answers from a state older than one the node had made
visible when the request arrived.

The record is written under a sequence lock: the writer makes the sequence odd, writes, and
makes it even again; a reader retries while it is odd or changed under it, so it never reads
half of one publication and half of another.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_RECORD: Final = struct.Struct("<QqqqqqdQ")
"""sequence, published offset, ready offset, stopped offset (-1: none), log end offset,
flags, log end confirmed at (monotonic s), status written at (monotonic ns)."""
_SEQ: Final = struct.Struct("<Q")
_BODY: Final = struct.Struct("<qqqqqdQ")
"""The record after its sequence number."""
_SIZE: Final = 4096

READY: Final = 1
FATAL: Final = 2
LOG_ERROR: Final = 4


@dataclass(frozen=True, slots=True)
class PublishedState:
    """One publication of the replica."""

    offset: int
    """Applied and visible: the worker answers from at least this offset."""
    ready_offset: int
    stopped_offset: int
    log_end_offset: int
    flags: int
    log_end_confirmed_at: float

    @property
    def ready(self) -> bool:
        return bool(self.flags & READY)

    @property
    def failed(self) -> bool:
        return bool(self.flags & FATAL)

    @property
    def log_error(self) -> bool:
        return bool(self.flags & LOG_ERROR)


class SharedState:
    """The file ``path``, mapped; :meth:`create` for the writer, :meth:`open` for a reader."""

    def __init__(self, path: Path, fd: int, *, writer: bool) -> None:
        self.path = path
        self._fd = fd
        self._map = mmap.mmap(fd, _SIZE, access=mmap.ACCESS_WRITE if writer else mmap.ACCESS_READ)
        self._writer = writer
        self._last = PublishedState(-1, 0, -1, 0, 0, 0.0)

    @classmethod
    def create(cls, path: Path) -> SharedState:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(fd, _SIZE)
        state = cls(path, fd, writer=True)
        state.publish(PublishedState(-1, 0, -1, 0, 0, time.monotonic()))
        return state

    @classmethod
    def open(cls, path: Path) -> SharedState:
        return cls(path, os.open(path, os.O_RDONLY), writer=False)

    # -- the writer ------------------------------------------------------------------------------

    def publish(self, state: PublishedState) -> None:
        """Write ``state`` (one writer thread at a time: the caller orders them).

        Every store is a copy of bytes packed beforehand: ``struct.pack_into`` zeroes its
        target before it writes the fields, which a reader could take for an even sequence
        number over a record of zeros."""
        view = self._map
        (seq,) = _SEQ.unpack_from(view, 0)
        body = _BODY.pack(
            state.offset, state.ready_offset, state.stopped_offset, state.log_end_offset,
            state.flags, state.log_end_confirmed_at, time.monotonic_ns(),
        )  # fmt: skip
        view[0 : _SEQ.size] = _SEQ.pack(seq + 1)  # odd: a write is under way
        view[_SEQ.size : _RECORD.size] = body
        view[0 : _SEQ.size] = _SEQ.pack(seq + 2)
        self._last = state

    @property
    def last(self) -> PublishedState:
        """What this writer published last."""
        return self._last

    # -- a reader -------------------------------------------------------------------------------

    def read(self) -> PublishedState:
        view = self._map
        while True:
            fields = _RECORD.unpack_from(view, 0)
            seq = fields[0]
            if seq & 1 or _SEQ.unpack_from(view, 0)[0] != seq:
                continue  # a publication under way: read it again
            return PublishedState(*fields[1:7])

    def offset(self) -> int:
        """The published offset alone (a single aligned word)."""
        return int(_OFFSET.unpack_from(self._map, 8)[0])

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)


_OFFSET: Final = struct.Struct("<q")
