"""The spool's shared figures: a small memory-mapped file that the writer and the sender both see.

The request path (the writer) and the sender may be two processes (see
:mod:`replicator.server.audit.sender`); what each needs to know of the other, and what the
node's ``/metrics`` shows, is here: eight 64-bit counters in ``<spool>/progress``.  Each slot
has exactly one writer, so no lock is needed: the request path writes ``written`` and
``dropped``; the sender writes the shipped position, ``sent``, ``sink_up`` and
``corrupt_lines``.  An aligned 8-byte store is not torn on the platforms we run on; the three
slots of the shipped position are written segment and byte first, the sequence number last,
and only the sequence number bounds the backlog.

The mapping is shared with the file, so the figures outlive a killed process (the kernel
writes the pages back): the drop count in particular survives a SIGKILL.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import Final

PROGRESS_FILE: Final = "progress"
_SLOT: Final = struct.Struct("<q")
_SLOTS: Final = 8
(WRITTEN, DROPPED, SHIPPED_SEGMENT, SHIPPED_BYTE, SHIPPED_SEQ, SENT, SINK_UP, CORRUPT) = range(_SLOTS)


class Progress:
    """The counters of one spool directory, mapped."""

    def __init__(self, directory: Path) -> None:
        path = directory / PROGRESS_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < _SLOTS * _SLOT.size:
                os.ftruncate(fd, _SLOTS * _SLOT.size)
            self._map = mmap.mmap(fd, _SLOTS * _SLOT.size)
        finally:
            os.close(fd)

    def get(self, slot: int) -> int:
        return int(_SLOT.unpack_from(self._map, slot * 8)[0])

    def set(self, slot: int, value: int) -> None:
        _SLOT.pack_into(self._map, slot * 8, value)

    def add(self, slot: int, value: int) -> None:
        """Only for a slot this process is the one writer of."""
        self.set(slot, self.get(slot) + value)

    def close(self) -> None:
        self._map.close()
