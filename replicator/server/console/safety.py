"""The Safety page (``/ui/safety``): the downgrade check and the plan of an ACLs file.

* ``POST /ui/api/safety/downgrade`` ``{"to": N}``: starts the node's downgrade check
  (``/v1/format/downgrade-check``, the handler the CLI's ``downgrade-check`` calls) with the
  session's credential, on a thread of its own; answers the check's id and status.
* ``POST /ui/api/safety/downgrade/status`` ``{"check"}``: running (with the node's walk as
  ``GET /v1/analysis`` tells it), done (the verdict, the offset and each list's count), or
  failed (the node's error, with its status).
* ``POST /ui/api/safety/downgrade/page`` ``{"check", "list", "skip", "limit"}``: one page
  of ``ignored``, ``widened`` or ``narrowed``, read from the answer spooled on disk
  (:mod:`.spool`): the page never holds the answer.
* ``POST /ui/api/safety/plan`` ``{"text"}``: what ``aclstore plan -f`` answers for that file
  (:mod:`.planning`), from the node's listing and dry run.

A check belongs to the principal that started it; the console keeps the last
:data:`KEPT_CHECKS` and removes the files of older ones.
"""

from __future__ import annotations

import atexit
import json
import secrets
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

from replicator.contract.access import OFFSET_HEADER, SAFE_HEADER, DryRunAnswer
from replicator.contract.bindings import binding_json, filter_json
from replicator.contract.fields import BadRequestError, dumps
from replicator.contract.listing import ListingError, ListingReader
from replicator.contract.scope import scope_json
from replicator.errors import ReplicaError
from replicator.server.console.paging import MAX_PAGE
from replicator.server.console.planning import plan_document, read_text
from replicator.server.console.sessions import Credential
from replicator.server.console.spool import SpooledAnswer
from replicator.server.console.surface import ConsoleSurface
from replicator.server.errors import UnauthenticatedError
from replicator.server.http import HttpRequest, Response, Route, error_response
from store.acl import AclBinding, AclBindingFilter, parse_fields
from store.desired import Scope

KEPT_CHECKS: Final = 4
PAGE_NAME: Final = "safety.html"
SCRIPT_NAME: Final = "safety.js"


@dataclass(slots=True)
class _Check:
    """One downgrade check the console asked the node for."""

    principal: str
    to: int
    done: threading.Event = field(default_factory=threading.Event)
    answer: SpooledAnswer | None = None
    safe: bool | None = None
    offset: int | None = None
    failed: tuple[int, Any] | None = None
    """The node's refusal: its status and its error body."""


def _int_field(fields: dict[str, Any], key: str, low: int, high: int | None, default: int | None) -> int:
    value = fields.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (
        high is not None and value > high
    ):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise BadRequestError(f"{key} {value!r}: must be an integer {bound}")
    return value


class SafetyPage:
    """The Safety page's routes, over the console's sessions and the node's handlers."""

    def __init__(self, console: ConsoleSurface) -> None:
        self.console = console
        self._lock = threading.Lock()
        self._checks: OrderedDict[str, _Check] = OrderedDict()
        self._dir = tempfile.mkdtemp(prefix="aclstore-console-downgrade-")
        atexit.register(shutil.rmtree, self._dir, ignore_errors=True)  # the answers go with the node
        root = resources.files(__package__).joinpath("assets")
        self._page = root.joinpath(PAGE_NAME).read_bytes()
        self._script = root.joinpath(SCRIPT_NAME).read_bytes()

    def routes(self) -> list[Route]:
        return [
            Route("GET", "/ui/safety", "console_page", self.page),
            Route("GET", f"/ui/{SCRIPT_NAME}", "console_asset", self.script),
            Route("POST", "/ui/api/safety/downgrade", "console_downgrade", self.start_downgrade),
            Route("POST", "/ui/api/safety/downgrade/status", "console_downgrade_poll", self.downgrade_status),
            Route("POST", "/ui/api/safety/downgrade/page", "console_downgrade_page", self.downgrade_page),
            Route("POST", "/ui/api/safety/plan", "console_plan", self.plan),
        ]

    # --- the page and its script ------------------------------------------------------------

    def page(self, request: HttpRequest) -> Response:
        try:
            self.console._credential(request)
        except UnauthenticatedError:
            return self.console.answer(Response(303, b"", "text/html; charset=utf-8",
                                                (("Location", "/ui/login"),)))  # fmt: skip
        return self.console.answer(Response(200, self._page, "text/html; charset=utf-8"))

    def script(self, request: HttpRequest) -> Response:
        self.console._credential(request)
        return self.console.answer(Response(200, self._script, "text/javascript; charset=utf-8"))

    # --- calls --------------------------------------------------------------------------------

    def _fields(self, request: HttpRequest) -> tuple[Credential, dict[str, Any]]:
        credential = self.console._call_credential(request)
        fields = request.json() if request.body.strip() else {}
        if not isinstance(fields, dict):
            raise BadRequestError("the body must be a JSON object of the call's fields")
        return credential, fields

    def _call(self, request: HttpRequest, credential: Credential, name: str, body: Any) -> Response:
        """The node's own handler ``name``, as the session's caller."""
        route = self.console.api[name]
        return route.handler(self.console._as_caller(request, credential, route.path, dumps(body)))

    def _answered(self, response: Response) -> Any:
        if response.status != 200:
            raise _Refused(self.console.answer(response))
        return json.loads(response.body)

    def start_downgrade(self, request: HttpRequest) -> Response:
        credential, fields = self._fields(request)
        to = _int_field(fields, "to", 1, None, None)
        check = _Check(credential.principal, to)
        check_id = secrets.token_urlsafe(16)
        with self._lock:
            self._checks[check_id] = check
            while len(self._checks) > KEPT_CHECKS:
                _, old = self._checks.popitem(last=False)
                if old.answer is not None:
                    old.answer.close()
        worker = threading.Thread(
            target=self._run_check, args=(request, credential, check), name="console-downgrade",
            daemon=True,
        )  # fmt: skip
        worker.start()
        return self.console.answer(Response.json(self._status(request, credential, check_id, check)))

    def _run_check(self, request: HttpRequest, credential: Credential, check: _Check) -> None:
        try:
            answer = self._call(request, credential, "downgrade_check", {"to": check.to})
            if answer.status != 200:
                check.failed = (answer.status, json.loads(answer.body))
                return
            headers = dict(answer.headers)
            check.safe = headers.get(SAFE_HEADER) == "true"
            check.offset = int(headers[OFFSET_HEADER])
            body = answer.body if answer.chunks is None else b"".join(answer.chunks)
            check.answer = SpooledAnswer(body, self._dir)
        except Exception as exc:  # the node's error, told to the page that polls
            refusal = error_response(exc)
            check.failed = (refusal.status, json.loads(refusal.body))
        finally:
            check.done.set()

    def _check(self, credential: Credential, fields: dict[str, Any]) -> tuple[str, _Check]:
        check_id = fields.get("check")
        with self._lock:
            check = self._checks.get(check_id) if isinstance(check_id, str) else None
        if check is None or check.principal != credential.principal:
            raise BadRequestError(
                f"check {check_id!r} is not a downgrade check of this session's principal that "
                f"the console still keeps (it keeps the last {KEPT_CHECKS}): run the check again"
            )
        return check_id, check  # type: ignore[return-value]

    def _status(self, request: HttpRequest, credential: Credential, check_id: str,
                check: _Check) -> dict[str, Any]:  # fmt: skip
        out: dict[str, Any] = {"check": check_id, "to": check.to}
        if not check.done.is_set():
            out["state"] = "running"
            progress = self._call(request, credential, "analysis_progress", {})
            if progress.status == 200:
                out["progress"] = json.loads(progress.body)
        elif check.failed is not None:
            out["state"] = "failed"
            out["status"], out["error"] = check.failed
        else:
            assert check.answer is not None
            out.update(state="done", safe=check.safe, offset=check.offset,
                       counts=check.answer.counts())  # fmt: skip
        return out

    def downgrade_status(self, request: HttpRequest) -> Response:
        credential, fields = self._fields(request)
        check_id, check = self._check(credential, fields)
        wait = fields.get("waitS", 0)
        if not isinstance(wait, int | float) or isinstance(wait, bool) or wait < 0:
            raise BadRequestError(f"waitS {wait!r}: seconds to wait for the check to end (0 to 1)")
        check.done.wait(min(float(wait), 1.0))
        return self.console.answer(Response.json(self._status(request, credential, check_id, check)))

    def downgrade_page(self, request: HttpRequest) -> Response:
        credential, fields = self._fields(request)
        _, check = self._check(credential, fields)
        if check.answer is None:
            raise BadRequestError("the check has no answer (yet): ask its status first")
        name = fields.get("list")
        skip = _int_field(fields, "skip", 0, None, 0)
        limit = _int_field(fields, "limit", 1, MAX_PAGE, 100)
        page = check.answer.page(str(name), skip, limit)
        body = {"list": page.name, "items": page.items, "skip": page.skip, "total": page.total,
                "offset": check.offset}  # fmt: skip
        return self.console.answer(Response.json(body))

    # --- the plan of a file ---------------------------------------------------------------------

    def plan(self, request: HttpRequest) -> Response:
        credential, fields = self._fields(request)
        source = fields.get("source") or "pasted file"
        if not isinstance(source, str):
            raise BadRequestError(f"source {source!r}: the file's name, as text")
        desired = read_text(fields.get("text"), source)

        def list_scope(filters: Sequence[AclBindingFilter], scope: Scope) -> tuple[list[AclBinding], int]:
            asked = {"filters": [filter_json(f) for f in filters], "scope": scope_json(scope)}
            answer = self._call(request, credential, "list_acls", asked)
            if answer.status != 200 or answer.chunks is None:
                raise _Refused(self.console.answer(answer))
            reader = ListingReader(answer.chunks)
            try:
                live = [
                    AclBinding.of(*parse_fields((r.resource_type, r.name, r.pattern_type, *acl)))
                    for r in reader for acl in r.acls
                ]  # fmt: skip
            except ListingError as exc:
                raise ReplicaError(f"the listing failed: {exc.message}") from exc
            assert reader.offset is not None  # set by the end line, else ListingError
            return live, reader.offset

        def dry_run(creates: Sequence[AclBinding], removes: Sequence[AclBinding],
                    offset: int) -> DryRunAnswer:  # fmt: skip
            asked = {
                "creates": [binding_json(b) for b in creates],
                "deletes": [filter_json(b.to_filter()) for b in removes],
                "minOffset": offset,
            }
            answer = self._call(request, credential, "dry_run_acls", asked)
            return DryRunAnswer.from_json(self._answered(answer))

        try:
            document = plan_document(desired, list_scope, dry_run)
        except _Refused as refused:
            return refused.response
        return self.console.answer(Response.json(document))


class _Refused(Exception):
    """A handler of the node refused: its answer is the console's."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def safety_routes(console: ConsoleSurface) -> list[Route]:
    return SafetyPage(console).routes()

