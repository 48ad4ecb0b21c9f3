"""Who may call the sidecar: loopback for decisions, authenticated principals for admin.

* **Authorize endpoints** answer the broker next to the sidecar: callers on loopback (all of it
  by default, or the loopback networks configured) or any authenticated caller.  A caller off
  loopback is authenticated exactly as an admin caller is: a decision names the principal it
  is about, so an unauthenticated network caller could probe anyone's permissions.
* **Admin endpoints** need an authenticated caller, by either
  - **mutual TLS**: the client certificate's subject, as ``X500Principal.getName()`` prints it
    (:func:`store.mapping.x500_get_name`), mapped by ``ssl.principal.mapping.rules``
    (:class:`store.mapping.SslPrincipalMapper`) to ``User:<short name>``, exactly as Kafka's
    ``DefaultKafkaPrincipalBuilder`` does for an SSL listener; or
  - a **bearer token** bound to a principal (``Authorization: Bearer <token>``), kept hashed
    (SHA-256) in ``credentials.json`` in the data directory.

  Authentication only names the caller; the admin API then applies Kafka's own CLUSTER checks
  (ALTER to create or delete, DESCRIBE to describe, super users always).

On first start a node creates a token for its admin principal (a super user of that node) and
writes it into ``admin.properties``, a ``kafka-acls.sh --command-config`` style file, readable by
its owner only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from replicator.server.errors import CallerNotAllowedError, UnauthenticatedError
from replicator.server.tls import peer_distinguished_name
from replicator.server.tokens import CredentialStore
from store.errors import InvalidConfigError, StoreError
from store.mapping import SslPrincipalMapper
from store.principal import KafkaPrincipal

LOOPBACK_NETWORKS: Final = ("127.0.0.0/8", "::1/128")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the network address and, when authenticated, the principal and how."""

    address: str
    principal: str | None = None
    method: str = "none"
    """``mtls``, ``bearer`` or ``none``."""


class CallerPolicy:
    """Decides who a caller is and which endpoints they may use."""

    def __init__(
        self,
        *,
        credentials: CredentialStore,
        authorize_networks: Iterable[str] = LOOPBACK_NETWORKS,
        ssl_principal_mapping_rules: str | None = None,
    ) -> None:
        self.credentials = credentials
        try:
            self.networks = tuple(ipaddress.ip_network(n, strict=False) for n in authorize_networks)
        except ValueError as exc:
            raise InvalidConfigError(
                f"--authorize-from: {exc} (use CIDR, e.g. 127.0.0.1/32)"
            ) from exc
        for network in self.networks:
            if not _is_loopback_network(network):
                raise InvalidConfigError(
                    f"--authorize-from {network}: decisions without credentials are answered on "
                    "loopback only (127.0.0.0/8, ::1/128). Callers off loopback authenticate as "
                    "admin callers do: a bearer token (aclstore credentials create) or a client "
                    "certificate (--tls-client-ca); or run the node in the broker's network "
                    "namespace so that the broker calls it on loopback"
                )
        self.ssl_mapper = SslPrincipalMapper(ssl_principal_mapping_rules or "DEFAULT")
        self._network_cache: dict[str, bool] = {}

    def authenticate(
        self,
        *,
        address: str,
        peer_subject: Sequence[Sequence[tuple[str, str]]] | None,
        authorization: str | None,
    ) -> Caller:
        """Name the caller from its certificate or bearer token; a bad token is refused."""
        if authorization is not None:
            scheme, _, token = authorization.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise UnauthenticatedError(
                    "the Authorization header must be 'Bearer <token>' (see admin.properties)"
                )
            principal = self.credentials.authenticate(token.strip())
            return Caller(address, principal, "bearer")
        if peer_subject:
            dn = peer_distinguished_name(peer_subject)
            try:
                short_name = self.ssl_mapper.get_name(dn)
            except StoreError as exc:
                raise UnauthenticatedError(f"client certificate {dn!r}: {exc}") from exc
            return Caller(address, str(KafkaPrincipal.user(short_name)), "mtls")
        return Caller(address)

    def in_authorize_networks(self, address: str) -> bool:
        known = self._network_cache.get(address)
        if known is None:
            try:
                ip = ipaddress.ip_address(address.split("%", 1)[0])
            except ValueError:
                known = False
            else:
                if ip.version == 6 and ip.ipv4_mapped is not None:
                    ip = ip.ipv4_mapped
                known = any(ip in network for network in self.networks)
            if len(self._network_cache) > 4096:
                self._network_cache.clear()
            self._network_cache[address] = known
        return known

    def check_authorize_caller(self, caller: Caller) -> None:
        if caller.principal is None and not self.in_authorize_networks(caller.address):
            networks = ", ".join(map(str, self.networks)) or "no network"
            raise CallerNotAllowedError(
                f"authorize endpoints answer callers from {networks} without credentials, and "
                f"authenticated callers (a bearer token or a client certificate); "
                f"{caller.address} is neither"
            )

    def require_principal(self, caller: Caller) -> str:
        if caller.principal is None:
            raise UnauthenticatedError(
                "this endpoint needs an authenticated caller: a client certificate (mutual TLS) "
                "or 'Authorization: Bearer <token>' (see --command-config admin.properties)"
            )
        return caller.principal


def _is_loopback_network(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    return any(
        network.version == loopback.version and network.subnet_of(loopback)  # type: ignore[arg-type]
        for loopback in map(ipaddress.ip_network, LOOPBACK_NETWORKS)
    )
