"""X500Principal.getName(): expected RFC 2253 forms worked by hand from RFC 2253 and the JDK's
AVA/RDN/X500Name rules (checked once against Java 17 while writing them)."""

from __future__ import annotations

import pytest

from store.mapping.x500 import InvalidDistinguishedName, x500_get_name

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("dn", "rfc2253"),
    [
        # Kafka's own example (SslPrincipalMapperTest / the conformance vector).
        ("CN=Tkac\\, Adam, OU=ITZ, DC=geodis, DC=cz", "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz"),
        ("", ""),
        # ';' separates RDNs too; keywords are case-insensitive and print upper case.
        ("cn=a;ou=b", "CN=a,OU=b"),
        # Cosmetic spaces around values go; internal runs of spaces stay.
        ("CN=a , O=b", "CN=a,O=b"),
        ("CN=  a  b  ", "CN=a  b"),
        (" CN = a ", "CN=a"),
        # Quoted values keep commas (escaped on output) and lose outer spaces (trim).
        ('CN="a, b"', "CN=a\\, b"),
        ('CN=" a "', "CN=a"),
        ('O="quoted, org", CN=x', "O=quoted\\, org,CN=x"),
        # Multi-valued RDNs keep their order.
        ("CN=a+OU=b", "CN=a+OU=b"),
        ("OU=b+CN=a", "OU=b+CN=a"),
        ("CN=a\\+b", "CN=a\\+b"),
        # '=' and '#' are escaped anywhere; leading/trailing spaces are escaped.
        ("CN=a=b", "CN=a\\=b"),
        ("CN=a#b", "CN=a\\#b"),
        ("CN=\\#a", "CN=\\#a"),
        ("CN=a\\ ", "CN=a\\ "),
        ("CN=\\ a", "CN=\\ a"),
        ("CN=\\  a \\ ", "CN=\\ \\ a\\ \\ "),
        ("CN=a\\\\b", "CN=a\\\\b"),
        ("CN=a\\;b", "CN=a\\;b"),
        # Hex pairs are UTF-8 bytes; a trailing pair loses the unescaped space before it.
        ("CN=\\41\\42", "CN=AB"),
        ("CN=\\c3\\a9t\\c3\\a9", "CN=été"),
        ("CN=a\\2cb", "CN=a\\,b"),
        ("CN=a \\41", "CN=aA"),
        ("CN=é", "CN=é"),
        ("CN=a\u0000b", "CN=a\\00b"),
        # RFC 2253 keywords print as such (S becomes ST); others print as OIDs with DER hex.
        ("S=Cal", "ST=Cal"),
        ("UID=u1,STREET=Main", "UID=u1,STREET=Main"),
        ("OID.2.5.4.3=x", "CN=x"),
        ("2.5.4.3=x", "CN=x"),
        ("EMAILADDRESS=a@b.com,CN=x", "1.2.840.113549.1.9.1=#16076140622e636f6d,CN=x"),
        ("SERIALNUMBER=123", "2.5.4.5=#1303313233"),
        ("1.2.3.4=abc", "1.2.3.4=#1303616263"),
        ("T=Mr", "2.5.4.12=#13024d72"),
        # DC values are IA5String: a non-ASCII char becomes '?' (String.getBytes(US_ASCII)).
        ("DC=é", "DC=?"),
        # '#hex' is DER: string types print as text, others as hex.
        ("CN=#0c0161", "CN=a"),
        ("CN=#0c03c3a961", "CN=éa"),
        ("CN=#040161", "CN=#040161"),
        ("1.2.3.4=#0c0161", "1.2.3.4=#0c0161"),
        ("CN=#1c0400000061", "CN=#1c0400000061"),  # UniversalString is not printed as text
    ],
)
def test_get_name(dn: str, rfc2253: str) -> None:
    assert x500_get_name(dn) == rfc2253


def test_special_characters_vector() -> None:
    dn = "CN=\\#User with special chars in CN : (\\, \\+ \\\" \\\\ \\< \\> \\; ')"
    assert x500_get_name(dn) == dn


@pytest.mark.parametrize(
    "dn",
    [
        "CN",  # no '='
        "=a",  # empty keyword
        "X=a",  # unknown keyword
        "3.1=a",  # not an OID
        "CN=a,",  # empty RDN
        "CN=a,,O=b",
        "CN=a+",
        "CN=a<b",  # must be escaped
        "CN=a\\",  # trailing backslash
        "CN=a\\x",  # not an escapable char
        'CN="a"x',  # text after the closing quote
        'CN="',
        "CN=#",
        "CN=#0",
        "CN=#zz",
        "CN=#0c0261",  # DER shorter than its length
        "CN=#0c016162",  # DER with trailing bytes
    ],
)
def test_refused_names(dn: str) -> None:
    with pytest.raises(InvalidDistinguishedName) as caught:
        x500_get_name(dn)
    assert caught.value.message.startswith(f"improperly specified input name: {dn}")
