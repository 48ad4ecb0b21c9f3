"""The console's routes: login and logout, its pages and assets, and its calls.

Nothing but the login page and its style sheet is served without a session.  A page asked for
without one answers 303 to the login page; an asset or a call answers 401.

The console's calls are the sidecar API's own handlers, given the session's credential in
place of the cookie (``Authorization: Bearer`` with the token, or the connection's client
certificate), so the rules are the admin API's, checked by the same code:

* ``POST /ui/api/acls/page``: one page of ``/v1/acls/list`` for the filter of
  ``kafka-acls --list`` (:mod:`.paging`), read as it streams and cut off after the page;
* ``POST /ui/api/v1/acls/dry-run``, ``/ui/api/v1/acls``, ``/ui/api/v1/acls/delete``,
  ``/ui/api/v1/acls/alter``: the dry run, CreateAcls, DeleteAcls and the one-batch alter (a
  restore, guarded by ``ifScopeUnchangedSince``), passed through as they are;
* ``POST /ui/api/history/…``: the history's questions (:mod:`.history`).

A call must carry ``X-Aclstore-Console: 1``, which a form of another site cannot send (the
cookie is ``SameSite=Strict`` as well).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from http.cookies import CookieError, SimpleCookie
from importlib import resources
from typing import Final
from urllib.parse import parse_qs, urlsplit

from replicator.contract.access import OFFSET_HEADER
from replicator.contract.bindings import binding_json, filter_json
from replicator.contract.fields import BadRequestError, dumps
from replicator.contract.listing import ListingError, ListingReader
from replicator.errors import ReplicaError
from replicator.server.callers import CallerPolicy
from replicator.server.console.audit import AuditCalls
from replicator.server.console.drift import DriftCalls
from replicator.server.console.guard import guard_routes
from replicator.server.console.history import HistoryCalls, ReaderCheck, session_key
from replicator.server.console.paging import cursor_of, list_filter, page_bounds, page_of
from replicator.server.console.runner import QuestionRunner
from replicator.server.console.safety import safety_routes
from replicator.server.console.sessions import Credential, SessionStore
from replicator.server.errors import UnauthenticatedError
from replicator.server.http import Headers, HttpRequest, Response, Route, RouteHandler

COOKIE: Final = "aclstore_console"
CALL_HEADER: Final = "X-Aclstore-Console"
PASSED_THROUGH: Final = ("dry_run_acls", "create_acls", "delete_acls", "alter_acls")
"""The sidecar API's endpoints the console calls as they are, under ``/ui/api``."""

_HTML: Final = "text/html; charset=utf-8"
_TYPES: Final = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".html": _HTML}  # fmt: skip
_SECURITY_HEADERS: Final = (
    ("Content-Security-Policy",
     "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
     "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),  # no-referrer would make the forms' Origin "null"
    ("Cache-Control", "no-store"),
)  # fmt: skip
_PUBLIC: Final = ("login.css",)
_PRIVATE: Final = (
    "console.css", "call.js", "acls.js", "history.css", "history.js", "access.js", "changes.js"
)
_PAGES: Final = {"/ui/acls": "acls.html", "/ui/access": "access.html", "/ui/changes": "changes.html"}


def _asset(name: str) -> bytes:
    return resources.files(__package__).joinpath("assets", name).read_bytes()


def _with_headers(response: Response, *extra: tuple[str, str]) -> Response:
    return Response(
        response.status, response.body, response.content_type,
        (*response.headers, *_SECURITY_HEADERS, *extra), response.chunks,
    )  # fmt: skip


def _see_other(location: str, *extra: tuple[str, str]) -> Response:
    return _with_headers(Response(303, b"", _HTML), ("Location", location), *extra)


def _check_origin(request: HttpRequest) -> None:
    """A form posted from another site is refused: a browser names the page's origin on a POST,
    and it must be the node's own (the ``Host`` the browser called).  Without this, a page
    elsewhere could log a visitor into a session of its own choosing."""
    origin = request.headers.get("Origin")
    if origin is None:
        return  # not a browser's cross-site form: browsers send Origin with every form POST
    host = request.headers.get("Host", "")
    if urlsplit(origin).netloc != host:
        raise UnauthenticatedError(
            f"a console form was posted from {origin!r}, not from this node ({host!r}): open "
            "the console at the node's own address"
        )


class Console:
    """The console's routes over the sidecar API's (``api_routes``: their handlers by name)."""

    def __init__(
        self,
        api_routes: Sequence[Route],
        policy: CallerPolicy,
        *,
        secure: bool,
        sessions: SessionStore | None = None,
        questions: QuestionRunner | None = None,
        may_read_history: ReaderCheck | None = None,
    ) -> None:
        self.api: dict[str, Route] = {r.name: r for r in api_routes}
        self.policy = policy
        self.secure = secure
        """The node serves TLS: the cookie is ``Secure``."""
        self.sessions = sessions or SessionStore()
        self.questions = questions or QuestionRunner(None)
        """The history's questions (:mod:`.history`); without a source they are refused."""
        self.may_read_history = may_read_history
        self._assets = {name: _asset(name) for name in (*_PUBLIC, *_PRIVATE, *_PAGES.values())}
        self._login_page = _asset("login.html").decode("utf-8")

    def routes(self) -> list[Route]:
        out = [
            Route("GET", "/ui", "console_root", self.root),
            Route("GET", "/ui/", "console_root", self.root),
            Route("GET", "/ui/login", "console_login", self.login_page),
            Route("POST", "/ui/login", "console_login", self.login),
            Route("POST", "/ui/logout", "console_logout", self.logout),
            Route("POST", "/ui/api/acls/page", "console_acls_page", self.acls_page),
        ]
        out += [Route("GET", f"/ui/{n}", "console_asset", self._public(n)) for n in _PUBLIC]
        out += [Route("GET", f"/ui/{n}", "console_asset", self._private(n)) for n in _PRIVATE]
        out += [Route("GET", path, "console_page", self._page(n)) for path, n in _PAGES.items()]
        out += safety_routes(self)
        out += guard_routes(self)
        for name in PASSED_THROUGH:
            route = self.api[name]
            out.append(Route(route.method, f"/ui/api{route.path}", f"console_{name}",
                             self._passed_through(route)))  # fmt: skip
        out += HistoryCalls(self, self.questions, self.may_read_history).routes()
        out += AuditCalls(self, self.questions, self.may_read_history, self._credential).routes()
        out += DriftCalls(self, self.questions, self.may_read_history).routes()
        return out

    # --- sessions ---------------------------------------------------------------------------------

    def _session_id(self, request: HttpRequest) -> str | None:
        text = request.headers.get("Cookie")
        if not text:
            return None
        try:
            morsel = SimpleCookie(text).get(COOKIE)
        except CookieError:
            return None
        return None if morsel is None else morsel.value

    def _credential(self, request: HttpRequest) -> Credential:
        """The session's credential, authenticated again now (a revoked token or a
        different client certificate ends the session)."""
        session_id = self._session_id(request)
        credential = None if session_id is None else self.sessions.get(session_id)
        if session_id is None or credential is None:
            raise UnauthenticatedError("no console session: log in at /ui/login")
        if credential.peer_subject is not None and request.peer_subject != credential.peer_subject:
            raise UnauthenticatedError(
                "this console session was opened with a client certificate that this connection "
                "did not present: log in again at /ui/login"
            )
        try:
            self.policy.authenticate(
                address=request.address, peer_subject=credential.peer_subject,
                authorization=None if credential.token is None else f"Bearer {credential.token}",
            )  # fmt: skip
        except UnauthenticatedError:
            self.sessions.close(session_id)
            raise
        return credential

    def _as_caller(self, request: HttpRequest, credential: Credential, path: str,
                   body: bytes) -> HttpRequest:  # fmt: skip
        """The request the sidecar API's handler sees: the session's credential instead of
        the cookie."""
        fields = [
            (key, value) for key, value in request.headers.items()
            if key.lower() not in ("authorization", "cookie", "content-length")
        ]  # fmt: skip
        if credential.token is not None:
            fields.append(("Authorization", f"Bearer {credential.token}"))
        return HttpRequest(
            "POST", path, {}, Headers(fields), body, request.address, request.peer_subject
        )

    # --- login ------------------------------------------------------------------------------------

    def _login_answer(self, status: int, message: str = "") -> Response:
        shown = f'<p class="error" role="alert">{html.escape(message)}</p>' if message else ""
        body = self._login_page.replace("<!--message-->", shown).encode("utf-8")
        return _with_headers(Response(status, body, _HTML))

    def root(self, request: HttpRequest) -> Response:
        try:
            self._credential(request)
        except UnauthenticatedError:
            return _see_other("/ui/login")
        return _see_other("/ui/acls")

    def login_page(self, request: HttpRequest) -> Response:
        return self._login_answer(200)

    def login(self, request: HttpRequest) -> Response:
        """The form's token (``aclstore.bearer.token`` of an admin.properties), or with
        ``certificate`` the client certificate of this connection."""
        form = parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)
        try:
            _check_origin(request)
            if "certificate" in form:
                if not request.peer_subject:
                    raise UnauthenticatedError(
                        "this connection presented no client certificate: the node must run with "
                        "TLS and --tls-client-ca, and the browser must offer a certificate; or "
                        "log in with a token"
                    )
                caller = self.policy.authenticate(
                    address=request.address, peer_subject=request.peer_subject, authorization=None
                )
                credential = Credential(principal=str(caller.principal),
                                        peer_subject=request.peer_subject)  # fmt: skip
            else:
                token = form.get("token", [""])[0].strip()
                if not token:
                    raise UnauthenticatedError(
                        "paste a token: the value of aclstore.bearer.token in admin.properties, "
                        "or of a file made by aclstore credentials create"
                    )
                caller = self.policy.authenticate(
                    address=request.address, peer_subject=None, authorization=f"Bearer {token}"
                )
                credential = Credential(principal=str(caller.principal), token=token)
        except UnauthenticatedError as exc:
            return self._login_answer(401, exc.message)
        session_id = self.sessions.open(credential)
        cookie = f"{COOKIE}={session_id}; Path=/ui; HttpOnly; SameSite=Strict"
        if self.secure:
            cookie += "; Secure"
        return _see_other("/ui/acls", ("Set-Cookie", cookie))

    def logout(self, request: HttpRequest) -> Response:
        _check_origin(request)
        session_id = self._session_id(request)
        if session_id is not None:
            self.sessions.close(session_id)
            self.questions.close_session(session_key(session_id))
        cleared = f"{COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"
        return _see_other("/ui/login", ("Set-Cookie", cleared + ("; Secure" if self.secure else "")))

    # --- pages and assets -------------------------------------------------------------------------

    def _served(self, name: str) -> Response:
        suffix = name[name.rfind("."):]
        return _with_headers(Response(200, self._assets[name], _TYPES[suffix]))

    def _public(self, name: str) -> RouteHandler:
        return lambda request: self._served(name)

    def _private(self, name: str) -> RouteHandler:
        def handler(request: HttpRequest) -> Response:
            self._credential(request)
            return self._served(name)

        return handler

    def _page(self, name: str) -> RouteHandler:
        def handler(request: HttpRequest) -> Response:
            try:
                self._credential(request)
            except UnauthenticatedError:
                return _see_other("/ui/login")
            return self._served(name)

        return handler

    # --- calls ------------------------------------------------------------------------------------

    def _call_credential(self, request: HttpRequest) -> Credential:
        credential = self._credential(request)
        if request.headers.get(CALL_HEADER) != "1":
            raise BadRequestError(f"a console call carries the header {CALL_HEADER}: 1")
        return credential

    def call_credential(self, request: HttpRequest) -> Credential:
        """A console call's credential (for the calls of :mod:`.history`)."""
        return self._call_credential(request)

    def session_id(self, request: HttpRequest) -> str | None:
        return self._session_id(request)

    @staticmethod
    def answer(response: Response) -> Response:
        """``response`` with the console's security headers."""
        return _with_headers(response)

    def _passed_through(self, route: Route) -> RouteHandler:
        def handler(request: HttpRequest) -> Response:
            credential = self._call_credential(request)
            return _with_headers(route.handler(self._as_caller(request, credential, route.path,
                                                               request.body)))  # fmt: skip

        return handler

    def acls_page(self, request: HttpRequest) -> Response:
        """One page of the listing: ``{"rows", "skip", "more", "offset"}``; the fields of
        :func:`.paging.list_filter` and :func:`.paging.page_bounds`, ``minOffset``, and
        ``after`` (:func:`.paging.cursor_of`: the page resumes after that row)."""
        credential = self._call_credential(request)
        fields = request.json() if request.body.strip() else {}
        if not isinstance(fields, dict):
            raise BadRequestError("the body must be a JSON object of the page's fields")
        acl_filter = list_filter(fields)
        skip, limit = page_bounds(fields)
        after = cursor_of(fields)
        asked: dict[str, object] = {"filters": [filter_json(acl_filter)]}
        if after is not None:
            asked["after"] = binding_json(after)
        if fields.get("minOffset") is not None:
            asked["minOffset"] = fields["minOffset"]
        listing = self.api["list_acls"]
        answer = listing.handler(self._as_caller(request, credential, listing.path, dumps(asked)))
        if answer.status != 200 or answer.chunks is None:
            return _with_headers(answer)
        offset = dict(answer.headers).get(OFFSET_HEADER)
        chunks = answer.chunks
        try:
            page = page_of(ListingReader(chunks), skip, limit, after=after is not None)
        except ListingError as exc:
            raise ReplicaError(f"the listing failed: {exc.message}") from exc
        finally:
            close: Callable[[], None] | None = getattr(chunks, "close", None)
            if close is not None:
                close()  # the replica's snapshot is released now, not when collected
        body = {"rows": page.rows, "skip": page.skip, "more": page.more,
                "offset": None if offset is None else int(offset)}  # fmt: skip
        return _with_headers(Response.json(body))
