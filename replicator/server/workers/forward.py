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

import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Final
from urllib.parse import urlencode

from replicator.server.http import (
    FORWARD_SECRET,
    FORWARDED_FOR,
    FORWARDED_SUBJECT,
    JSON,
    HttpRequest,
    Response,
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


class Forwarder:
    """Sends requests to the node's internal listener at ``host:port``."""

    def __init__(
        self, host: str, port: int, secret: str, *, timeout_s: float, node_idle_timeout_s: float
    ) -> None:
        self.host, self.port, self.secret, self.timeout_s = host, port, secret, timeout_s
        self.reuse_idle_s = min(REUSE_IDLE_S, node_idle_timeout_s / 4)
        self._kept = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection to the node: the kept one if it is fresh enough."""
        kept: tuple[http.client.HTTPConnection, float] | None = getattr(self._kept, "value", None)
        self._kept.value = None
        if kept is not None:
            connection, idle_since = kept
            if time.monotonic() - idle_since < self.reuse_idle_s:
                return connection
            connection.close()
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)

    def _keep(self, connection: http.client.HTTPConnection, answer: http.client.HTTPResponse) -> None:
        """Keep ``connection`` for this thread's next request, once ``answer`` is read whole."""
        if answer.will_close:
            connection.close()
        else:
            self._kept.value = (connection, time.monotonic())

    def __call__(self, request: HttpRequest) -> Response:
        query = urlencode(request.query, doseq=True)
        target = request.path + (f"?{query}" if query else "")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers[FORWARD_SECRET] = self.secret
        headers[FORWARDED_FOR] = request.address
        if request.peer_subject:
            headers[FORWARDED_SUBJECT] = json.dumps(request.peer_subject)
        connection = self._connection()
        try:
            connection.request(request.method, target, body=request.body or None, headers=headers)
            answer = connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise NodeUnreachableError(
                f"the decision worker could not reach its node's process at "
                f"{self.host}:{self.port} ({exc}); retry: the node restarts it"
            ) from exc
        kept = tuple(
            (name, value) for name, value in answer.getheaders()
            if name.lower() not in _KEPT_RESPONSE_HEADERS_SKIP
        )  # fmt: skip
        content_type = answer.getheader("Content-Type") or JSON
        length_text = answer.getheader("Content-Length")
        if answer.chunked or length_text is None:
            return Response(answer.status, b"", content_type, kept, _relay(connection, answer))
        length = int(length_text)
        if length <= _BUFFERED_BYTES:
            try:
                body = answer.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                raise
            self._keep(connection, answer)
            return Response(answer.status, body, content_type, kept)
        return Response(answer.status, b"", content_type, kept, _relay(connection, answer), length)


def _relay(connection: http.client.HTTPConnection, answer: http.client.HTTPResponse) -> Iterator[bytes]:
    """The answer's body piece by piece as the node sends it; the connection closes after."""
    try:
        while True:
            piece = answer.read1(_PIECE_BYTES)
            if not piece:
                return
            yield piece
    finally:
        connection.close()
