"""The audit spool: append-only segment files on local disk and the position shipped from them.

Every answered request's audited decisions are one line of one segment, written (one
``write(2)`` per request, not fsynced) before the answer leaves the node: a process that is
killed loses nothing the kernel already has.  A line is ``<seq> <count> <body>\\n``: ``seq``
numbers the line's first event (events are numbered 0, 1, 2... over the spool's whole life),
``count`` says how many it holds and ``body`` is the request's events (versioned; written and
read by :mod:`replicator.server.audit.emitter`).  Segments are named after the sequence number
of their first event (``00000000000000001234.audit``) and roll at ``segment_bytes``.

The sender reads from its :class:`Position` (segment, byte, next sequence number) and, once the
audit log acknowledged what it read, :meth:`Spool.commit` writes the new position to
``shipped`` (written to a temporary file and renamed over, so it is always whole) and removes
the segments wholly behind it.  A restarted node resumes from that position: an event
acknowledged but not yet committed is sent again with the same id (``<spool id><seq>``), which
downstream deduplicates on.

The backlog (events written and not yet shipped) is bounded: a request that finds it full
keeps what fits and the rest are dropped and counted, never silently.

Two sides: request threads append (under one lock) through :class:`Spool`; one sender (a thread,
or a process of its own) reads and commits through a :class:`SpoolReader`.  Neither touches the
other's files or descriptors; what each must know of the other (how far writing and shipping
got, the counts ``/metrics`` shows) is in the mapped ``progress`` file
(:mod:`replicator.server.audit.progress`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from replicator.server.audit.progress import (
    CORRUPT,
    DROPPED,
    SHIPPED_BYTE,
    SHIPPED_SEGMENT,
    SHIPPED_SEQ,
    WRITTEN,
    Progress,
)
from store.errors import KafkaErrorCode, StoreError

SEGMENT_SUFFIX: Final = ".audit"
POSITION_FILE: Final = "shipped"
ID_FILE: Final = "spool.id"
_READ_CHUNK: Final = 1 << 20
SPOOL_SLACK_BYTES: Final = 64 << 10
"""Free space beyond a failed line's length for the spool to count as writable again."""
_log = logging.getLogger("aclstore.audit")


class AuditSpoolError(StoreError):
    """The spool directory holds something the node cannot resume from."""


class AuditSpoolWriteError(AuditSpoolError):
    """A request's audited decisions could not be written to the spool (its file system is
    full, or failing): the request is refused rather than answered unaudited, and nothing of
    the line stays in the segment."""

    error_code = KafkaErrorCode.KAFKA_STORAGE_ERROR

    def __init__(self, message: str, *, directory: str) -> None:
        super().__init__(message)
        self.directory = directory


@dataclass(frozen=True, slots=True)
class Position:
    """Where shipping stands: the segment (its first sequence number), the byte in it, and the
    sequence number of the next event to ship."""

    segment: int
    byte: int
    seq: int


@dataclass(frozen=True, slots=True)
class Line:
    """One request's audited events as read back: the first event's number, how many, the body."""

    seq: int
    count: int
    body: bytes


def segment_name(base: int) -> str:
    return f"{base:020d}{SEGMENT_SUFFIX}"


def parse_line(raw: bytes) -> Line:
    """``<seq> <count> <body>`` (without the newline)."""
    seq_text, count_text, body = raw.split(b" ", 2) if raw.count(b" ") >= 2 else (b"", b"", b"")
    if not (seq_text.isdigit() and count_text.isdigit() and body):
        raise AuditSpoolError(
            f"audit spool line {raw[:80]!r} is not '<seq> <count> <body>': the file was changed "
            "by something other than aclstore; move the segment aside to resume"
        )
    return Line(int(seq_text), int(count_text), body)


class SpoolReader:
    """The sender's side of a spool directory: read lines from a position, commit positions.

    It never writes a segment: the :class:`Spool` that the node opened has recovered the
    directory (and made its id) before any sender starts.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.spool_id = self._spool_id()
        self.progress = Progress(directory)

    def _spool_id(self) -> str:
        path = self.directory / ID_FILE
        text = path.read_text().strip() if path.exists() else ""
        if len(text) == 16 and all(c in "0123456789abcdef" for c in text):
            return text
        raise AuditSpoolError(f"{path} holds {text!r}, not 16 hex digits; remove the file")

    # --- the shared figures (replicator.server.audit.progress) --------------------------------

    @property
    def shipped(self) -> Position:
        p = self.progress
        return Position(p.get(SHIPPED_SEGMENT), p.get(SHIPPED_BYTE), p.get(SHIPPED_SEQ))

    def _publish_shipped(self, position: Position) -> None:
        p = self.progress
        p.set(SHIPPED_SEGMENT, position.segment)
        p.set(SHIPPED_BYTE, position.byte)
        p.set(SHIPPED_SEQ, position.seq)  # last: it is what bounds the backlog

    @property
    def backlog(self) -> int:
        """Events written and not yet shipped."""
        return self.progress.get(WRITTEN) - self.progress.get(SHIPPED_SEQ)

    @property
    def dropped(self) -> int:
        return self.progress.get(DROPPED)

    @property
    def corrupt_lines(self) -> int:
        """Lines of the segments that could not be read back (changed on disk), skipped."""
        return self.progress.get(CORRUPT)

    def count_corrupt(self) -> None:
        self.progress.add(CORRUPT, 1)

    # --- where shipping stands ---------------------------------------------------------------

    def _read_position(self) -> tuple[int, Position | None]:
        path = self.directory / POSITION_FILE
        if not path.exists():
            return 0, None
        fields = path.read_text().split()
        if len(fields) != 4 or not all(f.isdigit() for f in fields):
            raise AuditSpoolError(
                f"{path} holds {' '.join(fields)!r}, not 'segment byte seq dropped': remove it to "
                "ship the whole spool again (downstream deduplicates on the event id)"
            )
        segment, byte, seq, dropped = (int(f) for f in fields)
        return dropped, Position(segment, byte, seq)

    def _segments(self) -> list[int]:
        return sorted(
            int(p.name[: -len(SEGMENT_SUFFIX)])
            for p in self.directory.glob(f"*{SEGMENT_SUFFIX}")
            if p.name[: -len(SEGMENT_SUFFIX)].isdigit()
        )

    def resume(self) -> Position:
        """The committed position, read from its file and published as the shipped one.

        A sender calls it once it is the only one (an earlier sender may have committed after
        the node opened the spool).  A position in a segment that is gone (moved aside by
        hand): ship all there is.
        """
        stored = self._read_position()[1]
        segments = self._segments()
        if stored is not None and stored.segment in segments:
            position = stored
        elif segments:
            position = Position(segments[0], 0, segments[0])
        else:
            position = stored if stored is not None else Position(0, 0, 0)
        self._publish_shipped(position)
        return position

    # --- reading and committing -------------------------------------------------------------------

    def read(self, position: Position, max_events: int) -> tuple[list[Line], Position]:
        """Whole lines from ``position`` up to about ``max_events`` events, and the position after.

        A segment is final once a later one exists (the writer rolls under its lock after its
        last write): only then does reading move past its end.
        """
        lines: list[Line] = []
        events = 0
        while events < max_events:
            later = [b for b in self._segments() if b > position.segment]
            path = self.directory / segment_name(position.segment)
            try:
                with path.open("rb") as f:
                    f.seek(position.byte)
                    data = f.read(_READ_CHUNK)
                    if b"\n" not in data and len(data) == _READ_CHUNK:  # one very long line
                        data += f.read()
            except FileNotFoundError:
                data = b""
            end = data.rfind(b"\n") + 1
            start = 0
            while start < end and events < max_events:
                stop = data.index(b"\n", start)
                try:
                    line = parse_line(data[start:stop])
                except AuditSpoolError as exc:  # changed on disk: skipped, counted, logged
                    self.count_corrupt()
                    _log.error("%s: skipped (in %s)", exc.message, path)
                    start = stop + 1
                    continue
                if line.seq + line.count > position.seq:  # skip what a torn commit re-reads
                    lines.append(line)
                    events += line.count
                start = stop + 1
            if start:
                seq = lines[-1].seq + lines[-1].count if lines else position.seq
                position = Position(position.segment, position.byte + start, seq)
                continue
            if not later:
                break
            position = Position(later[0], 0, position.seq)
        return lines, position

    def commit(self, position: Position) -> None:
        """Record ``position`` as shipped and remove the segments wholly behind it."""
        dropped = self.dropped
        _write_whole(
            self.directory / POSITION_FILE,
            f"{position.segment} {position.byte} {position.seq} {dropped}\n",
        )
        self._publish_shipped(position)
        for base in self._segments():
            if base < position.segment:
                (self.directory / segment_name(base)).unlink(missing_ok=True)

    def size_bytes(self) -> int:
        total = 0
        for base in self._segments():
            try:
                total += (self.directory / segment_name(base)).stat().st_size
            except FileNotFoundError:
                continue
        return total - self.shipped.byte


class Spool(SpoolReader):
    """The segment files of one node (``<data dir>/audit-spool``), opened for writing."""

    def __init__(
        self,
        directory: Path,
        *,
        capacity: int,
        segment_bytes: int,
    ) -> None:
        self.capacity = capacity
        self.segment_bytes = segment_bytes
        directory.mkdir(parents=True, exist_ok=True)
        if not (directory / ID_FILE).exists():
            # 16 hex digits, made once per spool: with the sequence number, a unique id.
            _write_whole(directory / ID_FILE, secrets.token_hex(8) + "\n")
        super().__init__(directory)
        dropped, stored = self._read_position()
        p = self.progress
        # The drop count lives in the mapped file; an earlier version kept it in the position.
        p.set(DROPPED, max(dropped, p.get(DROPPED)))
        p.set(CORRUPT, 0)
        self._lock = threading.Lock()
        self.write_error: str | None = None
        self._needed_bytes = 0
        self._base, self._size, self.next_seq = self._recover(stored)
        p.set(WRITTEN, self.next_seq)
        self._fd = self._open_segment(self._base)
        self.resume()

    # --- opening ---------------------------------------------------------------------------

    def _recover(self, stored: Position | None) -> tuple[int, int, int]:
        """(base, size, next seq) of the segment to append to; a torn last line is cut off.

        A line is written by one ``write(2)``: a killed process leaves it whole, but a machine
        that lost power may leave a prefix, which no answer can have waited for.
        """
        segments = self._segments()
        if not segments:
            start = stored.seq if stored is not None else 0
            return start, 0, start
        base = segments[-1]
        path = self.directory / segment_name(base)
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            os.truncate(path, end)
        if end == 0:
            return base, 0, base
        start = data.rfind(b"\n", 0, end - 1) + 1
        last = parse_line(data[start : end - 1])
        return base, end, last.seq + last.count

    def _open_segment(self, base: int) -> int:
        path = self.directory / segment_name(base)
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    # --- the request side ------------------------------------------------------------------

    def append(self, count: int, body: bytes, trim: Callable[[int], bytes]) -> int:
        """Write one line: ``body`` holds ``count`` events, ``trim(n)`` the body of the first n.

        Past the bound, only the events that fit are written: returns how many were dropped.
        """
        with self._lock:
            room = self.capacity - (self.next_seq - self.progress.get(SHIPPED_SEQ))
            kept = count if room >= count else max(room, 0)
            if kept:
                written = body if kept == count else trim(kept)
                line = b"%d %d %s\n" % (self.next_seq, kept, written)
                self._write_line(line)
                self.next_seq += kept
                self.progress.set(WRITTEN, self.next_seq)
                self._size += len(line)
                if self._size >= self.segment_bytes:
                    self._roll()
            if kept < count:
                self.progress.add(DROPPED, count - kept)
            return count - kept

    def _write_line(self, line: bytes) -> None:
        """Append ``line`` whole, or leave the segment as it was and raise a typed error.

        A write that fails part-way (the file system filled up) leaves a prefix of the line;
        it is cut off at once, so the next line starts on a line of its own (a torn prefix
        would otherwise join it, and the reader would skip both as one corrupt line)."""
        try:
            _write_all(self._fd, line)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            self.write_error = (
                f"cannot write to the audit spool in {self.directory}: {exc.strerror}; "
                "decisions that must be audited are refused until it can. Free space on "
                "that file system (or move the node's data dir to a larger one); the node "
                "writes again as soon as there is room"
            )
            self._needed_bytes = len(line)
            raise AuditSpoolWriteError(self.write_error, directory=str(self.directory)) from exc
        self.write_error = None

    def storage_problem(self) -> str | None:
        """Why the last write failed, while its file system still lacks room for that line
        (its free space is asked each time: a node nobody asks recovers too), else None."""
        if self.write_error is None:
            return None
        stat = os.statvfs(self.directory)
        if stat.f_bavail * stat.f_frsize >= self._needed_bytes + SPOOL_SLACK_BYTES:
            return None  # the next write says whether it was enough
        return self.write_error

    def _roll(self) -> None:
        # The new segment is opened before the old one is closed: a roll that fails (no
        # inode left) keeps appending to the old one and is tried again at the next line.
        try:
            fd = self._open_segment(self.next_seq)
        except OSError:
            _log.warning("cannot start a new audit spool segment in %s", self.directory)
            return
        os.close(self._fd)
        self._base, self._size, self._fd = self.next_seq, 0, fd

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_whole(path: Path, text: str) -> None:
    """Write to a temporary file and rename it over ``path``: readers see old or new, whole."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
