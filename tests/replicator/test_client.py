"""The typed client against a stub HTTP server that answers what each test says: what it sends,
and how it reads an answer that follows the contract, one that does not, and an error body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from replicator.client import ClientConfig, StoreClient, StoreClientError
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.unit


class Stub:
    """One canned answer (status, JSON body) for every request; the requests it got."""

    def __init__(self) -> None:
        self.status, self.answer = 200, {}
        self.seen: list[tuple[str, str, Any]] = []


@pytest.fixture
def stub() -> Iterator[tuple[Stub, StoreClient]]:
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.seen.append(("POST", self.path, json.loads(self.rfile.read(length) or b"null")))
            body = json.dumps(state.answer).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = StoreClient(ClientConfig(url=f"http://127.0.0.1:{server.server_address[1]}"))
    try:
        yield state, client
    finally:
        client.close()
        server.shutdown()
        server.server_close()


BINDING = AclBinding.of(
    ResourceType.TOPIC, "t", PatternType.PREFIXED, "User:a", "*", AclOperation.READ,
    AclPermissionType.DENY,
)  # fmt: skip
BINDING_JSON = {
    "resourceType": "TOPIC", "resourceName": "t", "patternType": "PREFIXED", "principal": "User:a",
    "host": "*", "operation": "READ", "permissionType": "DENY",
}  # fmt: skip


def test_a_typed_call_sends_the_request_body_and_reads_the_answer(stub: tuple[Stub, StoreClient]) -> None:
    state, client = stub
    state.answer = {"bindings": [BINDING_JSON], "offset": 12, "fromANewerNode": True}
    answer = client.describe_acls(BINDING.to_filter(), min_offset=3)
    assert (answer.bindings, answer.offset) == ([BINDING], 12)
    assert state.seen == [("POST", "/v1/acls/describe", {"filter": BINDING_JSON, "minOffset": 3})]


def test_an_answer_that_breaks_the_contract_is_a_client_error_naming_the_field(
    stub: tuple[Stub, StoreClient],
) -> None:
    state, client = stub
    state.answer = {"bindings": [{**BINDING_JSON, "operation": "REED"}], "offset": 12}
    with pytest.raises(StoreClientError) as caught:
        client.describe_acls()
    assert "/v1/acls/describe does not follow the API" in caught.value.message
    assert "bindings[0].operation: 'REED' is not an operation" in caught.value.message


def test_an_error_body_becomes_the_error_and_its_message(stub: tuple[Stub, StoreClient]) -> None:
    state, client = stub
    state.status, state.answer = 403, {"error": "ClusterAuthorizationError", "message": "no"}
    with pytest.raises(StoreClientError) as caught:
        client.create_acls([BINDING])
    assert (caught.value.status, caught.value.error, caught.value.message) == (
        403, "ClusterAuthorizationError", "no"
    )  # fmt: skip
    state.answer = ["not", "an", "error", "body"]
    with pytest.raises(StoreClientError, match=r"^HTTP 403 Forbidden$"):
        client.create_acls([BINDING])
