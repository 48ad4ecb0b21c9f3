"""The sidecar's HTTP/1.1 server: the standard library's ``ThreadingHTTPServer``, kept lean.

One thread per connection, keep-alive by default (a broker holds one connection open and sends
request after request), ``TCP_NODELAY`` and each response written in a single ``send`` so that
no answer waits on Nagle's algorithm.  Routes are exact ``(method, path)`` pairs; bodies are
JSON with a ``Content-Length`` (no chunked uploads) up to a bound.

Errors never escape as a 500 unless they are bugs: :func:`status_for` maps the store's typed
errors to 4xx/503 answers whose JSON body names the error and its message.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from replicator.contract.answers import error_json
from replicator.contract.fields import dumps, parse_json
from replicator.errors import ConsistencyTimeoutError, ReplicaError
from replicator.server.errors import CallerNotAllowedError, UnauthenticatedError
from store.errors import (
    AuthorizationError,
    AuthorizerNotReadyError,
    ClusterAuthorizationError,
    KafkaErrorCode,
    StoreError,
)

MAX_BODY_BYTES: Final = 8 * 1024 * 1024
IDLE_TIMEOUT_S: Final = 120.0
TLS_HANDSHAKE_TIMEOUT_S: Final = 10.0
JSON: Final = "application/json"

_log = logging.getLogger("aclstore.http")

PeerSubject = tuple[tuple[tuple[str, str], ...], ...]


@dataclass(slots=True)
class HttpRequest:
    """One request as a route sees it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: Message
    body: bytes
    address: str
    peer_subject: PeerSubject | None = None

    def json(self) -> Any:
        return parse_json(self.body)

    @property
    def authorization(self) -> str | None:
        return self.headers.get("Authorization")


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = JSON
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, value: Any, status: int = 200, **headers: str) -> Response:
        extra = tuple((k.replace("_", "-"), v) for k, v in headers.items())
        return cls(status, dumps(value), JSON, extra)


RouteHandler = Callable[[HttpRequest], Response]


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str
    name: str
    handler: RouteHandler = field(compare=False)


def status_for(exc: BaseException) -> int:
    """The HTTP status of a typed error; 500 only for what is not a :class:`StoreError`."""
    if isinstance(exc, UnauthenticatedError):
        return 401
    if isinstance(exc, AuthorizerNotReadyError):
        return 503
    if isinstance(exc, ClusterAuthorizationError | CallerNotAllowedError):
        return 403
    if isinstance(exc, ConsistencyTimeoutError | ReplicaError):
        return 503
    if isinstance(exc, AuthorizationError):
        return 400
    if isinstance(exc, StoreError):
        code = exc.error_code
        if code in (KafkaErrorCode.REQUEST_TIMED_OUT, KafkaErrorCode.NOT_ENOUGH_REPLICAS,
                    KafkaErrorCode.KAFKA_STORAGE_ERROR):  # fmt: skip
            return 503
        if code is KafkaErrorCode.UNSUPPORTED_VERSION:
            return 409
        return 400
    return 500


def error_response(exc: BaseException) -> Response:
    status = status_for(exc)
    if status == 500:
        _log.exception("internal error answering a request", exc_info=exc)
        return Response.json(
            error_json("INTERNAL_ERROR", "internal error; see the node's log"), 500
        )
    message = exc.message if isinstance(exc, StoreError) else str(exc)
    extra: dict[str, Any] = {}
    if isinstance(exc, StoreError):
        extra["kafkaErrorCode"] = int(exc.error_code)
    reached = getattr(exc, "reached", None)
    if isinstance(reached, int):
        extra["offset"] = reached
    headers: dict[str, str] = {}
    if status == 401:
        headers["WWW_Authenticate"] = 'Bearer realm="aclstore"'
    if status == 503:
        headers["Retry_After"] = "1"
    return Response.json(error_json(type(exc).__name__, message, **extra), status, **headers)


class SidecarHTTPServer(ThreadingHTTPServer):
    """Serves ``routes``; with ``tls``, the handshake runs on the connection's own thread."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        routes: Sequence[Route],
        *,
        tls: ssl.SSLContext | None = None,
        on_response: Callable[[str, int], None] | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        host = address[0]
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(host).version == 6:
                self.address_family = socket.AF_INET6
        self.routes = {(r.method, r.path): r for r in routes}
        self.methods_by_path: dict[str, list[str]] = {}
        for route in routes:
            self.methods_by_path.setdefault(route.path, []).append(route.method)
        self.tls = tls
        self.on_response = on_response
        self.max_body_bytes = max_body_bytes
        super().__init__(address, _Handler)
        if tls is not None:
            self.socket = tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> SidecarHTTPServer:
        """Serve on a background thread."""
        self._thread = threading.Thread(
            target=self.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="aclstore-http",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that vanished mid-request is not news; anything else is logged once.
        _log.debug("connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "aclstore"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S
    server: SidecarHTTPServer
    peer_subject: PeerSubject | None = None

    def setup(self) -> None:
        with contextlib.suppress(OSError):
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(TLS_HANDSHAKE_TIMEOUT_S)
            self.request.do_handshake()
            cert = self.request.getpeercert()
            if cert:
                self.peer_subject = cert.get("subject")  # type: ignore[assignment]
        super().setup()

    # Every method goes through one dispatcher; unknown methods get a JSON 405/404.
    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def _dispatch(self) -> None:
        split = urlsplit(self.path)
        path = split.path
        route = self.server.routes.get((self.command, path))
        try:
            # Read the body even for a request we refuse, so the next one on the connection
            # starts at its request line.
            body = self._read_body()
        except _BodyError as exc:
            self.close_connection = True
            response = Response.json(error_json(exc.error, exc.message), exc.status)
        else:
            if route is None:
                response = self._no_route(path)
            else:
                request = HttpRequest(
                    self.command, path, parse_qs(split.query), self.headers, body,
                    self.client_address[0], self.peer_subject,
                )  # fmt: skip
                try:
                    response = route.handler(request)
                except Exception as exc:
                    response = error_response(exc)
        self._send(response, route.name if route is not None else "unrouted")

    def _no_route(self, path: str) -> Response:
        allowed = self.server.methods_by_path.get(path)
        if allowed is None:
            known = ", ".join(sorted(self.server.methods_by_path))
            return Response.json(
                error_json("NOT_FOUND", f"no route {path}; routes: {known}"), 404
            )
        return Response.json(
            error_json("METHOD_NOT_ALLOWED", f"{path} accepts {', '.join(sorted(allowed))}, "
                            f"not {self.command}"),
            405, Allow=", ".join(sorted(allowed)),
        )  # fmt: skip

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise _BodyError(
                411, "LENGTH_REQUIRED", "send the body with a Content-Length, not chunked"
            )
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            return b""
        try:
            length = int(length_text)
        except ValueError:
            length = -1
        if length < 0:
            raise _BodyError(400, "BAD_REQUEST", f"Content-Length {length_text!r} is not a length")
        if length > self.server.max_body_bytes:
            raise _BodyError(
                413, "PAYLOAD_TOO_LARGE",
                f"the body has {length} bytes; at most {self.server.max_body_bytes} per request",
            )  # fmt: skip
        body = self.rfile.read(length)
        if len(body) < length:
            raise _BodyError(
                400, "BAD_REQUEST", "the connection closed before the whole body arrived"
            )
        return body

    def _send(self, response: Response, route_name: str) -> None:
        reason = _REASONS.get(response.status, "")
        head = [
            f"HTTP/1.1 {response.status} {reason}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
        ]
        head.extend(f"{name}: {value}" for name, value in response.headers)
        if self.close_connection:
            head.append("Connection: close")
        payload = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if self.command != "HEAD":
            payload += response.body
        self.wfile.write(payload)
        if self.server.on_response is not None:
            self.server.on_response(route_name, response.status)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Protocol errors (bad request line, headers) answered as JSON too."""
        self.close_connection = True
        text = message or _REASONS.get(code, "error")
        if explain:
            text = f"{text}: {explain}"
        with contextlib.suppress(OSError):
            self._send(Response.json(error_json("BAD_HTTP_REQUEST", text), code), "unrouted")

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("%s - %s", self.address_string(), format % args)


class _BodyError(Exception):
    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


_REASONS: Final = {status.value: status.phrase for status in HTTPStatus}
