"""Bearer tokens bound to principals, and the admin credential a node creates on first start.

Tokens are kept hashed (SHA-256) in ``credentials.json`` in the data directory; the token
itself is written only into the caller's ``--command-config`` file (``admin.properties``,
readable by its owner only).
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
from store.errors import InvalidConfigError
from store.principal import KafkaPrincipal

CREDENTIALS_FILE: Final = "credentials.json"
ADMIN_PROPERTIES_FILE: Final = "admin.properties"
TOKEN_PREFIX: Final = "aclstore_"


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
