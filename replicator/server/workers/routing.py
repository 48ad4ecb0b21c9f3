"""Which process serves a new connection: read from its first request line, left unread.

Decision workers exist for the broker's decisions.  A connection whose first request is
what a broker's plugin asks on the connections it pools for decisions (a decision, the
offset long-poll of its cache lease, the status and health it checks at start) goes to a
worker, so that the pool's later decisions are answered on every core.  A connection whose
first request is anything else (an operator's CLI, Terraform, the console, a scrape) is
served by the node's process itself, which would answer it anyway: a worker would only
forward it, at about half a millisecond of its CPU per request, taken from the decisions it
serves.  The node peeks at the connection's first bytes (``MSG_PEEK``: nothing is consumed)
and decides here.

A connection stays where it went for its whole life, whatever it asks later: a worker
forwards what is not a decision, and the node answers decisions too.  When the first line
cannot be read (TLS, whose first bytes are a handshake; a line not all there yet), the
connection goes to a worker, as every connection did before.
"""

from __future__ import annotations

from typing import Final

from replicator.contract.endpoints import (
    AUTHORIZE,
    AUTHORIZE_BY_RESOURCE_TYPE,
    AUTHORIZE_REQUEST,
    HEALTHZ,
    READYZ,
    STATUS,
    WAIT_OFFSET,
)

WORKER_PATHS: Final = frozenset(
    e.path
    for e in (AUTHORIZE, AUTHORIZE_BY_RESOURCE_TYPE, AUTHORIZE_REQUEST, WAIT_OFFSET, STATUS, HEALTHZ, READYZ)
)
"""The first requests that send a connection to a worker: the decisions it answers itself, and
what a broker's plugin asks first on a connection it then keeps for decisions."""
PEEK_BYTES: Final = 1024
"""How much of a connection's first bytes are looked at: a request line longer than this
(a long query string) goes to a worker, which serves anything."""
_METHODS: Final = frozenset({b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"PATCH", b"OPTIONS"})


def first_path(peeked: bytes) -> str | None:
    """The path of the request line that ``peeked`` starts with (its query left off); None
    when ``peeked`` does not start with a whole HTTP request line's method and target."""
    method, space, rest = peeked.partition(b" ")
    if not space or method not in _METHODS:
        return None
    target, space, _ = rest.partition(b" ")
    if not space or not target.startswith(b"/"):
        return None
    try:
        return target.split(b"?", 1)[0].decode("ascii")
    except UnicodeDecodeError:
        return None


def served_by_node(peeked: bytes) -> bool:
    """Whether the connection that starts with ``peeked`` is the node's own: its first request
    is readable and is none of :data:`WORKER_PATHS`."""
    path = first_path(peeked)
    return path is not None and path not in WORKER_PATHS
