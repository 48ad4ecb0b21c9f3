"""The RFC 2253 name Kafka sees for a TLS client: ``javax.security.auth.x500.X500Principal.getName()``.

Kafka's ``DefaultKafkaPrincipalBuilder`` hands ``X500Principal.getName()`` of the peer
certificate's subject to ``ssl.principal.mapping.rules`` (:mod:`store.mapping.ssl`), so rules
must be written against that exact text: RDNs joined by ``,`` with no spaces, ``+`` between the
values of a multi-valued RDN, RFC 2253 keywords (``CN``, ``C``, ``L``, ``ST``, ``O``, ``OU``,
``STREET``, ``DC``, ``UID``) and dotted OIDs with ``#``-hex DER values for every other type
(``EMAILADDRESS=a@b`` becomes ``1.2.840.113549.1.9.1=#1603614062``), and the escapes of
``sun.security.x509.AVA.toRFC2253String`` (``\\`` before ``, = + < > # ; " \\``, before leading
and trailing spaces, and ``\\00`` for NUL).

:func:`x500_get_name` takes a DN *string* as ``new X500Principal(String)`` parses it (the
lenient RFC 1779/2253/4514 parser of ``sun.security.x509.X500Name``/``RDN``/``AVA``: ``,`` or
``;`` between RDNs, optional spaces, quoted values, ``\\xx`` hex pairs, ``#hex`` DER values,
``OID.n.n`` keywords) and returns what ``getName()`` returns.  Limits: ``#hex`` values must be
DER with a one-byte tag and a definite length of at most four bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from store.errors import InvalidPrincipalError
from store.principal import java_trim

_CN, _C, _L, _ST, _O, _OU = "2.5.4.3", "2.5.4.6", "2.5.4.7", "2.5.4.8", "2.5.4.10", "2.5.4.11"
_STREET, _DC, _UID = "2.5.4.9", "0.9.2342.19200300.100.1.25", "0.9.2342.19200300.100.1.1"
_EMAIL = "1.2.840.113549.1.9.1"

# Keywords X500Name accepts when parsing (AVAKeyword, DEFAULT format).
_KEYWORD_OIDS = {
    "CN": _CN, "C": _C, "L": _L, "S": _ST, "ST": _ST, "O": _O, "OU": _OU,
    "T": "2.5.4.12", "IP": "1.3.6.1.4.1.42.2.11.2.1", "STREET": _STREET, "DC": _DC,
    "DNQUALIFIER": "2.5.4.46", "DNQ": "2.5.4.46", "SURNAME": "2.5.4.4",
    "GIVENNAME": "2.5.4.42", "INITIALS": "2.5.4.43", "GENERATION": "2.5.4.44",
    "EMAIL": _EMAIL, "EMAILADDRESS": _EMAIL, "UID": _UID, "SERIALNUMBER": "2.5.4.5",
}  # fmt: skip
# Keywords getName() prints (the RFC 2253-compliant ones); any other type prints as its OID.
_RFC2253_KEYWORDS = {
    _CN: "CN", _C: "C", _L: "L", _ST: "ST", _O: "O", _OU: "OU",
    _STREET: "STREET", _DC: "DC", _UID: "UID",
}  # fmt: skip

TAG_UTF8, TAG_PRINTABLE, TAG_T61, TAG_IA5 = 0x0C, 0x13, 0x14, 0x16
_STRING_TAGS = {TAG_UTF8, TAG_PRINTABLE, TAG_T61, TAG_IA5, 0x1B, 0x1E}  # AVA.isDerString
_PRINTABLE_EXTRA = set(" '()+,-./:=?")
_SPECIAL_1779 = set(',=\n+<>#;\\"')
_SPECIAL_DEFAULT = set(',=\n+<>#;\\" ')
_MUST_ESCAPE_DEFAULT = set(',+<>;"')
_ESCAPED_2253 = set(',=+<>#;"\\')
_HEX = set("0123456789abcdefABCDEF")


class InvalidDistinguishedName(InvalidPrincipalError):
    """``new X500Principal(name)`` refuses the text (Kafka sees ``IllegalArgumentException``)."""

    kafka_exception = "IllegalArgumentException"


class _ParseError(Exception):
    """Java's IOException inside X500Name parsing; reported wrapped, as X500Principal does."""


@dataclass(frozen=True, slots=True)
class Ava:
    """One attribute value assertion: type OID, DER tag and content bytes of the value."""

    oid: str
    tag: int
    content: bytes

    def der(self) -> bytes:
        return bytes([self.tag]) + _der_length(len(self.content)) + self.content

    def rfc2253(self) -> str:
        """``AVA.toRFC2253String()``."""
        keyword = _RFC2253_KEYWORDS.get(self.oid, self.oid)
        if keyword[0].isdigit() or self.tag not in _STRING_TAGS:
            return keyword + "=#" + self.der().hex()
        escaped: list[str] = []
        for char in self.content.decode("utf-8", errors="replace"):
            if char in _ESCAPED_2253:
                escaped.append("\\" + char)
            elif char == "\x00":
                escaped.append("\\00")
            else:
                escaped.append(char)
        chars = "".join(escaped)
        lead = len(chars) - len(chars.lstrip(" \r"))
        trail = len(chars.rstrip(" \r"))
        value = "".join(
            "\\" + char if i < lead or i >= trail else char for i, char in enumerate(chars)
        )
        return keyword + "=" + value


def x500_get_name(name: str) -> str:
    """``new X500Principal(name).getName()``: the RFC 2253 form Kafka maps."""
    try:
        rdns = _parse_dn(name)
    except _ParseError as exc:
        raise InvalidDistinguishedName(f"improperly specified input name: {name} ({exc})") from exc
    return ",".join("+".join(ava.rfc2253() for ava in rdn) for rdn in rdns)


def _parse_dn(text: str) -> list[list[Ava]]:
    """``X500Name.parseDN``: split at unescaped, unquoted ``,`` or ``;``."""
    if not text:
        return []
    rdns: list[list[Ava]] = []
    offset = search = quotes = 0
    end = _next_separator(text, 0)
    while end >= 0:
        quotes += _count_quotes(text, search, end)
        if quotes != 1 and not _escaped(end, search, text):
            rdns.append(_parse_rdn(text[offset:end]))
            offset = end + 1
            quotes = 0
        search = end + 1
        end = _next_separator(text, search)
    rdns.append(_parse_rdn(text[offset:]))
    return rdns


def _next_separator(text: str, start: int) -> int:
    found = [i for i in (text.find(",", start), text.find(";", start)) if i >= 0]
    return min(found) if found else -1


def _count_quotes(text: str, start: int, end: int) -> int:
    return sum(
        1 for i in range(start, end) if text[i] == '"' and (i == start or text[i - 1] != "\\")
    )


def _escaped(end: int, search: int, text: str) -> bool:
    """Java's ``X500Name.escaped``, which counts *every* backslash between search and end."""
    if end == 1 and text[0] == "\\":
        return True
    if end > 1 and text[end - 1] == "\\" and text[end - 2] != "\\":
        return True
    if end > 1 and text[end - 1] == "\\" and text[end - 2] == "\\":
        return text.count("\\", search, end) % 2 != 0
    return False


def _parse_rdn(text: str) -> list[Ava]:
    """``RDN(String)``: split at ``+`` not preceded by a backslash and not inside quotes."""
    avas: list[Ava] = []
    offset = search = quotes = 0
    plus = text.find("+")
    while plus >= 0:
        quotes += _count_quotes(text, search, plus)
        if plus > 0 and text[plus - 1] != "\\" and quotes != 1:
            avas.append(_parse_ava(text[offset:plus], text))
            offset = plus + 1
            quotes = 0
        search = plus + 1
        plus = text.find("+", search)
    avas.append(_parse_ava(text[offset:], text))
    return avas


class _Reader:
    """A ``StringReader``: ``read()`` gives one char or None at the end."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def read(self) -> str | None:
        if self.pos >= len(self.text):
            return None
        self.pos += 1
        return self.text[self.pos - 1]

    def read_char(self, error: str) -> str:
        char = self.read()
        if char is None:
            raise _ParseError(error)
        return char


def _parse_ava(text: str, rdn: str) -> Ava:
    """``AVA(Reader, DEFAULT)``: ``keyword=value`` with a bare, quoted or ``#hex`` value."""
    if not text:
        raise _ParseError(f'empty AVA in RDN "{rdn}"')
    reader = _Reader(text)
    keyword: list[str] = []
    while (char := reader.read_char("Incorrect AVA format")) != "=":
        keyword.append(char)
    oid = _keyword_oid("".join(keyword))
    char_or_end = reader.read()
    while char_or_end in (" ", "\n"):
        char_or_end = reader.read()
    if char_or_end is None:
        return Ava(oid, TAG_PRINTABLE, b"")
    if char_or_end == "#":
        return _parse_hex(oid, reader)
    if char_or_end == '"':
        value, printable = _parse_quoted(reader)
        return _string_ava(oid, java_trim(value), printable)
    value, printable = _parse_string(reader, char_or_end)
    return _string_ava(oid, value, printable)


def _keyword_oid(keyword: str) -> str:
    """``AVAKeyword.getOID`` in DEFAULT format: a known keyword, ``OID.n.n`` or ``n.n``."""
    key = java_trim(keyword.upper())
    if key in _KEYWORD_OIDS:
        return _KEYWORD_OIDS[key]
    if key.startswith("OID."):
        key = key[4:]
    if not key or not key[0].isdigit():
        raise _ParseError(f'Invalid keyword "{key}"')
    parts = key.split(".")
    if len(parts) < 2 or not all(part.isascii() and part.isdigit() for part in parts):
        raise _ParseError(f"ObjectIdentifier() -- Invalid format: {key}")
    numbers = [int(part) for part in parts]
    if numbers[0] > 2 or (numbers[0] < 2 and numbers[1] >= 40):
        raise _ParseError(f"ObjectIdentifier() -- Invalid format: {key}")
    return ".".join(str(number) for number in numbers)


def _parse_string(reader: _Reader, first: str) -> tuple[str, bool]:
    """``AVA.parseString`` (DEFAULT format): escapes, hex pairs, trailing spaces dropped."""
    out: list[str] = []
    pending_hex = bytearray()
    printable = True
    spaces = 0
    char: str | None = first
    while char is not None:  # a do-while in Java: the first char is never a terminator
        escape = char == "\\"
        if escape:
            char = reader.read_char("Invalid trailing backslash")
            if char in _HEX:
                pending_hex.append(_hex_pair(char, reader))
                printable = False
                char = _next_value_char(reader)
                continue
            if char not in _SPECIAL_DEFAULT:
                raise _ParseError(f"Invalid escaped character in AVA: '{char}'")
        elif char in _MUST_ESCAPE_DEFAULT:
            raise _ParseError(f"Character '{char}' in AVA appears without escape")
        if pending_hex:
            out.append(" " * spaces)
            spaces = 0
            out.append(pending_hex.decode("utf-8", errors="replace"))
            pending_hex.clear()
        printable = printable and _is_printable(char)
        if char == " " and not escape:
            spaces += 1  # kept only if something follows: trailing spaces are cosmetic
        else:
            out.append(" " * spaces + char)
            spaces = 0
        char = _next_value_char(reader)
    if pending_hex:  # Java appends trailing hex bytes without the spaces before them
        out.append(pending_hex.decode("utf-8", errors="replace"))
    return "".join(out), printable


def _next_value_char(reader: _Reader) -> str | None:
    """The next char of an unquoted value, or None at its end (``AVA.isTerminator``)."""
    char = reader.read()
    return None if char is None or char in "+,;" else char


def _parse_quoted(reader: _Reader) -> tuple[str, bool]:
    """``AVA.parseQuotedString``: RFC 1779 quoted value; only whitespace may follow."""
    error = "Quoted string did not end in quote"
    out: list[str] = []
    pending_hex = bytearray()
    printable = True
    char = reader.read_char(error)
    while char != '"':
        if char == "\\":
            char = reader.read_char(error)
            if char in _HEX:
                pending_hex.append(_hex_pair(char, reader))
                printable = False
                char = reader.read_char(error)  # Java reads on; EOF ends in the same error
                continue
            if char not in _SPECIAL_1779:
                raise _ParseError(f"Invalid escaped character in AVA: {char}")
        if pending_hex:
            out.append(pending_hex.decode("utf-8", errors="replace"))
            pending_hex.clear()
        printable = printable and _is_printable(char)
        out.append(char)
        char = reader.read_char(error)
    if pending_hex:
        out.append(pending_hex.decode("utf-8", errors="replace"))
    after = reader.read()
    while after in (" ", "\n"):
        after = reader.read()
    if after is not None:
        raise _ParseError("AVA had characters other than whitespace after terminating quote")
    return "".join(out), printable


def _hex_pair(first: str, reader: _Reader) -> int:
    second = reader.read_char("unexpected EOF - escaped hex value must include two valid digits")
    if second not in _HEX:
        raise _ParseError("escaped hex value must include two valid digits")
    return int(first + second, 16)


def _parse_hex(oid: str, reader: _Reader) -> Ava:
    """``AVA.parseHexString`` then ``new DerValue(bytes)``: a DER value given in hex."""
    digits: list[str] = []
    while (char := reader.read()) is not None and char not in "+,;":
        if char not in _HEX:
            raise _ParseError(f"AVA parse, invalid hex digit: {char}")
        digits.append(char)
    if not digits:
        raise _ParseError("AVA parse, zero hex digits")
    if len(digits) % 2:
        raise _ParseError("AVA parse, odd number of hex digits")
    return _decode_der(oid, bytes.fromhex("".join(digits)))


def _decode_der(oid: str, data: bytes) -> Ava:
    if len(data) < 2 or data[0] & 0x1F == 0x1F:
        raise _ParseError("unsupported or truncated DER value")
    first = data[1]
    if first < 0x80:
        length, start = first, 2
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or len(data) < 2 + count:
            raise _ParseError("unsupported DER length (indefinite or too long)")
        length, start = int.from_bytes(data[2 : 2 + count], "big"), 2 + count
    if len(data) - start < length:
        raise _ParseError("DER value is shorter than its length")
    if len(data) - start > length:
        raise _ParseError("extra data at the end of the DER value")
    return Ava(oid, data[0], data[start:])


def _string_ava(oid: str, value: str, printable: bool) -> Ava:
    """The DER string type X500Name picks: IA5 for DC and email, else Printable or UTF8."""
    if oid in (_EMAIL, _DC):
        return Ava(oid, TAG_IA5, value.encode("ascii", errors="replace"))
    if printable:
        return Ava(oid, TAG_PRINTABLE, value.encode("ascii"))
    return Ava(oid, TAG_UTF8, value.encode("utf-8", errors="replace"))


def _is_printable(char: str) -> bool:
    """``DerValue.isPrintableStringChar``."""
    return (char.isascii() and char.isalnum()) or char in _PRINTABLE_EXTRA



def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    body = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body
