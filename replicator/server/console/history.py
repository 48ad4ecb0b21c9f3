"""The console's calls for the history's questions (:mod:`.runner`), under ``/ui/api/history``.

* ``POST /ui/api/history/ask`` ``{"question": "when", "fields": {...}}``: starts the question
  (:func:`.questions.question` names each kind's fields) and answers its job:
  ``{"job", "question", "phase", "elapsedS", "records"}``;
* ``POST /ui/api/history/status`` ``{"job": ID}``: the job now, with ``answer`` (the command's
  own JSON document) once ``phase`` is ``done``, or ``error`` once ``failed``/``cancelled``;
  the page polls it, and a job whose page stops polling is cancelled;
* ``POST /ui/api/history/cancel`` ``{"job": ID}``: cancels it (the page is left).

The history shows every binding there was, so asking it takes what describing the ACLs takes:
DESCRIBE on the CLUSTER, checked by the admin for the session's principal on every question.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Protocol

from replicator.contract.fields import BadRequestError
from replicator.server.console.questions import question
from replicator.server.console.runner import QuestionRunner
from replicator.server.console.sessions import Credential
from replicator.server.http import HttpRequest, Response, Route

ReaderCheck = Callable[[str, str], object]
"""``(principal, host)``: raises when that caller may not read the history."""


def session_key(session_id: str) -> str:
    """The key a session's jobs are kept under (a digest: the id is a bearer secret)."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


class ConsoleCalls(Protocol):
    """What the calls need of the console (:class:`.routes.Console`): its session checks and
    its answer headers."""

    def call_credential(self, request: HttpRequest) -> Credential: ...

    def session_id(self, request: HttpRequest) -> str | None: ...

    def answer(self, response: Response) -> Response: ...


class HistoryCalls:
    """The history calls of ``console``, run by ``runner``, checked by ``may_read``."""

    def __init__(self, console: ConsoleCalls, runner: QuestionRunner, may_read: ReaderCheck | None) -> None:
        self.console = console
        self.runner = runner
        self.may_read = may_read

    def routes(self) -> list[Route]:
        return [
            Route("POST", "/ui/api/history/ask", "console_history_ask", self.ask),
            Route("POST", "/ui/api/history/status", "console_history_status", self.status),
            Route("POST", "/ui/api/history/cancel", "console_history_cancel", self.cancel),
        ]

    def _caller(self, request: HttpRequest) -> tuple[str, dict[str, Any]]:
        """The session's key and the call's JSON object, once the session may ask."""
        credential = self.console.call_credential(request)
        if self.may_read is not None:
            self.may_read(credential.principal, request.address)
        session_id = self.console.session_id(request)
        assert session_id is not None  # call_credential found the session
        fields = request.json()
        if not isinstance(fields, dict):
            raise BadRequestError("the body must be a JSON object")
        return session_key(session_id), fields

    def ask(self, request: HttpRequest) -> Response:
        session, fields = self._caller(request)
        asked = question(fields.get("question"), fields.get("fields", {}))
        return self.console.answer(Response.json(self.runner.ask(session, asked)))

    def status(self, request: HttpRequest) -> Response:
        session, fields = self._caller(request)
        return self.console.answer(Response.json(self.runner.status(session, fields.get("job"))))

    def cancel(self, request: HttpRequest) -> Response:
        session, fields = self._caller(request)
        return self.console.answer(Response.json(self.runner.cancel(session, fields.get("job"))))
