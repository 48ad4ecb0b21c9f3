"""CRC-64-AVRO, the Rabin fingerprint of the Avro specification ("Schema Fingerprints").

Single-object encoding puts this 64-bit fingerprint of the writer schema's Parsing Canonical
Form, little-endian, after the ``C3 01`` marker, so a message names its writer schema without a
registry server.
"""

from __future__ import annotations

from typing import Final

EMPTY: Final = 0xC15D213AA4D7A795
"""The fingerprint of the empty input; also the polynomial of the table below."""


def _table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        fp = byte
        for _ in range(8):
            fp = (fp >> 1) ^ (EMPTY & -(fp & 1))
        table.append(fp & 0xFFFFFFFFFFFFFFFF)
    return tuple(table)


_TABLE: Final = _table()


def crc64_avro(data: bytes) -> int:
    """The CRC-64-AVRO fingerprint of ``data`` as an unsigned 64-bit integer."""
    fp = EMPTY
    for byte in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ byte) & 0xFF]
    return fp
