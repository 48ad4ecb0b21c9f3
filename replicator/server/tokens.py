"""Bearer tokens bound to principals, and the admin credential a node creates on first start.

Tokens are kept hashed (SHA-256) in ``credentials.json`` in the data directory; the token
itself is written only into the caller's ``--command-config`` file (``admin.properties``,
readable by its owner only).  A token may carry an expiry time (like a Kafka delegation
token's ``max.lifetime``) and is revoked by removing it from the file; a running node sees
both at once, since it checks the file for changes on every lookup.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from replicator.properties import (
    PRINCIPAL_KEY,
    SECURITY_PROTOCOL_KEY,
    TOKEN_KEY,
    URL_KEY,
    read_properties,
    write_properties,
)
from replicator.server.errors import UnauthenticatedError
from store.errors import InvalidConfigError
from store.principal import KafkaPrincipal

CREDENTIALS_FILE: Final = "credentials.json"
ADMIN_PROPERTIES_FILE: Final = "admin.properties"
TOKEN_PREFIX: Final = "aclstore_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class _Grant:
    principal: str
    expires_ms: int | None


class CredentialStore:
    """Bearer tokens bound to principals, stored as SHA-256 digests in ``credentials.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._by_digest: dict[str, _Grant] = {}
        self._entries: list[dict[str, Any]] = []
        self._stamp: tuple[int, int, int] | None = None
        if path.exists():
            self._changed_on_disk()  # before reading: a change in between is read again later
            self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = list(data["tokens"])
            by_digest = {
                str(e["sha256"]): _Grant(
                    str(e["principal"]),
                    None if e.get("expiresMs") is None else int(e["expiresMs"]),
                )
                for e in entries
            }
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InvalidConfigError(
                f"credential file {self.path} is unreadable ({exc}); restore it or delete it "
                "(and admin.properties) so that a new admin credential is created"
            ) from exc
        self._entries, self._by_digest = entries, by_digest

    def create_token(self, principal: str, *, max_lifetime_ms: int | None = None) -> str:
        """A new random token for ``principal``, valid for ``max_lifetime_ms`` if given."""
        KafkaPrincipal.parse(principal)
        if max_lifetime_ms is not None and max_lifetime_ms <= 0:
            raise InvalidConfigError(
                f"a token lifetime of {max_lifetime_ms} ms has expired already; give a positive one"
            )
        self._refresh()
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        digest = _digest(token)
        now = _now_ms()
        expires = None if max_lifetime_ms is None else now + max_lifetime_ms
        entry: dict[str, Any] = {"principal": principal, "sha256": digest, "createdMs": now}
        if expires is not None:
            entry["expiresMs"] = expires
        self._entries.append(entry)
        self._by_digest[digest] = _Grant(principal, expires)
        self._save()
        return token

    def revoke(self, *, token: str | None = None, principal: str | None = None) -> int:
        """Remove ``token``, or every token of ``principal``; how many were removed."""
        if (token is None) == (principal is None):
            raise InvalidConfigError("revoke one token or the tokens of one principal, not both")
        self._refresh()
        digest = None if token is None else _digest(token)
        kept = [
            e for e in self._entries
            if not (e["sha256"] == digest or (principal is not None and e["principal"] == principal))
        ]  # fmt: skip
        removed = len(self._entries) - len(kept)
        if removed:
            self._entries = kept
            self._by_digest = {
                d: g for d, g in self._by_digest.items()
                if d != digest and (principal is None or g.principal != principal)
            }  # fmt: skip
            self._save()
        return removed

    def principal_for(self, token: str, *, now_ms: int | None = None) -> str | None:
        """The principal of ``token`` if it is known and unexpired (None otherwise)."""
        grant = self._lookup(token)
        if grant is None or _expired(grant, now_ms):
            return None
        return grant.principal

    def authenticate(self, token: str, *, now_ms: int | None = None) -> str:
        """The principal of ``token``; an unknown, revoked or expired token is refused."""
        grant = self._lookup(token)
        if grant is None:
            raise UnauthenticatedError(
                "the bearer token is not known to this node (a token of another node, or a "
                "revoked one): use the --command-config file this node wrote"
            )
        if _expired(grant, now_ms):
            raise UnauthenticatedError(
                f"the bearer token of {grant.principal} expired at {grant.expires_ms} ms since "
                "the epoch; create a new one with aclstore credentials create"
            )
        return grant.principal

    def _lookup(self, token: str) -> _Grant | None:
        # Another process (``aclstore credentials create`` or ``revoke``) may have changed the
        # file: a revoked token must stop working at once, so the file is checked every time.
        self._refresh()
        digest = _digest(token)
        for known, grant in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return grant
        return None

    def _refresh(self) -> None:
        if self._changed_on_disk():
            if self.path.exists():
                self._load()
            else:
                self._entries, self._by_digest = [], {}

    def _changed_on_disk(self) -> bool:
        try:
            st = self.path.stat()
        except OSError:
            stamp = None
        else:
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        changed = stamp != self._stamp
        self._stamp = stamp
        return changed

    def principals(self) -> list[str]:
        return sorted({grant.principal for grant in self._by_digest.values()})

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": 1, "tokens": self._entries}, out, indent=2)
        os.replace(tmp, self.path)
        self._changed_on_disk()


def _expired(grant: _Grant, now_ms: int | None) -> bool:
    return grant.expires_ms is not None and (now_ms or _now_ms()) >= grant.expires_ms


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


def write_credential(
    data_dir: Path,
    principal: str,
    output: Path,
    url: str | None,
    *,
    max_lifetime_ms: int | None = None,
) -> None:
    """A new bearer token for ``principal`` in the node's token store, written to ``output``
    as a ``--command-config`` file (``aclstore credentials create``)."""
    store = CredentialStore(data_dir / CREDENTIALS_FILE)
    token = store.create_token(principal, max_lifetime_ms=max_lifetime_ms)
    values = {PRINCIPAL_KEY: principal, TOKEN_KEY: token}
    if url:
        values[URL_KEY] = url
    write_properties(output, values, f"aclstore credential for {principal}. Keep it secret.")


def revoke_credentials(data_dir: Path, *, token: str | None, principal: str | None) -> int:
    """Remove a token (or every token of a principal) from the node's token store
    (``aclstore credentials revoke``); how many were removed."""
    return CredentialStore(data_dir / CREDENTIALS_FILE).revoke(token=token, principal=principal)


_ADMIN_COMMENT = (
    "aclstore admin credential (a super user of this node). Keep it secret.\n"
    "Use it as kafka-acls.sh's --command-config: aclstore acls --command-config <this file> ..."
)
