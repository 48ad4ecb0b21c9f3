"""The Safety page's drift view: ``aclstore drift -f FILE`` for a pasted ACLs file, asked
through the console's query path (:mod:`.runner`), as the command line asks it.

* ``POST /ui/api/safety/drift`` ``{"text", "source"}``: the file is read as ``plan`` and
  ``drift`` read it (a bad file is refused at once, naming the line), written to a file of the
  node's, and ``aclstore drift --file=FILE <the log's options> --format=json`` runs as a child
  process of the node; answers the job, polled at ``/ui/api/history/status``.  Its answer is the
  command's document: the undeclared, missing and outside bindings, each with the change that
  made it so (actor, offset, time), and the log offset read.

Drift reads the change log itself (it folds the log to attribute each binding), not the
archive: it is asked without one.  Exit 2 (drift found) is an answer, as exit 0 is.
"""

from __future__ import annotations

import atexit
import contextlib
import secrets
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final

from replicator.server.console.history import ConsoleCalls, HistoryCalls, ReaderCheck
from replicator.server.console.planning import read_text
from replicator.server.console.questions import HistorySource, Question
from replicator.server.console.runner import QuestionRunner
from replicator.server.http import HttpRequest, Response, Route

DRIFT_EXIT: Final = 2
"""``aclstore drift``'s exit code when it found drift (its answer is on stdout)."""
KEPT_FILES: Final = 8
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@dataclass(frozen=True, slots=True)
class DriftQuestion(Question):
    """``drift`` of one file (its path among the arguments)."""

    needs_archive: ClassVar[bool] = False

    def succeeded(self, code: int) -> bool:
        return code in (0, DRIFT_EXIT)

    def argv(self, source: HistorySource) -> list[str]:
        """``drift <arguments> <source options> --format=json``."""
        return ["drift", *self.arguments, *source.options(), "--format=json"]


def file_name(source: object) -> str:
    """The name the pasted file is written under: the page's name for it, if it is a plain
    file name, else ``acls.yaml``."""
    if not isinstance(source, str):
        return "acls.yaml"
    name = source.strip().rsplit("/", 1)[-1]
    ok = 0 < len(name) <= 100 and set(name) <= _NAME_CHARS and not name.startswith(".")
    return name if ok else "acls.yaml"


class DriftCalls(HistoryCalls):
    """The drift call of the Safety page, over the runner of the history's questions."""

    def __init__(self, console: ConsoleCalls, runner: QuestionRunner, may_read: ReaderCheck | None) -> None:
        super().__init__(console, runner, may_read)
        self._dir = Path(tempfile.mkdtemp(prefix="aclstore-console-drift-"))
        atexit.register(shutil.rmtree, self._dir, ignore_errors=True)
        self._files: OrderedDict[str, Path] = OrderedDict()
        self._lock = threading.Lock()

    def routes(self) -> list[Route]:
        return [Route("POST", "/ui/api/safety/drift", "console_drift", self.ask_drift)]

    def ask_drift(self, request: HttpRequest) -> Response:
        session, fields = self._caller(request)
        text = fields.get("text")
        name = file_name(fields.get("source"))
        read_text(text, name)  # refused here, naming the line, before anything runs
        assert isinstance(text, str)
        folder = self._dir / secrets.token_urlsafe(9)
        folder.mkdir()
        path = folder / name
        path.write_text(text, encoding="utf-8")
        try:
            view = self.runner.ask(session, DriftQuestion("drift", (f"--file={path}",)))
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        with self._lock:
            self._files[str(view["job"])] = folder
            while len(self._files) > KEPT_FILES:
                _, old = self._files.popitem(last=False)
                with contextlib.suppress(OSError):
                    shutil.rmtree(old)
        return self.console.answer(Response.json(view))
