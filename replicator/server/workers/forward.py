"""A decision worker's way to its node: every request it does not answer itself.

Decisions are the worker's own; everything else (administration, listings, the analyses,
``/readyz``, ``/metrics``, a broker plugin's cache-lease long-poll) belongs to the node's
process, which holds the admin, the replica and the leases.  The worker sends such a request
to the node's internal listener on loopback, with the node's secret and the caller's address
and certificate subject (:data:`replicator.server.http.FORWARDED_FOR`), and relays the answer
as it comes: a streamed listing stays streamed, a large answer keeps its ``Content-Length``.

Each of the worker's connection threads keeps one connection to the node, used again only
while it has been idle for less than :data:`REUSE_IDLE_S`, well under the node's idle
timeout, so the node never closes it under a request.  A request that fails on it anyway is
not sent again (a write must never be sent twice to find out whether it landed): the caller
gets a 503 and decides.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, cast
from urllib.parse import urlencode

from replicator.server.http import (
    FORWARD_SECRET,
    FORWARDED_FOR,
    FORWARDED_SUBJECT,
    JSON,
    MAX_HEADER_LINE,
    HeaderError,
    Headers,
    HttpRequest,
    Response,
    read_headers,
)
from store.errors import KafkaErrorCode, StoreError

_HOP_BY_HOP: Final = frozenset({
    "connection", "keep-alive", "transfer-encoding", "te", "upgrade", "trailer",
    "proxy-authorization", "proxy-authenticate", "content-length",
    FORWARD_SECRET.lower(), FORWARDED_FOR.lower(), FORWARDED_SUBJECT.lower(),
})  # fmt: skip
"""Not forwarded.  ``Host`` is: the node sees the address the caller called (the console
checks a form's ``Origin`` against it; with the internal listener's own address there, no
browser could log in through a worker)."""
_KEPT_RESPONSE_HEADERS_SKIP: Final = frozenset({
    "connection", "keep-alive", "transfer-encoding", "content-length", "content-type", "date",
    "server",
})  # fmt: skip
_BUFFERED_BYTES: Final = 1024 * 1024
"""Answers up to this size are read whole and sent in one write; larger ones are relayed."""
_PIECE_BYTES: Final = 256 * 1024
REUSE_IDLE_S: Final = 30.0
"""A kept connection idle longer than this (or than a quarter of the node's idle timeout,
``HttpLimits.idle_timeout_s``, 120 s by default) is closed, not used."""


class NodeUnreachableError(StoreError):
    """The worker could not reach its node's process (it is restarting or gone)."""

    error_code = KafkaErrorCode.REQUEST_TIMED_OUT


class _NodeConnection:
    """One connection to the node's internal listener, HTTP/1.1 written and read by hand:
    the standard library's client reads an answer's headers through the e-mail parser, which
    cost more than the rest of forwarding a request."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = cast(io.BufferedReader, self.sock.makefile("rb", buffering=_PIECE_BYTES))
        self.idle_since = time.monotonic()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.reader.close()
            self.sock.close()


@dataclass(frozen=True, slots=True)
class _Head:
    status: int
    headers: Headers
    will_close: bool


def _read_head(reader: io.BufferedReader) -> _Head:
    """The status line and headers of the node's answer (ValueError if it is not one)."""
    line = reader.readline(MAX_HEADER_LINE + 1)
    version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise ValueError(f"not an HTTP/1.x status line: {line[:80]!r}")
    try:
        headers = read_headers(reader.readline)
    except HeaderError as exc:
        raise ValueError(exc.reason) from None
    close = version == "HTTP/1.0" or (headers.get("Connection") or "").lower() == "close"
    return _Head(int(code), headers, close)


class Forwarder:
    """Sends requests to the node's internal listener at ``host:port``."""

    def __init__(
        self, host: str, port: int, secret: str, *, timeout_s: float, node_idle_timeout_s: float
    ) -> None:
        self.host, self.port, self.secret, self.timeout_s = host, port, secret, timeout_s
        self.reuse_idle_s = min(REUSE_IDLE_S, node_idle_timeout_s / 4)
        self._kept = threading.local()

    def _connection(self) -> _NodeConnection:
        """This thread's connection to the node: the kept one if it is fresh enough."""
        kept: _NodeConnection | None = getattr(self._kept, "value", None)
        self._kept.value = None
        if kept is not None:
            if time.monotonic() - kept.idle_since < self.reuse_idle_s:
                return kept
            kept.close()
        return _NodeConnection(self.host, self.port, self.timeout_s)

    def _keep(self, connection: _NodeConnection) -> None:
        connection.idle_since = time.monotonic()
        self._kept.value = connection

    def _unreachable(self, exc: Exception) -> NodeUnreachableError:
        return NodeUnreachableError(
            f"the decision worker could not reach its node's process at "
            f"{self.host}:{self.port} ({exc}); retry: the node restarts it"
        )

    def _payload(self, request: HttpRequest) -> bytes:
        query = urlencode(request.query, doseq=True)
        target = request.path + (f"?{query}" if query else "")
        head = [f"{request.method} {target} HTTP/1.1"]
        head.extend(f"{k}: {v}" for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP)
        if "host" not in request.headers:
            head.append(f"Host: {self.host}:{self.port}")
        head.append(f"{FORWARD_SECRET}: {self.secret}")
        head.append(f"{FORWARDED_FOR}: {request.address}")
        if request.peer_subject:
            head.append(f"{FORWARDED_SUBJECT}: {json.dumps(request.peer_subject)}")
        head.append(f"Content-Length: {len(request.body)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + request.body

    def __call__(self, request: HttpRequest) -> Response:
        payload = self._payload(request)
        connection: _NodeConnection | None = None
        try:
            connection = self._connection()
            connection.sock.sendall(payload)
            head = _read_head(connection.reader)
        except (OSError, ValueError) as exc:
            if connection is not None:
                connection.close()
            raise self._unreachable(exc) from exc
        kept = tuple(
            (name, value) for name, value in head.headers.items()
            if name.lower() not in _KEPT_RESPONSE_HEADERS_SKIP
        )  # fmt: skip
        content_type = head.headers.get("Content-Type") or JSON
        if request.method == "HEAD" or head.status in (204, 304) or 100 <= head.status < 200:
            self._keep_or_close(connection, head)
            return Response(head.status, b"", content_type, kept)
        if (head.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            return Response(head.status, b"", content_type, kept, _dechunked(connection))
        length_text = head.headers.get("Content-Length")
        if length_text is None:  # delimited by the end of the connection
            return Response(head.status, b"", content_type, kept, _until_closed(connection))
        length = int(length_text) if length_text.isdigit() else -1
        if length < 0:
            connection.close()
            raise self._unreachable(ValueError(f"Content-Length {length_text!r}"))
        if length <= _BUFFERED_BYTES:
            try:
                body = connection.reader.read(length)
            except OSError:
                connection.close()
                raise
            if len(body) < length:
                connection.close()
                raise self._unreachable(ValueError("the answer was cut short"))
            self._keep_or_close(connection, head)
            return Response(head.status, body, content_type, kept)
        return Response(head.status, b"", content_type, kept, _sized(connection, length), length)

    def _keep_or_close(self, connection: _NodeConnection, head: _Head) -> None:
        if head.will_close:
            connection.close()
        else:
            self._keep(connection)


def _sized(connection: _NodeConnection, length: int) -> Iterator[bytes]:
    """A large answer's body piece by piece as the node sends it; the connection closes after."""
    try:
        left = length
        while left > 0:
            piece = connection.reader.read1(min(left, _PIECE_BYTES))
            if not piece:
                return
            left -= len(piece)
            yield piece
    finally:
        connection.close()


def _until_closed(connection: _NodeConnection) -> Iterator[bytes]:
    try:
        while piece := connection.reader.read1(_PIECE_BYTES):
            yield piece
    finally:
        connection.close()


def _dechunked(connection: _NodeConnection) -> Iterator[bytes]:
    """A chunked answer's data as it arrives (the worker chunks it again for its caller); the
    connection closes after, or at the first malformed chunk (the caller sees the body cut)."""
    reader = connection.reader
    try:
        while True:
            size_line = reader.readline(MAX_HEADER_LINE + 1)
            size_text = size_line.split(b";", 1)[0].strip()
            size = int(size_text, 16) if size_text else -1
            if size < 0:
                return
            if size == 0:
                return  # trailers, if any, go with the connection
            left = size
            while left > 0:
                piece = reader.read1(min(left, _PIECE_BYTES))
                if not piece:
                    return
                left -= len(piece)
                yield piece
            reader.readline(3)  # the CRLF after the data
    except ValueError:
        return
    finally:
        connection.close()
