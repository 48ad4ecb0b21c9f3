"""The console's sessions: a random id in an HttpOnly cookie, the credential kept on the node.

A session remembers how its caller logged in (the bearer token, or the client certificate's
subject) and nothing it decided from it: every request of the session is authenticated again
with that credential, through the same :class:`~replicator.server.callers.CallerPolicy` the
admin API uses, so a revoked or expired token ends the session at its next request, and the
session can do exactly what the token or the certificate can.

The store keeps a digest of each id (an id is a bearer secret too), bounds how many sessions
it holds, and ends a session idle for :attr:`SessionStore.idle_s` or older than
:attr:`SessionStore.lifetime_s`.  The clock is passed in, so the rules are tested without
waiting.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from store.errors import InvalidConfigError

PeerSubject = tuple[tuple[tuple[str, str], ...], ...]

IDLE_S: Final = 30 * 60.0
LIFETIME_S: Final = 12 * 3600.0
MAX_SESSIONS: Final = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Credential:
    """How a session's caller logged in: a bearer token, or the subject of the client
    certificate it presented (then every request must come with that certificate)."""

    principal: str
    token: str | None = None
    peer_subject: PeerSubject | None = None

    def __post_init__(self) -> None:
        if (self.token is None) == (self.peer_subject is None):
            raise ValueError("a console credential is a token or a certificate subject, one of them")


@dataclass(slots=True)
class _Entry:
    credential: Credential
    created: float
    used: float


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


class SessionStore:
    """Open sessions by id; thread-safe (the server answers on one thread per connection)."""

    def __init__(
        self,
        *,
        idle_s: float = IDLE_S,
        lifetime_s: float = LIFETIME_S,
        max_sessions: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle_s <= 0 or lifetime_s <= 0 or max_sessions <= 0:
            raise InvalidConfigError(
                f"console sessions: idle_s={idle_s}, lifetime_s={lifetime_s} and "
                f"max_sessions={max_sessions} must all be > 0"
            )
        self.idle_s = idle_s
        self.lifetime_s = lifetime_s
        self.max_sessions = max_sessions
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        """By digest, least recently used first."""

    def open(self, credential: Credential) -> str:
        """A new session for ``credential``: its id, for the cookie.  When the store is full,
        the least recently used session ends."""
        session_id = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._drop_expired(now)
            while len(self._entries) >= self.max_sessions:
                self._entries.popitem(last=False)
            self._entries[_digest(session_id)] = _Entry(credential, now, now)
        return session_id

    def get(self, session_id: str) -> Credential | None:
        """The credential of a live session (and it counts as used now); None for an unknown
        id or a session that has ended (which is then forgotten)."""
        key = _digest(session_id)
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if self._expired(entry, now):
                del self._entries[key]
                return None
            entry.used = now
            self._entries.move_to_end(key)
            return entry.credential

    def close(self, session_id: str) -> bool:
        """End a session (log out); whether there was one."""
        with self._lock:
            return self._entries.pop(_digest(session_id), None) is not None

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _expired(self, entry: _Entry, now: float) -> bool:
        return now - entry.used >= self.idle_s or now - entry.created >= self.lifetime_s

    def _drop_expired(self, now: float) -> None:
        for key in [k for k, e in self._entries.items() if self._expired(e, now)]:
            del self._entries[key]
