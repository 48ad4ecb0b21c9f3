"""The compatibility matrix: every reader version decodes every writer version.

Fixtures ``fixtures/events_vN.jsonl`` hold the bytes a format-N writer wrote (never
regenerated).  For each (reader, writer) pair a reader either gets exactly the event that was
written (upcast on read when the writer is older) or, when the event needs a newer format than
the reader's, a typed refusal naming the version: never a misread binding (KIP-290's hazard).
Expectations come from the fixtures' plain fields and from hand-written symbol tables of each
format, not from the codec under test.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader

import schemas
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import AvroEventCodec, EventCodec, JsonEventCodec, NewerFormatRequiredError
from store.codec.avro_codec import HEADER_SIZE
from store.events import (
    AclCreated,
    AclDeleted,
    ChangeEvent,
    ConfigAltered,
    binding_min_reader_version,
)

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"
VERSIONS = (1, 2, 3)

# What each format can name, from Kafka's history (hand-written; not read from the .avsc files).
KNOWN_SYMBOLS: dict[int, dict[str, set[str]]] = {
    1: {
        "eventType": {"ACL_CREATED", "ACL_DELETED"},
        "resourceType": {"TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"},
        "operation": {
            "ALL",
            "READ",
            "WRITE",
            "CREATE",
            "DELETE",
            "ALTER",
            "DESCRIBE",
            "CLUSTER_ACTION",
            "DESCRIBE_CONFIGS",
            "ALTER_CONFIGS",
            "IDEMPOTENT_WRITE",
        },
        "permissionType": {"ALLOW", "DENY"},
    },
}
KNOWN_SYMBOLS[2] = {**KNOWN_SYMBOLS[1], "patternType": {"LITERAL", "PREFIXED"}}
KNOWN_SYMBOLS[3] = {
    **KNOWN_SYMBOLS[2],
    "eventType": KNOWN_SYMBOLS[2]["eventType"] | {"CONFIG_ALTERED"},
    "resourceType": KNOWN_SYMBOLS[2]["resourceType"] | {"DELEGATION_TOKEN", "USER"},
    "operation": KNOWN_SYMBOLS[2]["operation"] | {"CREATE_TOKENS", "DESCRIBE_TOKENS"},
}
FIELDS = {
    1: {
        "schemaVersion",
        "minReaderVersion",
        "eventType",
        "actor",
        "requestId",
        "timeMs",
        "resourceType",
        "name",
        "principal",
        "host",
        "operation",
        "permissionType",
    },
}
FIELDS[2] = FIELDS[1] | {"patternType"}
FIELDS[3] = FIELDS[2] | {"config"}


def build_event(kind: str, fields: list[Any], version: int, index: int) -> ChangeEvent:
    """The event a fixture line describes in plain fields (what the writer was asked to write)."""
    common: dict[str, Any] = {
        "actor": "User:admin",
        "request_id": f"fixture-{index}",
        "time_ms": 1_700_000_000_000 + index,
        "schema_version": version,
    }
    if kind == "ConfigAltered":
        return ConfigAltered(name=fields[0], value=fields[1], **common)
    rt, name, pt, principal, host, op, perm = fields
    binding = AclBinding.of(
        ResourceType[rt],
        name,
        PatternType[pt],
        principal,
        host,
        AclOperation[op],
        AclPermissionType[perm],
    )
    return (AclCreated if kind == "AclCreated" else AclDeleted)(binding=binding, **common)


def fixtures(version: int) -> list[dict[str, Any]]:
    lines = (FIXTURES / f"events_v{version}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line]


def value_of(fixture: dict[str, Any], codec: str) -> bytes:
    return bytes.fromhex(fixture["avro"]) if codec == "avro" else fixture["json"].encode()


CODECS: dict[str, EventCodec] = {"avro": AvroEventCodec(), "json": JsonEventCodec()}
MATRIX = [(r, w, c) for r in VERSIONS for w in VERSIONS for c in CODECS]


def test_every_version_has_a_schema_file_and_fixtures() -> None:
    assert schemas.avro_versions() == VERSIONS
    for version in VERSIONS:
        assert fixtures(version), f"no fixtures for v{version}"


@pytest.mark.parametrize(("reader", "writer", "codec"), MATRIX)
def test_reader_decodes_writer(reader: int, writer: int, codec: str) -> None:
    for fixture in fixtures(writer):
        expected = build_event(fixture["kind"], fixture["fields"], writer, fixture["index"])
        value = value_of(fixture, codec)
        if expected.min_reader_version <= reader:
            decoded = CODECS[codec].decode(value, offset=fixture["index"], reader_version=reader)
            assert decoded == expected
        else:
            with pytest.raises(NewerFormatRequiredError) as caught:
                CODECS[codec].decode(value, offset=fixture["index"], reader_version=reader)
            assert caught.value.needed == expected.min_reader_version
            assert caught.value.offset == fixture["index"]


@pytest.mark.parametrize(("reader", "writer", "codec"), MATRIX)
def test_reader_shape_and_unknown_symbols(reader: int, writer: int, codec: str) -> None:
    for fixture in fixtures(writer):
        written_as, record = CODECS[codec].read_record(
            value_of(fixture, codec), reader_version=reader
        )
        assert written_as == writer == record["schemaVersion"]
        assert set(record) == FIELDS[reader]
        for field, known in KNOWN_SYMBOLS[reader].items():
            true_value = _true_symbol(fixture, field, writer)
            assert record[field] == (true_value if true_value in known else "UNKNOWN"), field


def _true_symbol(fixture: dict[str, Any], field: str, writer: int) -> str:
    kind, fields = fixture["kind"], fixture["fields"]
    if field == "eventType":
        return {"AclCreated": "ACL_CREATED", "AclDeleted": "ACL_DELETED"}.get(
            kind, "CONFIG_ALTERED"
        )
    if kind == "ConfigAltered":
        return "UNKNOWN"
    index = {"resourceType": 0, "patternType": 2, "operation": 5, "permissionType": 6}[field]
    return str(fields[index])


@pytest.mark.parametrize(
    ("reader", "writer"), [(r, w) for r in VERSIONS for w in VERSIONS if w < r]
)
def test_upcasting_agrees_with_avro_schema_resolution(reader: int, writer: int) -> None:
    """Two independent mechanisms: our upcast_vN_to_vN1 chain and fastavro's resolution."""
    writer_schema = parse_schema(schemas.avro_schema(writer))
    reader_schema = parse_schema(schemas.avro_schema(reader))
    for fixture in fixtures(writer):
        value = value_of(fixture, "avro")
        resolved = schemaless_reader(io.BytesIO(value[HEADER_SIZE:]), writer_schema, reader_schema)
        _, upcast = CODECS["avro"].read_record(value, reader_version=reader)
        assert upcast == resolved


@pytest.mark.parametrize(("reader", "writer"), [(r, w) for r in VERSIONS for w in VERSIONS])
def test_both_codecs_resolve_versions_identically(reader: int, writer: int) -> None:
    for fixture in fixtures(writer):
        _, from_avro = CODECS["avro"].read_record(value_of(fixture, "avro"), reader_version=reader)
        _, from_json = CODECS["json"].read_record(value_of(fixture, "json"), reader_version=reader)
        assert from_avro == from_json


@pytest.mark.parametrize("writer", VERSIONS)
def test_todays_writer_still_writes_the_fixture_bytes(writer: int) -> None:
    avro, js = AvroEventCodec(writer_version=writer), JsonEventCodec(writer_version=writer)
    for fixture in fixtures(writer):
        event = build_event(fixture["kind"], fixture["fields"], writer, fixture["index"])
        assert avro.encode(event).hex() == fixture["avro"]
        assert js.encode(event).decode() == fixture["json"]


def test_a_v1_reader_never_takes_a_prefixed_deny_for_a_literal_one() -> None:
    """KIP-290's downgrade hazard, made explicit."""
    prefixed_deny = next(
        f for f in fixtures(2) if f["fields"][2] == "PREFIXED" and f["fields"][6] == "DENY"
    )
    for codec in CODECS:
        _, record = CODECS[codec].read_record(value_of(prefixed_deny, codec), reader_version=1)
        assert "patternType" not in record and record["minReaderVersion"] == 2
        with pytest.raises(NewerFormatRequiredError, match="needs reader format version 2"):
            CODECS[codec].decode(value_of(prefixed_deny, codec), reader_version=1)


def test_fixture_expectations_cover_every_feature() -> None:
    acl_events = [e for e in _all_events() if not isinstance(e, ConfigAltered)]
    needed = {binding_min_reader_version(e.binding) for e in acl_events}
    assert needed == {1, 2, 3}
    assert any(isinstance(e, ConfigAltered) for e in _all_events())
    assert any(isinstance(e, AclDeleted) for e in _all_events())
    assert any(isinstance(e, AclCreated) for e in _all_events())


def _all_events() -> list[ChangeEvent]:
    return [build_event(f["kind"], f["fields"], 3, f["index"]) for f in fixtures(3)]
