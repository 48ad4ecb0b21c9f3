"""A decision worker's forwarding, against the standard library's HTTP server on loopback:
every way an HTTP/1.1 answer can carry its body (a length, small or large; chunks; the end of
the connection; none for HEAD and 204) arrives whole, the connection is kept only when the
answer allows it, the forwarded headers are the caller's (its Host included) plus the worker's,
and a node that is gone is a typed error, never a second sending."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from replicator.server.http import FORWARD_SECRET, FORWARDED_FOR, Headers, HttpRequest
from replicator.server.workers.forward import Forwarder, NodeUnreachableError

BIG = bytes(range(256)) * 12_000  # 3 MB: relayed, not buffered
SEEN: list[tuple[str, str, dict[str, str], bytes]] = []


class _Node(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        SEEN.append((self.command, self.path, dict(self.headers.items()), body))
        kind = self.path.split("?")[0].strip("/")
        if kind == "small":
            self._send(200, b'{"ok": true}')
        elif kind == "small-then-die":  # answers as if keeping the connection, then drops it
            self._send(200, b'{"ok": true}')
            self.close_connection = True
        elif kind == "big":
            self._send(200, BIG)
        elif kind == "chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (b"a" * 10, b"b" * 70_000, b"c"):
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif kind == "until-close":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"x" * 5000)
            self.close_connection = True
        elif kind == "empty":
            self.send_response(204)
            self.end_headers()
        else:
            self._send(404, b"{}")

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Node", "yes")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_HEAD = _answer


@pytest.fixture
def node() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Node)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    SEEN.clear()
    yield server
    server.shutdown()
    server.server_close()


def _request(path: str, method: str = "POST", body: bytes = b"", **headers: str) -> HttpRequest:
    fields = [("Host", "broker-1:9096"), ("Content-Type", "application/json"),
              ("Connection", "keep-alive"), (FORWARD_SECRET, "forged"),
              *((k.replace("_", "-"), v) for k, v in headers.items())]  # fmt: skip
    return HttpRequest(method, path, {"q": ["1 2"]}, Headers(fields), body, "10.1.2.3", None)


def _body(answer: Any) -> bytes:
    return answer.body if answer.chunks is None else b"".join(answer.chunks)


def test_every_kind_of_body_arrives_whole_and_the_callers_headers_go_on(node: ThreadingHTTPServer) -> None:
    port = node.server_address[1]
    forward = Forwarder("127.0.0.1", port, "s3cret", timeout_s=10, node_idle_timeout_s=120)
    small = forward(_request("/small", body=b'{"x": 1}', X_Trace="t1"))
    assert (small.status, small.body, small.content_type) == (200, b'{"ok": true}', "application/json")
    assert ("X-Node", "yes") in small.headers
    method, path, headers, body = SEEN[-1]
    assert (method, path, body) == ("POST", "/small?q=1+2", b'{"x": 1}')
    assert headers["Host"] == "broker-1:9096" and headers["X-Trace"] == "t1"
    assert headers[FORWARD_SECRET] == "s3cret" and headers[FORWARDED_FOR] == "10.1.2.3"
    assert "Connection" not in headers  # hop by hop: the caller's, not the node's
    big = forward(_request("/big"))
    assert big.length == len(BIG) and _body(big) == BIG
    chunked = forward(_request("/chunked"))
    assert chunked.content_type == "application/x-ndjson" and chunked.length is None
    assert _body(chunked) == b"a" * 10 + b"b" * 70_000 + b"c"
    assert _body(forward(_request("/until-close"))) == b"x" * 5000
    head = forward(_request("/small", method="HEAD"))
    assert head.status == 200 and _body(head) == b""
    assert forward(_request("/empty")).status == 204
    # The small answers kept the connection; the next request still gets its own answer.
    assert forward(_request("/small")).body == b'{"ok": true}'
    assert [s[1].split("?")[0] for s in SEEN] == [
        "/small", "/big", "/chunked", "/until-close", "/small", "/empty", "/small"
    ]


def test_a_node_that_is_gone_is_a_typed_error_and_the_request_is_not_sent_twice(
    node: ThreadingHTTPServer,
) -> None:
    port = node.server_address[1]
    forward = Forwarder("127.0.0.1", port, "s3cret", timeout_s=5, node_idle_timeout_s=120)
    assert forward(_request("/small-then-die")).status == 200
    node.shutdown()
    node.server_close()
    sent = len(SEEN)
    with pytest.raises(NodeUnreachableError, match=f"127.0.0.1:{port}"):
        forward(_request("/small"))  # on the kept connection, which the node closed
    with pytest.raises(NodeUnreachableError, match="refused"):
        forward(_request("/small"))  # a new connection: nothing listens
    assert len(SEEN) == sent
