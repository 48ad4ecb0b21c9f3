"""Which process serves a new connection: read from its first request line, left unread.

Decision workers exist for the broker's decisions.  A connection whose first request is
anything else (an operator's CLI, Terraform, the console, a probe) is served by the node's
process itself, which would answer it anyway: a worker would only forward it, at about half
a millisecond of its CPU per request, taken from the decisions it serves.  The node peeks at
the connection's first bytes (``MSG_PEEK``: nothing is consumed) and decides here.

A connection stays where it went for its whole life, whatever it asks later: a worker
forwards what is not a decision, and the node answers decisions too.  When the first line
cannot be read (TLS, whose first bytes are a handshake; a line not all there yet), the
connection goes to a worker, as every connection did before.
"""

from __future__ import annotations

from typing import Final

from replicator.contract.endpoints import AUTHORIZE, AUTHORIZE_BY_RESOURCE_TYPE, AUTHORIZE_REQUEST

DECISION_PATHS: Final = frozenset(e.path for e in (AUTHORIZE, AUTHORIZE_BY_RESOURCE_TYPE, AUTHORIZE_REQUEST))
"""The paths a decision worker answers itself."""
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
    is readable and is not a decision."""
    path = first_path(peeked)
    return path is not None and path not in DECISION_PATHS
