"""The index's key encoding: ``E``, a binding's seven fields in compact bytes, and its tables.

``E = rt | pt | lp(name) | lp(principal) | lp(host) | op | perm``: one byte per enum code
(Kafka's int8 codes), ``lp`` = a 4-byte big-endian length and the UTF-8 bytes.  Because ``E``
starts with the pattern, every binding of one resource pattern shares the prefix
``rt | pt | lp(name)``, which is what the decision rules look up.  ``K`` keys order the
bindings as Kafka's DescribeAcls does (:func:`order_key`), so that a listing is one forward
scan.  Pure functions, no I/O.
"""

from __future__ import annotations

import struct

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

BY_PATTERN = b"B"
"""``B | E``: bindings by pattern (authorize, describe by pattern)."""
BY_PRINCIPAL = b"U"
"""``U | lp(principal) | rt | E``: bindings by principal (authorize_by_resource_type)."""
BY_LOG_KEY = b"R"
"""``R | log key -> E``: bindings by their log record key (deletes and tombstones)."""
BY_ORDER = b"K"
"""``K | rt | desc(name) | pt | op | asc(principal) | asc(host) | perm -> E``: bindings in
Kafka's DescribeAcls order (listings), see :func:`order_key`."""

PREFIXED = int(PatternType.PREFIXED)
LITERAL = int(PatternType.LITERAL)

_U32 = struct.Struct(">I")
_HEAD = struct.Struct(">BBI")  # resource type, pattern type, name length
_RESOURCE_TYPES = {int(v): v for v in ResourceType}
_PATTERN_TYPES = {int(v): v for v in PatternType}
_OPERATIONS = {int(v): v for v in AclOperation}
_PERMISSIONS = {int(v): v for v in AclPermissionType}



def lp(text: str) -> bytes:
    """A length-prefixed UTF-8 string (lone surrogates kept, as Java strings may hold them)."""
    raw = text.encode("utf-8", "surrogatepass")
    return _U32.pack(len(raw)) + raw


def pattern_prefix(resource_type: int, pattern_type: int, name: str) -> bytes:
    """The ``B`` key prefix under which every binding of one resource pattern lives."""
    return BY_PATTERN + bytes((resource_type, pattern_type)) + lp(name)


def encode_binding(binding: AclBinding) -> bytes:
    """``E``: the compact, order-preserving-per-pattern encoding of a binding's seven fields."""
    return encode_fields(
        int(binding.resource_type),
        int(binding.pattern_type),
        binding.name,
        binding.principal,
        binding.host,
        int(binding.operation),
        int(binding.permission_type),
    )


def encode_fields(
    resource_type: int,
    pattern_type: int,
    name: str,
    principal: str,
    host: str,
    operation: int,
    permission_type: int,
) -> bytes:
    """``E`` from the seven fields as Kafka's int8 codes and strings."""
    n = name.encode("utf-8", "surrogatepass")
    p = principal.encode("utf-8", "surrogatepass")
    h = host.encode("utf-8", "surrogatepass")
    return b"".join(
        (
            _HEAD.pack(resource_type, pattern_type, len(n)),
            n,
            _U32.pack(len(p)),
            p,
            _U32.pack(len(h)),
            h,
            bytes((operation, permission_type)),
        )
    )


def _readlp(buf: bytes, pos: int) -> tuple[str, int]:
    (size,) = _U32.unpack_from(buf, pos)
    start = pos + 4
    return buf[start : start + size].decode("utf-8", "surrogatepass"), start + size


def decode_binding(buf: bytes, pos: int = 0) -> AclBinding:
    """Inverse of :func:`encode_binding`, reading ``E`` from ``buf[pos:]``."""
    resource_type, pattern_type = buf[pos], buf[pos + 1]
    name, pos = _readlp(buf, pos + 2)
    principal, pos = _readlp(buf, pos)
    host, pos = _readlp(buf, pos)
    return AclBinding.of(
        _RESOURCE_TYPES.get(resource_type, ResourceType.UNKNOWN),
        name,
        _PATTERN_TYPES.get(pattern_type, PatternType.UNKNOWN),
        principal,
        host,
        _OPERATIONS.get(buf[pos], AclOperation.UNKNOWN),
        _PERMISSIONS.get(buf[pos + 1], AclPermissionType.UNKNOWN),
    )


def principal_key(enc: bytes) -> bytes:
    """``U | lp(principal) | rt | E`` for the binding encoded as ``enc``."""
    _, pos = _readlp(enc, 2)  # skip the name
    (size,) = _U32.unpack_from(enc, pos)
    return BY_PRINCIPAL + enc[pos : pos + 4 + size] + enc[0:1] + enc


def pattern_of(enc: bytes) -> tuple[int, int, str]:
    """(resource type code, pattern type code, name) of the binding encoded as ``enc``."""
    name, _ = _readlp(enc, 2)
    return enc[0], enc[1], name


def prefixed_name_length(enc: bytes) -> tuple[int, int] | None:
    """(resource type, name length in characters) of a PREFIXED binding, else None."""
    if enc[1] != PREFIXED:
        return None
    name, _ = _readlp(enc, 2)
    return enc[0], len(name)


_INVERTED = bytes(range(255, -1, -1))


def ascending(text: str) -> bytes:
    """Bytes that compare as Java's ``String.compareTo`` compares ``text``, and that no other
    text's bytes start with (so fields can follow): its UTF-16 code units big-endian, each
    zero byte escaped as ``00 01``, ended by ``00 00``.

    The end marker sorts below every escaped byte, so a text sorts before the texts it is a
    prefix of, as in Java."""
    return text.encode("utf-16-be", "surrogatepass").replace(b"\x00", b"\x00\x01") + b"\x00\x00"


def descending(text: str) -> bytes:
    """:func:`ascending` with every byte inverted: the reverse order (the encoding is
    prefix-free, so the first differing byte decides and inverting it reverses the answer)."""
    return ascending(text).translate(_INVERTED)


def order_prefix(resource_type: int, name: str | None = None, pattern_type: int | None = None) -> bytes:
    """The ``K`` keys of a resource type, of one name in it, or of one pattern."""
    prefix = BY_ORDER + bytes((resource_type,))
    if name is None:
        return prefix
    prefix += descending(name)
    return prefix if pattern_type is None else prefix + bytes((pattern_type,))


def order_key(enc: bytes) -> bytes:
    """The ``K`` key of the binding encoded as ``enc``: its fields in the order of Kafka's
    ``StandardAcl.compareTo`` (resource type, name in *reverse*, pattern type, operation,
    principal, host, permission type), each encoded so that the bytes compare as Kafka compares
    the values.  Keys sort in DescribeAcls order, :meth:`store.acl.AclBinding.sort_key`'s."""
    name, pos = _readlp(enc, 2)
    principal, pos = _readlp(enc, pos)
    host, pos = _readlp(enc, pos)
    return b"".join(
        (
            BY_ORDER,
            enc[0:1],
            descending(name),
            enc[1:2],
            enc[pos : pos + 1],
            ascending(principal),
            ascending(host),
            enc[pos + 1 : pos + 2],
        )
    )
