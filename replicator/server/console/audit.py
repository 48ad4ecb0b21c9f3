"""The Audit page (``/ui/audit``): ``aclstore audit report`` asked through the console's query
path (:mod:`.runner`), as the command line asks it.

* ``POST /ui/api/audit/ask`` ``{"fields": {"since", "top", "windowDays"}}``: runs
  ``aclstore audit report --since=T … --format=json --plot=FILE.png`` as a child process of the
  node (the history's source options: the log, the archive, Spark); answers the job, polled at
  ``/ui/api/history/status`` like every question of the runner.  The answer is the command's
  own document: totals, the new denials each with its cause (the change after which the
  request, allowed before, was denied), the unused grants, the most denied principals and
  resources;
* ``GET /ui/api/audit/plot?job=ID``: the denials over time, the PNG the same command drew
  (``--plot``), for the session that asked.

Reading the audit takes what reading the history takes (DESCRIBE on the CLUSTER).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from replicator.contract.fields import BadRequestError
from replicator.server.console.history import ConsoleCalls, HistoryCalls, ReaderCheck, session_key
from replicator.server.console.questions import MAX_TEXT, HistorySource, Question
from replicator.server.console.runner import QuestionRunner
from replicator.server.console.sessions import Credential
from replicator.server.errors import UnauthenticatedError
from replicator.server.http import HttpRequest, Response, Route

KEPT_PLOTS: Final = 8
MAX_TOP: Final = 1000
PAGE_NAME: Final = "audit.html"
SCRIPT_NAME: Final = "audit.js"


@dataclass(frozen=True, slots=True)
class AuditQuestion(Question):
    """``audit report`` with its own arguments (the plot's file among them)."""

    def argv(self, source: HistorySource) -> list[str]:
        """``audit report <arguments> <source options> --format=json``."""
        return ["audit", "report", *self.arguments, *source.options(), "--format=json"]


def _bounded(fields: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = fields.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = low - 1
    if isinstance(value, bool) or not low <= number <= high:
        raise BadRequestError(f"{name}: {value!r} is not an integer from {low} to {high}")
    return number


def audit_question(fields: Any, plot: Path) -> AuditQuestion:
    """The report's question from the page's fields: ``since`` (a time, checked by the command
    itself: ISO-8601 or epoch ms), ``top`` and ``windowDays`` (the command's defaults when
    empty); every value as ``--option=value``."""
    if not isinstance(fields, Mapping):
        raise BadRequestError("fields: give a JSON object of the report's fields")
    since = fields.get("since")
    if isinstance(since, int) and not isinstance(since, bool):
        since = str(since)
    if not isinstance(since, str) or not since.strip():
        raise BadRequestError("since: required; a time (ISO-8601 or epoch ms)")
    since = since.strip()
    if len(since) > MAX_TEXT or any(ord(c) < 32 for c in since):
        raise BadRequestError(f"since: {since[:80]!r} is too long or holds a control character")
    args = [f"--since={since}"]
    top = _bounded(fields, "top", 1, MAX_TOP)
    if top is not None:
        args.append(f"--top={top}")
    window = _bounded(fields, "windowDays", 1, 3650)
    if window is not None:
        args.append(f"--window-days={window}")
    args.append(f"--plot={plot}")
    return AuditQuestion("audit", tuple(args))


class AuditCalls(HistoryCalls):
    """The Audit page's page, script and calls, over the runner of the history's questions."""

    def __init__(self, console: ConsoleCalls, runner: QuestionRunner, may_read: ReaderCheck | None,
                 check_page: Callable[[HttpRequest], Credential]) -> None:  # fmt: skip
        super().__init__(console, runner, may_read)
        self.check_page = check_page
        """The console's session check for a page (raises when there is no session)."""
        self._plots_dir = Path(tempfile.mkdtemp(prefix="aclstore-console-plots-"))
        self._plots: OrderedDict[str, tuple[str, Path]] = OrderedDict()
        self._lock = threading.Lock()
        root = resources.files(__package__).joinpath("assets")
        self._page = root.joinpath(PAGE_NAME).read_bytes()
        self._script = root.joinpath(SCRIPT_NAME).read_bytes()

    def routes(self) -> list[Route]:
        return [
            Route("GET", "/ui/audit", "console_page", self.page),
            Route("GET", f"/ui/{SCRIPT_NAME}", "console_asset", self.script),
            Route("POST", "/ui/api/audit/ask", "console_audit_ask", self.ask_report),
            Route("GET", "/ui/api/audit/plot", "console_audit_plot", self.plot),
        ]

    def page(self, request: HttpRequest) -> Response:
        try:
            self.check_page(request)
        except UnauthenticatedError:
            return self.console.answer(Response(303, b"", "text/html; charset=utf-8",
                                                (("Location", "/ui/login"),)))  # fmt: skip
        return self.console.answer(Response(200, self._page, "text/html; charset=utf-8"))

    def script(self, request: HttpRequest) -> Response:
        self.check_page(request)
        return self.console.answer(Response(200, self._script, "text/javascript; charset=utf-8"))

    def ask_report(self, request: HttpRequest) -> Response:
        session, fields = self._caller(request)
        plot = self._plots_dir / f"{secrets.token_urlsafe(12)}.png"
        view = self.runner.ask(session, audit_question(fields.get("fields", {}), plot))
        with self._lock:
            self._plots[str(view["job"])] = (session, plot)
            while len(self._plots) > KEPT_PLOTS:
                _, (_, old) = self._plots.popitem(last=False)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(old)
        return self.console.answer(Response.json(view))

    def plot(self, request: HttpRequest) -> Response:
        """The PNG of a done report of this session (an image: the page's session cookie, no
        call header, as the browser fetches an ``<img>``)."""
        credential = self.check_page(request)
        if self.may_read is not None:
            self.may_read(credential.principal, request.address)
        session_id = self.console.session_id(request)
        assert session_id is not None  # the page's check found the session
        job = request.query.get("job", [""])[0]
        with self._lock:
            kept = self._plots.get(job)
        if kept is None or kept[0] != session_key(session_id) or not kept[1].exists():
            raise BadRequestError(
                f"job {job!r}: no plot of this session's report (it is drawn when the report is "
                "done; the console keeps the last few)"
            )
        return self.console.answer(Response(200, kept[1].read_bytes(), "image/png"))
