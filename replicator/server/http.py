"""The sidecar's HTTP/1.1 server: the standard library's ``ThreadingHTTPServer``, kept lean.

One thread per connection, keep-alive by default (a broker holds one connection open and sends
request after request), ``TCP_NODELAY`` and each response written in a single ``send`` so that
no answer waits on Nagle's algorithm.  Routes are exact ``(method, path)`` pairs; bodies are
JSON with a ``Content-Length`` (no chunked uploads) up to a bound.  An answer too large to build
(a listing) is written as it is made, HTTP/1.1 chunked (:meth:`Response.streamed`).

A client cannot hold the node's threads (:class:`HttpLimits`): a request's line and headers
must arrive within a deadline counted from its first byte and its body within a second one
(a slow-loris client dribbling bytes is cut off, however steadily it sends), an idle
keep-alive connection is closed after a while, and connections beyond a total or per-address
bound are closed at once, as Kafka's ``max.connections`` and ``max.connections.per.ip`` do.

Errors never escape as a 500 unless they are bugs: :func:`status_for` maps the store's typed
errors to 4xx/503 answers whose JSON body names the error and its message.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from replicator.contract.answers import error_json
from replicator.contract.fields import dumps, parse_json
from replicator.errors import ConsistencyTimeoutError, ReplicaError
from replicator.server.errors import CallerNotAllowedError, UnauthenticatedError
from store.desired.errors import ScopeChangedError
from store.errors import (
    AuthorizationError,
    AuthorizerNotReadyError,
    ClusterAuthorizationError,
    InvalidConfigError,
    KafkaErrorCode,
    StoreError,
)

MAX_BODY_BYTES: Final = 8 * 1024 * 1024
IDLE_TIMEOUT_S: Final = 120.0
TLS_HANDSHAKE_TIMEOUT_S: Final = 10.0
JSON: Final = "application/json"
_REFUSAL_LOG_INTERVAL_S: Final = 10.0
_POLL_INTERVAL_S: Final = 0.05
_DRAIN_POLL_S: Final = 0.01
"""How often the accept loop looks for a stop: :meth:`SidecarHTTPServer.stop` waits up to this."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpLimits:
    """What one client may hold of the server; every bound refuses or closes, never queues."""

    max_body_bytes: int = MAX_BODY_BYTES
    header_timeout_s: float = 10.0
    """From a request's first byte to the end of its headers."""
    body_timeout_s: float = 30.0
    """From a request's first byte to the end of its body."""
    idle_timeout_s: float = IDLE_TIMEOUT_S
    """A keep-alive connection waiting this long for its next request is closed."""
    tls_handshake_timeout_s: float = TLS_HANDSHAKE_TIMEOUT_S
    max_connections: int = 1024
    max_connections_per_address: int = 256
    """Loopback counts as one address per loopback IP: the broker next door opens a pool."""

    def __post_init__(self) -> None:
        for name in ("header_timeout_s", "body_timeout_s", "idle_timeout_s",
                     "tls_handshake_timeout_s", "max_body_bytes", "max_connections",
                     "max_connections_per_address"):  # fmt: skip
            if getattr(self, name) <= 0:
                raise InvalidConfigError(f"HTTP limit {name}={getattr(self, name)!r}: must be > 0")
        if self.body_timeout_s < self.header_timeout_s:
            raise InvalidConfigError(
                f"HTTP limit body_timeout_s={self.body_timeout_s} is shorter than "
                f"header_timeout_s={self.header_timeout_s}; both count from the first byte"
            )

_log = logging.getLogger("aclstore.http")

PeerSubject = tuple[tuple[tuple[str, str], ...], ...]



MAX_HEADER_LINE: Final = 65_536
"""The longest header line (the standard library's bound)."""
MAX_HEADERS: Final = 100
"""The most header fields in a request (the standard library's bound)."""


class HeaderError(Exception):
    """A request's header section that cannot be read: the status and the reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class Headers:
    """A request's header fields as they arrived: names compare without case, :meth:`get`
    gives the first field of a name (as ``email.message.Message`` does), :meth:`items` every
    field in order.

    Read by :func:`read_headers`, a plain split of each line: the standard library's reading
    goes through the e-mail parser, which cost about as much as deciding a request."""

    __slots__ = ("_fields", "_first")

    def __init__(self, fields: Sequence[tuple[str, str]] = ()) -> None:
        self._fields = list(fields)
        self._first: dict[str, str] = {}
        for name, value in self._fields:
            self._first.setdefault(name.lower(), value)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._first.get(name.lower(), default)

    def get_all(self, name: str) -> list[str]:
        wanted = name.lower()
        return [value for key, value in self._fields if key.lower() == wanted]

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._first

    def __len__(self) -> int:
        return len(self._fields)


def read_headers(readline: Callable[[int], bytes]) -> Headers:
    """The header section up to its empty line, read with ``readline(limit)``.

    Refused (:class:`HeaderError`): a line over :data:`MAX_HEADER_LINE` or more than
    :data:`MAX_HEADERS` fields (431, as the standard library answers); a line that is not
    ``name: value``, a name with white space, or a folded line (400: RFC 9112 lets a server
    refuse obsolete line folding)."""
    fields: list[tuple[str, str]] = []
    while True:
        line = readline(MAX_HEADER_LINE + 1)
        if len(line) > MAX_HEADER_LINE:
            raise HeaderError(431, "Line too long")
        if line in (b"\r\n", b"\n", b""):
            return Headers(fields)
        if len(fields) == MAX_HEADERS:
            raise HeaderError(431, f"Too many headers: more than {MAX_HEADERS}")
        text = line.decode("latin-1").rstrip("\r\n")
        name, colon, value = text.partition(":")
        if not colon or not name or name != name.strip() or " " in name or "\t" in name:
            what = "a folded header line" if text[:1] in (" ", "\t") else f"header line {text[:80]!r}"
            raise HeaderError(400, f"Bad request: {what} is not name: value")
        fields.append((name, value.strip(" \t")))

@dataclass(slots=True)
class HttpRequest:
    """One request as a route sees it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: Headers
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
    chunks: Iterator[bytes] | None = None
    """A body written as it is made (chunked) instead of ``body``: see :meth:`streamed`."""
    length: int | None = None
    """With ``chunks``: the body's length, sent as ``Content-Length`` with the chunks written
    as they come (no chunked coding); a producer that ends short closes the connection."""

    @classmethod
    def json(cls, value: Any, status: int = 200, **headers: str) -> Response:
        extra = tuple((k.replace("_", "-"), v) for k, v in headers.items())
        return cls(status, dumps(value), JSON, extra)

    @classmethod
    def streamed(
        cls, chunks: Iterator[bytes], content_type: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> Response:
        """A 200 whose body is written chunk by chunk as ``chunks`` yields (HTTP/1.1 chunked
        transfer coding), the socket's send bounding how far the producer runs ahead of the
        client.  Whatever goes wrong once the 200 is sent must be said in the body: an
        exception out of ``chunks`` closes the connection without the last chunk, which a
        client reads as a body cut short."""
        return cls(200, b"", content_type, headers, chunks)


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
    if isinstance(exc, ScopeChangedError):  # a stale plan: the state moved on (Conflict)
        return 409
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
        limits: HttpLimits | None = None,
        fallback: RouteHandler | None = None,
        forwarded_by: str | None = None,
        bind: bool = True,
    ) -> None:
        """``fallback`` answers every request no route takes (instead of a 404 or 405): a
        decision worker forwards those to its node.  With ``forwarded_by`` (a secret) the
        server serves only decision workers: each request must carry the secret, and the
        caller's address and certificate subject are the ones the worker names
        (:data:`FORWARDED_FOR`).  ``bind=False`` opens no listener: connections come from
        :meth:`process_request` (a node's decision workers receive them so)."""
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
        self.limits = limits or HttpLimits()
        self.max_body_bytes = self.limits.max_body_bytes
        self.fallback = fallback
        self.forwarded_by = forwarded_by
        self._open_lock = threading.Lock()
        self._open_total = 0
        self._open_by_address: dict[str, int] = {}
        self._refused = 0
        self._refusal_logged = -_REFUSAL_LOG_INTERVAL_S
        self._draining = False
        self._idle: set[socket.socket] = set()
        super().__init__(address, _Handler, bind_and_activate=bind)
        if tls is not None and bind:
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
            kwargs={"poll_interval": _POLL_INTERVAL_S},
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

    @property
    def open_connections(self) -> int:
        with self._open_lock:
            return self._open_total

    def drain(self, timeout_s: float) -> bool:
        """Answer no further request: each connection closes after the request it is in the
        middle of, if any (an idle one closes now), and a connection handed over later is
        closed at once.  Waits up to ``timeout_s`` for every connection to close; True when
        all did.  A decision worker drains before it closes what its answers are made of, so
        no answer is made from a closed index or spool."""
        with self._open_lock:
            self._draining = True
            idle = list(self._idle)
        for connection in idle:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout_s
        while self.open_connections and time.monotonic() < deadline:
            time.sleep(_DRAIN_POLL_S)
        return self.open_connections == 0

    def awaits_request(self, connection: socket.socket, waiting: bool) -> bool:
        """Mark ``connection`` as waiting for its next request (or no longer); False, and not
        marked, once the server drains: the connection is to close."""
        with self._open_lock:
            if not waiting:
                self._idle.discard(connection)
                return True
            if self._draining:
                return False
            self._idle.add(connection)
            return True

    def process_request(self, request: Any, client_address: Any) -> None:
        """Start the connection's thread, or close it at once when a connection bound is hit
        or the server drains."""
        address = str(client_address[0])
        limits = self.limits
        with self._open_lock:
            per_address = self._open_by_address.get(address, 0)
            refused = (
                self._open_total >= limits.max_connections
                or per_address >= limits.max_connections_per_address
            )
            draining = self._draining
            if not refused and not draining:
                self._open_total += 1
                self._open_by_address[address] = per_address + 1
        if refused or draining:
            self.shutdown_request(request)
            if refused:
                self._log_refusal(address, per_address)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release(address)
            raise

    def _log_refusal(self, address: str, per_address: int) -> None:
        # Once per interval: a client hammering the bound must not flood the log as well.
        self._refused += 1
        now = time.monotonic()
        if now - self._refusal_logged < _REFUSAL_LOG_INTERVAL_S:
            return
        limits = self.limits
        _log.warning(
            "closed %d connection(s) over the bounds, the last from %s: %d open from it (at most "
            "%d), %d in all (at most %d)", self._refused, address, per_address,
            limits.max_connections_per_address, self._open_total, limits.max_connections,
        )  # fmt: skip
        self._refused, self._refusal_logged = 0, now

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(str(client_address[0]))

    def _release(self, address: str) -> None:
        with self._open_lock:
            self._open_total -= 1
            left = self._open_by_address.get(address, 1) - 1
            if left > 0:
                self._open_by_address[address] = left
            else:
                self._open_by_address.pop(address, None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that vanished mid-request is not news; anything else is logged once.
        _log.debug("connection from %s ended with an error", client_address, exc_info=True)


class _DeadlineReader(io.RawIOBase):
    """The connection's bytes, each receive bounded by the idle timeout and the deadline.

    A socket timeout alone bounds each receive, so a client sending a byte now and then holds
    the connection forever; the deadline bounds the whole request.
    """

    def __init__(self, sock: socket.socket, idle_timeout_s: float) -> None:
        super().__init__()
        self.sock = sock
        self.idle_timeout_s = idle_timeout_s
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        timeout = self.idle_timeout_s
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout <= 0:
                raise TimeoutError("the request did not arrive within its deadline")
        self.sock.settimeout(timeout)
        return self.sock.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "aclstore"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S
    server: SidecarHTTPServer
    peer_subject: PeerSubject | None = None
    _reader: _DeadlineReader
    _started = 0.0

    def setup(self) -> None:
        limits = self.server.limits
        with contextlib.suppress(OSError):
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(limits.tls_handshake_timeout_s)
            self.request.do_handshake()
            cert = self.request.getpeercert()
            if cert:
                self.peer_subject = cert.get("subject")  # type: ignore[assignment]
        super().setup()
        self._reader = _DeadlineReader(self.connection, limits.idle_timeout_s)
        self._buffered = io.BufferedReader(self._reader)
        self.rfile.close()  # the socket's own file object: only the deadline reader reads
        self.rfile = self._buffered

    def parse_request(self) -> bool:
        """The request line, as the standard library reads it (HTTP/1.0 and 1.1; no 0.9),
        and the header section through :func:`read_headers`."""
        self.command = ""
        self.request_version = version = self.default_request_version
        self.close_connection = True
        raw: bytes = self.raw_requestline  # type: ignore[attr-defined]  # set by handle_one_request
        self.requestline = str(raw, "iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if not words:
            return False
        if len(words) != 3:
            self.send_error(400, f"Bad request syntax ({self.requestline[:200]!r})")
            return False
        version = words[2]
        try:
            if not version.startswith("HTTP/"):
                raise ValueError
            major, minor = version.split("/", 1)[1].split(".")
            if not (major.isdigit() and minor.isdigit() and len(major) <= 10 and len(minor) <= 10):
                raise ValueError
            number = (int(major), int(minor))
        except ValueError:
            self.send_error(400, f"Bad request version ({version[:40]!r})")
            return False
        if number >= (2, 0):
            self.send_error(505, f"Invalid HTTP version ({major}.{minor})")
            return False
        self.request_version = version
        self.close_connection = number < (1, 1)
        self.command, self.path = words[0], words[1]
        if self.path.startswith("//"):
            self.path = "/" + self.path.lstrip("/")
        try:
            self.headers = read_headers(self.rfile.readline)  # type: ignore[assignment]
        except HeaderError as exc:
            self.send_error(exc.status, exc.reason)
            return False
        connection = (self.headers.get("Connection") or "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive":
            self.close_connection = False
        expect = (self.headers.get("Expect") or "").lower()
        if expect == "100-continue" and number >= (1, 1):
            return self.handle_expect_100()
        return True

    def handle_one_request(self) -> None:
        """Wait idle for a request's first byte, then give the request its deadlines (none
        once the server drains: :meth:`SidecarHTTPServer.drain`)."""
        self._reader.deadline = None
        if not self.server.awaits_request(self.connection, True):
            self.close_connection = True
            return
        try:
            first = self._buffered.peek(1)
        except (TimeoutError, OSError):
            first = b""
        finally:
            self.server.awaits_request(self.connection, False)
        if not first:  # closed by the client, idle for too long, or the server drains
            self.close_connection = True
            return
        self._started = time.monotonic()
        self._reader.deadline = self._started + self.server.limits.header_timeout_s
        super().handle_one_request()

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self._reader.close()

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
            request = HttpRequest(
                self.command, path, parse_qs(split.query), self._headers(), body,
                self.client_address[0], self.peer_subject,
            )  # fmt: skip
            handler = route.handler if route is not None else self.server.fallback
            try:
                if self.server.forwarded_by is not None:
                    _as_forwarded(request, self.server.forwarded_by)
                response = self._no_route(path) if handler is None else handler(request)
            except Exception as exc:
                response = error_response(exc)
        name = route.name if route is not None else FORWARDED if self.server.fallback else "unrouted"
        self._send(response, name)

    def _headers(self) -> Headers:
        assert isinstance(self.headers, Headers)  # read by parse_request
        return self.headers

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
        self._reader.deadline = self._started + self.server.limits.body_timeout_s
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
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            raise _BodyError(
                408, "REQUEST_TIMEOUT",
                f"the body of {length} bytes did not arrive within "
                f"{self.server.limits.body_timeout_s} s of the request's first byte",
            ) from None  # fmt: skip
        if len(body) < length:
            raise _BodyError(
                400, "BAD_REQUEST", "the connection closed before the whole body arrived"
            )
        return body

    def _send(self, response: Response, route_name: str) -> None:
        reason = _REASONS.get(response.status, "")
        if response.chunks is None:
            length = f"Content-Length: {len(response.body)}"
        elif response.length is not None:
            length = f"Content-Length: {response.length}"
        else:
            length = "Transfer-Encoding: chunked"
        head = [
            f"HTTP/1.1 {response.status} {reason}",
            f"Content-Type: {response.content_type}",
            length,
        ]
        head.extend(f"{name}: {value}" for name, value in response.headers)
        if self.close_connection:
            head.append("Connection: close")
        payload = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if self.command != "HEAD":
            payload += response.body
        # sendall's timeout bounds the whole answer, for a client that does not read it
        self.connection.settimeout(self.server.limits.idle_timeout_s)
        self.wfile.write(payload)
        if self.server.on_response is not None:
            self.server.on_response(route_name, response.status)
        if response.chunks is not None and self.command != "HEAD":
            if response.length is None:
                self._send_chunks(response.chunks)
            else:
                self._send_sized(response.chunks, response.length)

    def _send_chunks(self, chunks: Iterator[bytes]) -> None:
        """The body, chunk by chunk (each send bounded by the idle timeout, for a client that
        stops reading), then the last chunk.  A failure of the producer or of the socket
        closes the connection without the last chunk: the client sees the body cut short."""
        try:
            for chunk in chunks:
                if chunk:
                    self.wfile.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client went away or stopped reading
            self.close_connection = True
            _log.debug("a streamed answer to %s was cut", self.client_address[0], exc_info=True)
        except Exception:
            self.close_connection = True
            _log.exception("a streamed answer to %s failed; its body was cut", self.client_address[0])
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()  # a generator cut short releases what it holds (a snapshot) now

    def _send_sized(self, chunks: Iterator[bytes], length: int) -> None:
        """A body of a known ``length`` written as ``chunks`` come; closes the connection when
        they end short of it or fail (the client sees the body cut short)."""
        sent = 0
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
                sent += len(chunk)
        except Exception:
            _log.debug("a relayed answer to %s was cut", self.client_address[0], exc_info=True)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        if sent != length:
            self.close_connection = True

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


FORWARDED: Final = "forwarded"
"""The route name of a request a decision worker forwarded to its node."""
FORWARD_SECRET: Final = "Aclstore-Worker-Secret"
FORWARDED_FOR: Final = "Aclstore-Forwarded-For"
FORWARDED_SUBJECT: Final = "Aclstore-Forwarded-Subject"


def _as_forwarded(request: HttpRequest, secret: str) -> None:
    """The caller a decision worker forwarded ``request`` for: refused without the worker's
    secret, so no one else can claim an address or a certificate here."""
    given = request.headers.get(FORWARD_SECRET) or ""
    if not hmac.compare_digest(given.encode(), secret.encode()):
        raise CallerNotAllowedError(
            "this listener serves the node's decision workers only; call the node's address"
        )
    request.address = request.headers.get(FORWARDED_FOR) or request.address
    subject = request.headers.get(FORWARDED_SUBJECT)
    request.peer_subject = None if not subject else _subject(json.loads(subject))


def _subject(value: Any) -> PeerSubject:
    return tuple(tuple((str(k), str(v)) for k, v in rdn) for rdn in value)


class _BodyError(Exception):
    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


_REASONS: Final = {status.value: status.phrase for status in HTTPStatus}
