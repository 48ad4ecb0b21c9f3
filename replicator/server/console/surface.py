"""What the console's page modules (Safety, the guarded confirm) use of the console: its
session checks, its way of calling the sidecar API's own handlers, and its answer headers.

A protocol here, so that those modules and :mod:`.routes`, which builds them, do not import
each other."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from replicator.server.console.sessions import Credential
from replicator.server.http import HttpRequest, Response, Route


class ConsoleSurface(Protocol):
    @property
    def api(self) -> Mapping[str, Route]:
        """The sidecar API's routes by name."""
        ...

    def _credential(self, request: HttpRequest) -> Credential:
        """The session's credential for a page (a missing session raises)."""
        ...

    def _call_credential(self, request: HttpRequest) -> Credential:
        """The session's credential for a call (also checks the call header)."""
        ...

    def _as_caller(self, request: HttpRequest, credential: Credential, path: str, body: bytes) -> HttpRequest:
        """``request`` as the API's handler at ``path`` sees it, with the session's credential."""
        ...

    def answer(self, response: Response) -> Response:
        """``response`` with the console's security headers."""
        ...
