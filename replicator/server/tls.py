"""TLS of the listener: its files, whether it may go without, and a client certificate's subject.

A listener off loopback carries bearer tokens and decisions across the network, so it serves
HTTPS unless the operator explicitly accepts plain HTTP (:func:`check_listener_security`).
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from replicator.server.errors import UnauthenticatedError
from store.errors import InvalidConfigError
from store.mapping import x500_get_name

_RFC2253_KEYWORDS: Final = {
    "commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
    "domainComponent": "DC", "userId": "UID", "emailAddress": "EMAILADDRESS",
    "serialNumber": "SERIALNUMBER", "surname": "SURNAME", "givenName": "GIVENNAME",
    "title": "T", "initials": "INITIALS", "generationQualifier": "GENERATION",
    "dnQualifier": "DNQ",
}  # fmt: skip
_DN_SPECIAL: Final = set(',=+<>#;"\\')


def _escape_dn_value(value: str) -> str:
    out = "".join("\\" + c if c in _DN_SPECIAL else c for c in value)
    if out.startswith(" "):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def peer_distinguished_name(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """The RFC 2253 name Kafka maps, from ``SSLSocket.getpeercert()['subject']``.

    ``getpeercert`` lists RDNs in certificate order; RFC 2253 prints the last first.  The text
    is normalized by :func:`x500_get_name`, as ``X500Principal.getName()`` would print it
    (attribute types outside RFC 2253's keywords come out as ``OID=#hex``; their DER tag is
    reconstructed, so it may differ from the certificate's for such rare types).
    """
    rdns: list[str] = []
    for rdn in reversed(subject):
        avas = []
        for name, value in rdn:
            keyword = _RFC2253_KEYWORDS.get(name)
            if keyword is None:
                raise UnauthenticatedError(
                    f"client certificate subject attribute {name!r} is not supported; "
                    "use a certificate whose subject has standard attributes (CN, OU, O, ...)"
                )
            avas.append(f"{keyword}={_escape_dn_value(value)}")
        rdns.append("+".join(avas))
    return x500_get_name(",".join(rdns))


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsSettings:
    """The listener's TLS files (PEM); ``client_ca`` enables client certificates (mTLS)."""

    certificate: Path
    key: Path
    client_ca: Path | None = None

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(str(self.certificate), str(self.key))
            if self.client_ca is not None:
                context.load_verify_locations(cafile=str(self.client_ca))
                # Optional: callers with a bearer token need no certificate.
                context.verify_mode = ssl.CERT_OPTIONAL
        except (OSError, ssl.SSLError) as exc:
            raise InvalidConfigError(f"cannot load the TLS files of the listener: {exc}") from exc
        return context


LOOPBACK_HOST_NAMES: Final = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a ``--listen`` host) can only be reached from this machine.

    Any other name counts as reachable from the network: a name is not resolved here, and a
    wildcard (``0.0.0.0``, ``::``) listens on every interface.
    """
    if host.lower() in LOOPBACK_HOST_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def check_listener_security(
    listen: str, host: str, *, tls: TlsSettings | None, insecure_plaintext: bool
) -> None:
    """Refuse plain HTTP off loopback unless the operator said ``--insecure-plaintext``."""
    if tls is not None or insecure_plaintext or is_loopback_host(host):
        return
    raise InvalidConfigError(
        f"--listen {listen}: {host} is not a loopback address, and without TLS the bearer "
        "tokens and the decisions would cross the network in clear. Give the listener a "
        "certificate: --tls-cert server.pem --tls-key server.key (add --tls-client-ca ca.pem to "
        "accept client certificates; docker/make-certs.sh makes a CA and a server certificate "
        "with openssl), or listen on 127.0.0.1, or accept plain HTTP with --insecure-plaintext"
    )
