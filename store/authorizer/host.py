"""The host text Kafka compares ACL hosts with: ``InetAddress.getHostAddress()``.

Kafka matches an ACL's host against the client address printed by Java, never against a
name and never normalising the ACL side.  IPv6 addresses print as eight uncompressed groups
without leading zeros (``::1`` is ``0:0:0:0:0:0:0:1``), IPv4-mapped IPv6 prints as IPv4, and
IPv4 parts lose leading zeros (``010.0.0.1`` is ``10.0.0.1``).  A sidecar that receives client
addresses in another spelling passes them through :func:`host_address` first.
"""

from __future__ import annotations

import ipaddress

from store.errors import InvalidRequestError


class InvalidHostAddressError(InvalidRequestError):
    """Text that is not an IP address (ACL hosts are matched against addresses only)."""


def _ipv4(text: str) -> str | None:
    parts = text.split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() and int(p) <= 255 for p in parts):
        return None
    return ".".join(str(int(p)) for p in parts)


def host_address(address: str) -> str:
    """``address`` (an IPv4 or IPv6 literal, IPv6 optionally with ``%scope``) as Java prints it."""
    text, percent, scope = address.partition("%")
    if ":" not in text:
        ipv4 = _ipv4(text) if not percent else None
        if ipv4 is None:
            raise InvalidHostAddressError(
                f"not an IP address: {address!r}; Kafka matches ACL hosts against the client's "
                "IP address (e.g. 10.0.0.1 or ::1), never a host name"
            )
        return ipv4
    try:
        ip = ipaddress.IPv6Address(text)
    except ValueError as exc:
        raise InvalidHostAddressError(
            f"not an IP address: {address!r}; expected an IPv4 or IPv6 literal such as ::1"
        ) from exc
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    groups = ":".join(format(int(group, 16), "x") for group in ip.exploded.split(":"))
    return f"{groups}%{scope}" if percent else groups
