"""The web console (``/ui/``): pages served by the node, on its own listener, TLS and credentials.

* :mod:`.sessions`: the login's session (an HttpOnly cookie naming a session on the node);
* :mod:`.paging`: the ACL page's filter and one page of a listing, as plain values;
* :mod:`.routes`: the console's routes, each handing its work to the sidecar API's own
  handler with the session's credential, so the console can do exactly what that credential
  can through the admin API;
* ``assets/``: the pages, their style sheet and script, shipped as package data (no CDN).
"""

from replicator.server.console.routes import Console
from replicator.server.console.sessions import Credential, SessionStore

__all__ = ["Console", "Credential", "SessionStore"]
