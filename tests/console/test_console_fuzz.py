"""Property-based fuzz of the console's calls: whatever a session sends, never a server error."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
from console_support import admin_token
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sidecar_support import start_node

from replicator.server.node import Node

pytestmark = pytest.mark.slow  # a few hundred requests against a live node

KEYS = ["principal", "resourceType", "resourceName", "patternType", "skip", "limit", "minOffset",
        "creates", "deletes", "bindings", "filters", "operation", "host"]  # fmt: skip
NEAR = ["TOPIC", "topic", "CLUSTER", "ANY", "any", "match", "MATCH", "prefixed", "User:a", "a",
        "*", "", " ", "\ud800", "kafka-cluster", "UNKNOWN"]  # fmt: skip
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(NEAR), st.text(max_size=8), st.floats(allow_nan=False),
)  # fmt: skip
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3), max_leaves=8)  # fmt: skip
bodies = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), values, max_size=6).map(
        lambda d: json.dumps(d).encode()
    ),
    values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40),
)
PATHS = ["/ui/api/acls/page", "/ui/api/v1/acls/dry-run", "/ui/api/v1/acls/delete", "/ui/api/v1/acls"]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, str]]:
    node = start_node(tmp_path_factory.mktemp("fuzz") / "node")
    try:
        assert node.server is not None
        connection = http.client.HTTPConnection("127.0.0.1", node.server.port, timeout=30)
        connection.request("POST", "/ui/login", body=f"token={admin_token(node)}",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
        response = connection.getresponse()
        response.read()
        assert response.status == 303
        yield node, response.getheader("Set-Cookie", "").split(";")[0]
    finally:
        node.stop()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), body=bodies)
def test_no_console_call_is_a_server_error(session: tuple[Node, str], path: str, body: bytes) -> None:
    node, cookie = session
    assert node.server is not None
    connection = http.client.HTTPConnection("127.0.0.1", node.server.port, timeout=30)
    try:
        connection.request("POST", path, body=body, headers={
            "Cookie": cookie, "X-Aclstore-Console": "1", "Content-Type": "application/json"})  # fmt: skip
        response = connection.getresponse()
        answer: Any = json.loads(response.read())
    finally:
        connection.close()
    assert response.status < 500, (path, body, answer)
    if response.status >= 400:
        assert answer["error"] and answer["message"], answer
