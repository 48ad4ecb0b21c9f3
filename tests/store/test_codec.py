"""Codecs: Avro single-object encoding, the KIP-290 JSON superset, keys, and corrupt input."""

from __future__ import annotations

import io
import json
import struct

import pytest
from fastavro import parse_schema, schemaless_writer
from fastavro.schema import fingerprint, to_parsing_canonical_form
from hypothesis import given, settings
from hypothesis import strategies as st

import schemas
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.codec import (
    AvroEventCodec,
    ConfigKey,
    EventCodec,
    EventFormatError,
    JsonEventCodec,
    RecordDecodeError,
    UndecodableRecordError,
    UnknownWriterSchemaError,
    binding_key,
    config_key,
    decode_event,
    event_key,
    parse_key,
)
from store.codec.avro_acl_writer import compile_acl_writer
from store.codec.avro_codec import schema_fingerprint
from store.codec.fingerprint import crc64_avro
from store.errors import InvalidRequestError
from store.events import AclCreated, AclDeleted, ConfigAltered, downcast_to, to_record
from tests.store.samples import binding, created

pytestmark = pytest.mark.unit

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType
CODECS: list[EventCodec] = [AvroEventCodec(), JsonEventCodec()]


def _signed_to_unsigned(value: int) -> int:
    return value & 0xFFFF_FFFF_FFFF_FFFF


# Apache Avro's published CRC-64-AVRO vectors (share/test/data/schema-tests.txt), given there
# as signed Java longs.
@pytest.mark.parametrize(
    ("canonical", "published"),
    [
        ('"null"', 7195948357588979594),
        ('"boolean"', -6970731678124411036),
        ('"int"', 8247732601305521295),
        ('"long"', -3434872931120570953),
        ('{"name":"foo","type":"fixed","size":15}', 1756455273707447556),
    ],
)
def test_crc64_avro_matches_the_avro_projects_vectors(canonical: str, published: int) -> None:
    assert crc64_avro(canonical.encode()) == _signed_to_unsigned(published)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_header_is_marker_and_little_endian_fingerprint(version: int) -> None:
    codec = AvroEventCodec(writer_version=version)
    value = codec.encode(created(binding()))
    assert value[:2] == b"\xc3\x01"
    # fastavro's own fingerprint function prints the 8 bytes in little-endian order.
    canonical = to_parsing_canonical_form(schemas.avro_schema(version))
    assert value[2:10].hex() == fingerprint(canonical, "CRC-64-AVRO")
    assert struct.unpack("<Q", value[2:10])[0] == schema_fingerprint(version)


def test_each_schema_version_has_its_own_fingerprint() -> None:
    assert len({schema_fingerprint(v) for v in (1, 2, 3)}) == 3


bindings = st.builds(
    AclBinding.of,
    st.sampled_from(
        [RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID, RT.DELEGATION_TOKEN, RT.USER]
    ),
    st.text(min_size=1, max_size=30),
    st.sampled_from([PT.LITERAL, PT.PREFIXED]),
    st.text(max_size=12).map(lambda s: "User:" + s),
    st.text(min_size=1, max_size=10),
    st.sampled_from([op for op in OP if op not in (OP.ANY, OP.UNKNOWN)]),
    st.sampled_from([PERM.ALLOW, PERM.DENY]),
)
_ascii = st.text(st.characters(max_codepoint=0xD7FF), max_size=20)
events = st.one_of(
    st.builds(
        AclCreated, binding=bindings, actor=_ascii, request_id=_ascii, time_ms=st.integers(0, 2**62)
    ),
    st.builds(
        AclDeleted, binding=bindings, actor=_ascii, request_id=_ascii, time_ms=st.integers(0, 2**62)
    ),
    st.builds(
        ConfigAltered,
        name=_ascii,
        value=st.none() | _ascii,
        actor=_ascii,
        request_id=_ascii,
        time_ms=st.integers(0, 2**62),
    ),
)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@given(event=events)
@settings(max_examples=150)
def test_round_trip(codec: EventCodec, event: AclCreated | AclDeleted | ConfigAltered) -> None:
    value = codec.encode(event)
    assert codec.decode(value, offset=7) == event
    assert decode_event(value) == event


def _fastavro_value(event: AclCreated | AclDeleted, version: int) -> bytes:
    """The value written by fastavro itself from the event's record: the independent reference."""
    out = io.BytesIO()
    schema = parse_schema(schemas.avro_schema(version))
    schemaless_writer(out, schema, downcast_to(to_record(event), version))
    return AvroEventCodec().header(version) + out.getvalue()


_any_long = st.integers(-(2**63), 2**63 - 1)


@given(
    event=st.one_of(
        *(
            st.builds(kind, binding=bindings, actor=st.text(), request_id=st.text(), time_ms=_any_long)
            for kind in (AclCreated, AclDeleted)
        )
    )
)
@settings(max_examples=300)
def test_the_acl_event_fast_lane_writes_fastavros_bytes(event: AclCreated | AclDeleted) -> None:
    codec = AvroEventCodec()
    for version in (1, 2, 3):
        if event.min_reader_version <= version:
            assert codec.encode(event, writer_version=version) == _fastavro_value(event, version)


def test_the_fast_lane_leaves_old_schema_versions_and_bad_text_to_the_general_path() -> None:
    codec = AvroEventCodec()
    old = AclCreated(binding=binding(), actor="User:a", request_id="r", time_ms=1, schema_version=2)
    assert codec.encode(old, writer_version=3) == _fastavro_value(old, 3)
    surrogate = created(binding(name="bad\ud800name"))
    with pytest.raises(InvalidRequestError, match="not valid Unicode"):
        codec.encode(surrogate)


def test_a_schema_of_an_unknown_shape_gets_no_fast_lane() -> None:
    schema = schemas.avro_schema(3)
    schema["fields"].insert(7, {"name": "tenant", "type": "string"})
    assert compile_acl_writer(schema, 3) is None
    assert compile_acl_writer(schemas.avro_schema(3), 3) is not None


def test_json_shares_kafkas_extended_change_notification_fields() -> None:
    # Kafka's ExtendedAclChangeStore.encode wrote ExtendedAclChangeEvent(currentVersion=1,
    # resourceType.name, name, patternType.name): Java enum names, these four keys first.
    value = JsonEventCodec().encode(created(binding(name="orgName", pt=PT.PREFIXED)))
    document = json.loads(value)
    assert list(document)[:4] == ["version", "resourceType", "name", "patternType"]
    assert {k: document[k] for k in list(document)[:4]} == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "orgName",
        "patternType": "PREFIXED",
    }


def test_json_reads_kafkas_casing_of_the_kip_example() -> None:
    # KIP-290 shows "resourceType":"Topic"; Kafka's ResourceType.fromString ignores case.
    value = JsonEventCodec().encode(created(binding(name="orgName", pt=PT.PREFIXED)))
    document = json.loads(value)
    document["resourceType"] = "Topic"
    document["operation"] = "Read"
    event = JsonEventCodec().decode(json.dumps(document).encode())
    assert isinstance(event, AclCreated)
    assert event.binding == binding(name="orgName", pt=PT.PREFIXED)


def test_json_refuses_a_notification_version_kafka_would_refuse() -> None:
    document = json.loads(JsonEventCodec().encode(created(binding())))
    document["version"] = 2
    with pytest.raises(UndecodableRecordError, match="notification version 2"):
        JsonEventCodec().decode(json.dumps(document).encode(), offset=3)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_an_event_is_not_written_in_a_format_too_old_for_it(codec: EventCodec) -> None:
    with pytest.raises(EventFormatError, match="needs event format 2"):
        codec.encode(created(binding(pt=PT.PREFIXED)), writer_version=1)
    with pytest.raises(EventFormatError, match="needs event format 3"):
        codec.encode(created(binding(rt=RT.USER)), writer_version=2)
    config = ConfigAltered(name="super.users", value="", actor="a", request_id="r", time_ms=0)
    with pytest.raises(EventFormatError):
        codec.encode(config, writer_version=2)


def _avro_value() -> bytes:
    return AvroEventCodec().encode(created(binding()))


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"", "marker"),
        (b"\xc3\x02" + _avro_value()[2:], "marker"),
        (_avro_value()[:-3], "does not match writer schema"),
        (_avro_value() + b"\x00", "trailing bytes"),
        (_avro_value()[:2] + b"\x00" * 8 + _avro_value()[10:], "fingerprint"),
    ],
    ids=["empty", "bad-marker", "truncated", "trailing", "unknown-fingerprint"],
)
def test_corrupt_avro_is_reported_with_its_offset(value: bytes, reason: str) -> None:
    with pytest.raises(UndecodableRecordError, match=reason) as caught:
        AvroEventCodec().decode(value, offset=41)
    assert caught.value.offset == 41
    assert "at offset 41" in str(caught.value)


def test_a_schema_the_release_does_not_ship_is_a_typed_error() -> None:
    old_release = AvroEventCodec(writer_version=1, known_versions=[1])
    with pytest.raises(UnknownWriterSchemaError, match="upgrade") as caught:
        old_release.decode(AvroEventCodec(writer_version=3).encode(created(binding())), offset=9)
    assert caught.value.fingerprint == schema_fingerprint(3)


@given(st.binary(max_size=200))
@settings(max_examples=300)
def test_garbage_never_decodes_silently(garbage: bytes) -> None:
    for prefix in (b"", b"\xc3\x01", AvroEventCodec().header(3), b"{"):
        value = prefix + garbage
        try:
            event = decode_event(value, offset=5)
        except RecordDecodeError as exc:
            assert exc.offset == 5
        else:  # only a well-formed event may come out
            assert isinstance(event, AclCreated | AclDeleted | ConfigAltered)


@given(bindings, bindings)
def test_distinct_bindings_have_distinct_keys(a: AclBinding, b: AclBinding) -> None:
    assert (binding_key(a) == binding_key(b)) == (a == b)
    assert parse_key(binding_key(a)) == a
    canonical = json.dumps(["acl", *a.fields()], ensure_ascii=True, separators=(",", ":"))
    assert binding_key(a) == canonical.encode("ascii")


def test_keys_name_the_binding_and_the_setting() -> None:
    b = binding(pt=PT.PREFIXED, perm=PERM.DENY)
    assert binding_key(b) == b'["acl","TOPIC","orders","PREFIXED","User:alice","*","READ","DENY"]'
    assert event_key(AclDeleted(binding=b, actor="a", request_id="r", time_ms=0)) == binding_key(b)
    config = ConfigAltered(name="super.users", value="User:a", actor="a", request_id="r", time_ms=0)
    assert event_key(config) == config_key("super.users") == b'["config","super.users"]'
    assert parse_key(config_key("super.users")) == ConfigKey(name="super.users")


@pytest.mark.parametrize(
    "key",
    [
        b"\xff",
        b"{}",
        b'["acl","TOPIC"]',
        b'["x","y"]',
        b'["acl","TOPIC","t","ANY","User:a","*","READ","ALLOW"]',
    ],
)
def test_malformed_keys_are_reported_with_their_offset(key: bytes) -> None:
    with pytest.raises(UndecodableRecordError) as caught:
        parse_key(key, offset=12)
    assert caught.value.offset == 12


def test_decode_event_tells_the_codecs_apart_and_refuses_neither() -> None:
    with pytest.raises(UndecodableRecordError, match="neither Avro"):
        decode_event(b"not an event", offset=1)
