"""Which process a new connection goes to, from its first bytes (worked by hand)."""

from __future__ import annotations

import pytest

from replicator.server.workers.routing import WORKER_PATHS, first_path, served_by_node

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("peeked", "path"),
    [
        (b"POST /v1/authorize HTTP/1.1\r\nHost: x\r\n", "/v1/authorize"),
        (b"GET /v1/acls/list?after=a%20b&x=1 HTTP/1.1\r\n", "/v1/acls/list"),
        (b"GET /ui/ HTTP/1.1", "/ui/"),
        (b"POST /v1/authorize", None),  # the target not all there yet
        (b"POST", None),
        (b"", None),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", None),  # a TLS ClientHello
        (b"BREW /pot HTTP/1.1\r\n", None),  # not a method the node serves
        (b"GET http://host/v1/acls HTTP/1.1\r\n", None),  # absolute form: left to a worker
        (b"GET /\xff HTTP/1.1\r\n", None),
    ],
)
def test_first_path(peeked: bytes, path: str | None) -> None:
    assert first_path(peeked) == path


def test_a_plugins_first_requests_and_unreadable_starts_go_to_workers_the_rest_to_the_node() -> None:
    assert {"/v1/authorize", "/v1/authorize-by-resource-type", "/v1/authorize-request",
            "/v1/offset/wait", "/v1/status", "/healthz", "/readyz"} == WORKER_PATHS  # fmt: skip
    for path in WORKER_PATHS:
        assert not served_by_node(f"POST {path} HTTP/1.1\r\n".encode())
        assert not served_by_node(f"GET {path}?x=1 HTTP/1.1\r\n".encode())
    for path in ("/v1/acls", "/v1/acls/delete", "/v1/configs", "/metrics", "/ui/acls", "/v1/authorize/x",
                 "/v1/authorizes"):  # fmt: skip
        assert served_by_node(f"POST {path} HTTP/1.1\r\n".encode()), path
    assert not served_by_node(b"\x16\x03\x01")
    assert not served_by_node(b"POST /v1/acls")
