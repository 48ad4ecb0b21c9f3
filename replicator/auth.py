"""Who may call the sidecar: loopback for decisions, authenticated principals for admin.

* **Authorize endpoints** answer the broker next to the sidecar: callers from the configured
  networks (loopback by default) or any authenticated caller.
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

import hashlib
import hmac
import ipaddress
import json
import os
import secrets
import ssl
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from store.errors import AuthorizationError, InvalidConfigError, KafkaErrorCode, StoreError
from store.mapping import SslPrincipalMapper, x500_get_name
from store.principal import KafkaPrincipal

CREDENTIALS_FILE: Final = "credentials.json"
ADMIN_PROPERTIES_FILE: Final = "admin.properties"
TOKEN_PREFIX: Final = "aclstore_"
LOOPBACK_NETWORKS: Final = ("127.0.0.0/8", "::1/128")

# Keys of a --command-config file (librdkafka's names for the TLS files).
URL_KEY: Final = "aclstore.url"
PRINCIPAL_KEY: Final = "aclstore.principal"
TOKEN_KEY: Final = "aclstore.bearer.token"
SECURITY_PROTOCOL_KEY: Final = "security.protocol"
CA_KEY: Final = "ssl.ca.location"
CERT_KEY: Final = "ssl.certificate.location"
KEY_KEY: Final = "ssl.key.location"
KEY_PASSWORD_KEY: Final = "ssl.key.password"
COMMAND_CONFIG_KEYS: Final = frozenset(
    {URL_KEY, PRINCIPAL_KEY, TOKEN_KEY, SECURITY_PROTOCOL_KEY, CA_KEY, CERT_KEY, KEY_KEY,
     KEY_PASSWORD_KEY}
)  # fmt: skip


class UnauthenticatedError(StoreError):
    """The caller presented no usable credential for an endpoint that needs one (HTTP 401)."""

    error_code = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED


class CallerNotAllowedError(AuthorizationError):
    """The caller may not use this endpoint at all (HTTP 403), e.g. authorize from afar."""

    error_code = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the network address and, when authenticated, the principal and how."""

    address: str
    principal: str | None = None
    method: str = "none"
    """``mtls``, ``bearer`` or ``none``."""


# --- properties files (java.util.Properties, the subset command-config files use) -----------


def read_properties(path: Path | str) -> dict[str, str]:
    """Read ``key=value`` / ``key: value`` lines; ``#`` and ``!`` start comments."""
    values: dict[str, str] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidConfigError(f"cannot read properties file {path}: {exc.strerror}") from exc
    pending = ""
    for raw in lines:
        line = pending + raw.lstrip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        key, value = _split_property(line)
        values[key] = value
    return values


def _split_property(line: str) -> tuple[str, str]:
    for i, char in enumerate(line):
        if char in "=:" or char.isspace():
            key, rest = line[:i], line[i + 1 :].lstrip()
            if char.isspace() and rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip()
            return _unescape(key), _unescape(rest)
    return _unescape(line), ""


def _unescape(text: str) -> str:
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            nxt = next(chars, "")
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        else:
            out.append(char)
    return "".join(out)


def write_properties(path: Path, values: Mapping[str, str], comment: str) -> None:
    """Write a properties file readable by its owner only (it may hold a secret)."""
    lines = [f"# {line}" for line in comment.splitlines()]
    for key, value in values.items():
        escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"{key}={escaped}")
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


# --- bearer tokens ------------------------------------------------------------------------------


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class CredentialStore:
    """Bearer tokens bound to principals, stored as SHA-256 digests in ``credentials.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._by_digest: dict[str, str] = {}
        self._entries: list[dict[str, Any]] = []
        self._mtime = 0
        if path.exists():
            self._load()
            self._changed_on_disk()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = list(data["tokens"])
            by_digest = {str(e["sha256"]): str(e["principal"]) for e in entries}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InvalidConfigError(
                f"credential file {self.path} is unreadable ({exc}); restore it or delete it "
                "(and admin.properties) so that a new admin credential is created"
            ) from exc
        self._entries, self._by_digest = entries, by_digest

    def create_token(self, principal: str) -> str:
        """A new random token for ``principal``; only its digest is kept."""
        KafkaPrincipal.parse(principal)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        digest = _digest(token)
        entry = {"principal": principal, "sha256": digest, "createdMs": int(time.time() * 1000)}
        self._entries.append(entry)
        self._by_digest[digest] = principal
        self._save()
        return token

    def principal_for(self, token: str) -> str | None:
        """The principal of ``token``; rereads the file when another process added tokens."""
        digest = _digest(token)
        found = self._find(digest)
        if found is None and self._changed_on_disk():
            self._load()
            found = self._find(digest)
        return found

    def _find(self, digest: str) -> str | None:
        for known, principal in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return principal
        return None

    def _changed_on_disk(self) -> bool:
        try:
            mtime = self.path.stat().st_mtime_ns
        except OSError:
            return False
        changed = mtime != self._mtime
        self._mtime = mtime
        return changed

    def principals(self) -> list[str]:
        return sorted(set(self._by_digest.values()))

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": 1, "tokens": self._entries}, out, indent=2)
        os.replace(tmp, self.path)
        self._changed_on_disk()


@dataclass(frozen=True, slots=True)
class AdminCredential:
    principal: str
    properties_path: Path
    created: bool


def ensure_admin_credential(
    data_dir: Path, credentials: CredentialStore, admin_principal: str, url: str, *, tls: bool
) -> AdminCredential:
    """Create ``admin.properties`` for ``admin_principal`` unless a working one is there."""
    path = data_dir / ADMIN_PROPERTIES_FILE
    if path.exists():
        existing = read_properties(path)
        token = existing.get(TOKEN_KEY, "")
        if credentials.principal_for(token) == admin_principal:
            if existing.get(URL_KEY) != url:  # the node now listens elsewhere: keep it usable
                write_properties(path, {**existing, URL_KEY: url}, _ADMIN_COMMENT)
            return AdminCredential(admin_principal, path, created=False)
    token = credentials.create_token(admin_principal)
    values = {URL_KEY: url, PRINCIPAL_KEY: admin_principal, TOKEN_KEY: token}
    if tls:
        values[SECURITY_PROTOCOL_KEY] = "SSL"
    write_properties(path, values, _ADMIN_COMMENT)
    return AdminCredential(admin_principal, path, created=True)


_ADMIN_COMMENT = (
    "aclstore admin credential (a super user of this node). Keep it secret.\n"
    "Use it as kafka-acls.sh's --command-config: aclstore acls --command-config <this file> ..."
)


# --- TLS ------------------------------------------------------------------------------------------

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


# --- the policy -----------------------------------------------------------------------------------


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
                f"--authorize-from: {exc} (use CIDR, e.g. 10.0.0.0/8)"
            ) from exc
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
            principal = self.credentials.principal_for(token.strip())
            if principal is None:
                raise UnauthenticatedError("the bearer token is not known to this node")
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
            raise CallerNotAllowedError(
                f"authorize endpoints answer callers from {', '.join(map(str, self.networks))} "
                f"or authenticated callers; {caller.address} is neither"
            )

    def require_principal(self, caller: Caller) -> str:
        if caller.principal is None:
            raise UnauthenticatedError(
                "this endpoint needs an authenticated caller: a client certificate (mutual TLS) "
                "or 'Authorization: Bearer <token>' (see --command-config admin.properties)"
            )
        return caller.principal
