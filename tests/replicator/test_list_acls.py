"""``/v1/acls/list`` through a node: streamed in bounded memory, failures failing, offsets given.

The node runs in-process and :class:`StoreClient` reads from it, so ``tracemalloc`` sees both
ends: a listing many times larger than what either end may hold must pass through with the
traced peak far below its size.  Where the index is replaced by a generator (to make a listing
large, or to fail it midway), the replica's ``list_acls`` is the seam.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from sidecar_support import Raw, admin_client, binding, create_acls, start_node

import cli
from replicator.client import StoreClientError
from replicator.contract.listing import LineWriter
from replicator.errors import ReplicaClosedError
from replicator.index.listing import ListedResource
from replicator.replica import Answer
from replicator.server import service
from replicator.server.node import Node
from store.acl import AclOperation, ResourceType

pytestmark = pytest.mark.unit


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = start_node(tmp_path / "node", audit=None)
    yield n
    n.stop()


def synthetic(resources: int, acls: int, *, fail_after: int | None = None) -> Iterator[ListedResource]:
    """``resources`` patterns of ``acls`` ACLs each, made as they are asked for."""
    for i in range(resources):
        if fail_after is not None and i == fail_after:
            raise ReplicaClosedError("the replica is closed")
        rows = [(f"User:svc{i * acls + j}", "*", 3, 3) for j in range(acls)]
        yield ListedResource(2, f"team{i // 40}.app{i % 40}.events", 3, rows)


def stub_listing(node: Node, monkeypatch: pytest.MonkeyPatch, make: object) -> None:
    assert node.replica is not None

    def list_acls(
        filters: object, *, min_offset: int | None = None, timeout: float | None = None,
        after: object = None,
    ) -> Answer:
        assert after is None  # these tests read from the start
        return Answer(make(), 41, 0)  # type: ignore[operator]

    monkeypatch.setattr(node.replica, "list_acls", list_acls)


def test_a_listing_far_larger_than_either_end_holds_streams_through(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    resources, acls = 20_000, 5
    writer = LineWriter()
    size = sum(len(writer.resource_line(r)) for r in synthetic(resources, acls))
    stub_listing(node, monkeypatch, lambda: synthetic(resources, acls))
    with admin_client(node) as client:
        client.status()  # the connection is open before tracing starts
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            listing = client.list_acls()
            count = sum(len(resource.acls) for resource in listing)
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
    assert count == resources * acls and listing.offset == 41 and listing.bindings == count
    # Node and client together never held more than a small part of the answer (5 MB here):
    # a few 64 KB chunks and lines at each end.
    assert size > 4_000_000
    assert peak < size / 8, (peak, size)


def test_a_real_listing_is_chunked_and_ends_with_the_replicas_offset(node: Node) -> None:
    with admin_client(node) as client:
        offset = create_acls(client, [
            binding(ResourceType.TOPIC, f"t{i}", f"User:u{j}", AclOperation.READ)
            for i in range(300) for j in range(4)
        ])  # fmt: skip
        token = client.config.token
    raw = Raw(node)
    status, body, response = raw.call(
        "POST", "/v1/acls/list", b"", {"Authorization": f"Bearer {token}"}
    )
    raw.close()
    assert status == 200
    assert response.getheader("Transfer-Encoding") == "chunked"
    assert response.getheader("Content-Type") == "application/x-ndjson"
    assert body.endswith(b'{"offset": %d, "bindings": 1200}\n' % offset)
    assert node.replica is not None and node.replica.position.offset == offset


@pytest.mark.parametrize(
    ("failure", "says"),
    [
        (ReplicaClosedError("the replica is closed"), "ReplicaClosedError: the replica is closed"),
        (RuntimeError("disk on fire"), "the listing failed after 2500 ACL(s); see the node's log"),
    ],
)
def test_a_failure_midway_is_an_error_never_a_shorter_listing(
    node: Node, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    failure: Exception, says: str,
) -> None:  # fmt: skip
    def failing() -> Iterator[ListedResource]:
        yield from synthetic(500, 5)
        raise failure

    stub_listing(node, monkeypatch, failing)
    with admin_client(node) as client:
        listing = client.list_acls()
        seen = 0
        with pytest.raises(StoreClientError) as caught:
            for resource in listing:
                seen += len(resource.acls)
        assert seen == 2500 and listing.offset is None
        assert says.split(": ")[-1] in caught.value.message
        assert client.status().offset >= -1  # the client connects again afterwards
    assert node.info is not None
    admin = str(node.info.credential.properties_path)
    code = cli.main(["acls", "--store", node.url, "--command-config", admin, "--list"])
    out, err = capsys.readouterr()
    assert code == 1 and "(log offset" not in err
    assert out.count("Current ACLs for resource") == 500
    assert out.splitlines()[-1].startswith("Error while executing ACL command: listing the ACLs of")


def test_a_body_cut_short_is_an_error(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    def cut(resources: Iterator[ListedResource], offset: int) -> Iterator[bytes]:
        chunks = service_chunks(resources, offset)
        yield next(chunks)
        raise RuntimeError("the node died")  # the HTTP layer closes without the last chunk

    service_chunks = service.listing_chunks
    stub_listing(node, monkeypatch, lambda: synthetic(20_000, 5))
    monkeypatch.setattr(service, "listing_chunks", cut)
    with admin_client(node) as client:
        listing = client.list_acls()
        with pytest.raises(StoreClientError, match=r"broke off|reading the listing failed"):
            for _ in listing:
                pass
        assert listing.offset is None


def test_a_listing_is_refused_before_it_starts_as_describe_is(node: Node) -> None:
    raw = Raw(node)
    status, body = raw.post("/v1/acls/list", {})
    assert status == 401 and body["error"] == "UnauthenticatedError"
    with admin_client(node) as client:
        with pytest.raises(StoreClientError) as beyond:
            client.list_acls(min_offset=1_000)
        assert beyond.value.status == 503 and "never written" in beyond.value.message
        with pytest.raises(StoreClientError) as bad:
            client.call("POST", "/v1/acls/list", {"filters": [{"resourceType": "TOPIX"}]})
        assert bad.value.status == 400
    raw.close()
