"""The streamed listing's contract: its request, the lines the node writes and a client reads.

The lines are written by :class:`LineWriter` from the node's raw values, checked against the
schemas of the checked-in document, read back with the declared messages' own parsers and with
:class:`ListingReader` (which must agree), and every way a listing can fail must fail the read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from schema_support import violations
from test_contract import _known_fields

from replicator.contract.answers import error_json
from replicator.contract.fields import BadRequestError
from replicator.contract.listing import (
    AclListingEnd,
    AclResourceLine,
    LineWriter,
    ListingError,
    ListingReader,
    error_line,
    list_request,
)
from store.acl import AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "replicator" / "openapi.json").read_text(encoding="utf-8"))
SCHEMAS: dict[str, Any] = DOC["components"]["schemas"]
LINE = DOC["paths"]["/v1/acls/list"]["post"]["responses"]["200"]["content"]["application/x-ndjson"]["schema"]


@dataclass(frozen=True)
class Raw:
    """A resource as the node's index lists it (Kafka codes)."""

    resource_type: int
    name: str
    pattern_type: int
    acls: list[tuple[str, str, int, int]]


TOPIC, GROUP, LITERAL, PREFIXED = 2, 3, 3, 4
READ, ALL, ALLOW, DENY = 3, 2, 3, 2
RESOURCES = [
    Raw(TOPIC, 'we"ird\\ \u00e9 \U0001f600 \ud800 \x01', LITERAL,
        [("User:\u00e9", "*", READ, ALLOW), ("User:b", "10.0.0.1", ALL, DENY)]),
    Raw(GROUP, "", PREFIXED, [("User:*", "*", READ, DENY)]),
]  # fmt: skip


def written(*, end: bool = True) -> list[bytes]:
    writer = LineWriter()
    lines = [writer.resource_line(r) for r in RESOURCES]
    return [*lines, writer.end_line(7)] if end else lines


def test_the_request_schema_lists_exactly_the_fields_its_parser_accepts() -> None:
    assert set(SCHEMAS["ListAclsRequest"]["properties"]) == _known_fields(list_request, {})
    assert list_request({}).filters == [AclBindingFilter()]
    with pytest.raises(BadRequestError, match="filters is empty"):
        list_request({"filters": []})


def test_written_lines_fit_their_schemas_and_read_back_as_written() -> None:
    lines = written()
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)
    assert all(line.isascii() for line in lines)  # every other character escaped
    values = [json.loads(line) for line in lines]
    for value in values:
        assert violations(value, LINE, DOC) == []
    first = AclResourceLine.from_json(values[0])
    assert (first.resource_type, first.resource_name, first.pattern_type) == (
        ResourceType.TOPIC, RESOURCES[0].name, PatternType.LITERAL,
    )  # fmt: skip
    assert first.acls == [
        ("User:\u00e9", "*", AclOperation.READ, AclPermissionType.ALLOW),
        ("User:b", "10.0.0.1", AclOperation.ALL, AclPermissionType.DENY),
    ]
    assert AclListingEnd.from_json(values[-1]) == AclListingEnd(offset=7, bindings=3)
    reader = ListingReader(iter(lines))
    read = [(r.resource_type, r.name, r.pattern_type, [list(a) for a in r.acls]) for r in reader]
    assert read == [
        (v["resourceType"], v["resourceName"], v["patternType"], v["acls"]) for v in values[:-1]
    ]
    assert (reader.offset, reader.bindings) == (7, 3)


def test_a_reader_takes_lines_cut_anywhere_between_chunks() -> None:
    body = b"".join(written())
    for size in (1, 3, 17, len(body)):
        reader = ListingReader(body[i : i + size] for i in range(0, len(body), size))
        assert sum(len(r.acls) for r in reader) == 3 and reader.offset == 7


def test_an_error_line_fails_the_listing_with_the_nodes_error() -> None:
    failure = error_line(error_json("ReplicaClosedError", "the replica is closed"))
    assert violations(json.loads(failure), LINE, DOC) == []
    reader = ListingReader(iter([*written(end=False), failure]))
    seen = []
    with pytest.raises(ListingError) as caught:
        seen.extend(reader)
    assert len(seen) == 2 and reader.offset is None
    assert (caught.value.error, caught.value.message) == ("ReplicaClosedError", "the replica is closed")


@pytest.mark.parametrize(
    "body",
    [
        b"".join(written(end=False)),  # no end line: cut between lines
        b"".join(written())[:-5],  # cut inside the end line
        b"".join(written(end=False))[:-9],  # cut inside a resource line
        b"",
        b"".join(written()) + b"".join(written(end=False)),  # lines after the end
        b'{"resourceType":"TOPIC","resourceName":"t","patternType":"LITERAL","acls":[["a","*","READ"]]}\n',
        b'{"resourceType":"TOPIC","resourceName":"t","patternType":"LITERAL","acls":[["a","*",[],"X"]]}\n',
        b'{"resourceType":"TOPIC","resourceName":"t","patternType":"LITERAL","acls":[["a","*","REED","ALLOW"]]}\n',
        b'{"resourceType":"TOPIX","resourceName":"t","patternType":"LITERAL","acls":[]}\n',
        b'{"offset":"7","bindings":0}\n',
        b"[1]\n",
    ],
)
def test_a_listing_that_breaks_off_or_breaks_the_contract_fails(body: bytes) -> None:
    with pytest.raises(ListingError):
        list(ListingReader(iter([body])))
