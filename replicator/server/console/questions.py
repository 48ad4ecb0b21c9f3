"""The console's history questions as the command line asks them: pure, no I/O.

The console asks the history exactly what ``aclstore history`` asks, by running that command
(:mod:`.runner`): a question's fields become the command's arguments here, checked first so
that a bad value is refused with a typed error naming it before anything runs.  Where the
history lives (the log, its archive, the Spark that reads it) is the node's
:class:`HistorySource`, given at ``aclstore serve --history-archive URI --history-remote URL``.

Every value is passed as ``--option=value``, so a value starting with ``-`` is a value, never
an option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final
from urllib.parse import unquote, urlsplit

from replicator.contract.fields import BadRequestError
from store.acl import AclOperation, ResourceType
from store.errors import InvalidConfigError
from store.principal import KafkaPrincipal, PrincipalFormatError

QUESTIONS: Final = ("when", "who", "events", "diff", "restore")
"""The ``aclstore history`` subcommands the console asks (``restore`` as its dry run only)."""
MAX_TEXT: Final = 1000
"""The longest field value taken (a name, a principal, a time)."""
MAX_PAGE: Final = 1000
"""The most events one page of the feed asks for."""


class HistoryNotConfiguredError(InvalidConfigError):
    """The node was not told where its history lives, or nothing is there yet."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistorySource:
    """Where the node's history lives, as ``aclstore history``'s options name it.

    ``archive`` defaults to ``<data_dir>/history`` (the command's own default); ``remote`` is a
    Spark Connect URL (``sc://HOST:PORT``) or ``local``; without it each question starts a
    local Spark on ``master`` in its own process (tens of seconds).  ``log_config`` is the
    ``--log-config`` file of a Kafka log.
    """

    data_dir: Path
    bootstrap_servers: str | None = None
    topic: str | None = None
    log_config: Path | None = None
    archive: str | None = None
    remote: str | None = None
    master: str | None = None

    def __post_init__(self) -> None:
        if self.topic and not self.bootstrap_servers:
            raise InvalidConfigError("the history's topic needs bootstrap servers (the embedded log "
                                     "has no topics)")  # fmt: skip
        if self.remote is not None and self.master is not None:
            raise InvalidConfigError(
                f"--history-remote {self.remote} with a Spark master {self.master}: the server's "
                "master is its own; drop one"
            )

    @property
    def archive_location(self) -> str:
        return self.archive if self.archive else str(self.data_dir.resolve() / "history")

    def local_archive(self) -> Path | None:
        """The archive's folder when it is on this machine's file system (no scheme, or
        ``file:``); None for another file system (checked by the question itself)."""
        location = self.archive_location
        parts = urlsplit(location)
        if parts.scheme == "file":
            return Path(unquote(parts.path))
        if parts.scheme and len(parts.scheme) > 1:  # a URI of another file system (not C:)
            return None
        return Path(location)

    def options(self) -> list[str]:
        """The options that select the log, the archive and Spark, as ``--name=value``."""
        out = [f"--data-dir={self.data_dir.resolve()}", f"--archive={self.archive_location}"]
        if self.bootstrap_servers:
            out.append(f"--bootstrap-servers={self.bootstrap_servers}")
        if self.topic:
            out.append(f"--topic={self.topic}")
        if self.log_config is not None:
            out.append(f"--log-config={self.log_config.resolve()}")
        if self.remote is not None:
            out.append(f"--remote={self.remote}")
        if self.master is not None:
            out.append(f"--master={self.master}")
        return out


@dataclass(frozen=True, slots=True)
class Question:
    """One question: the subcommand and its own arguments (the source's options not included)."""

    kind: str
    arguments: tuple[str, ...]

    needs_archive: ClassVar[bool] = True
    """Whether the question reads the history archive (asked only once it exists)."""

    def succeeded(self, code: int) -> bool:
        """Whether the command's exit code comes with its answer on stdout."""
        return code == 0

    def argv(self, source: HistorySource) -> list[str]:
        """``history <kind> <arguments> <source options> --format=json``."""
        return ["history", self.kind, *self.arguments, *source.options(), "--format=json"]


# --- the fields of each question ----------------------------------------------------------------


def _text(fields: Mapping[str, Any], name: str, *, required: bool) -> str | None:
    value = fields.get(name)
    if value is None or value == "":
        if required:
            raise BadRequestError(f"{name}: required; fill it in")
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise BadRequestError(f"{name}: {value!r} is not text")
    value = value.strip()
    if not value or len(value) > MAX_TEXT or any(ord(c) < 32 for c in value):
        raise BadRequestError(
            f"{name}: {value[:80]!r} is empty, longer than {MAX_TEXT} characters or holds a "
            "control character"
        )
    return value


def _required(fields: Mapping[str, Any], name: str) -> str:
    value = _text(fields, name, required=True)
    assert value is not None
    return value


def _named(enum_type: type[ResourceType] | type[AclOperation], what: str, text: str) -> str:
    value = enum_type.parse(text)
    if value.is_unknown or value.name == "ANY":
        known = ", ".join(m.name for m in enum_type if m.name not in ("UNKNOWN", "ANY"))
        raise BadRequestError(f"{what} {text!r} is not one; use one of {known}")
    return value.name


def _principal(text: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text))
    except PrincipalFormatError as exc:
        raise BadRequestError(f"principal {text!r}: {exc.message}") from exc


def _offset(fields: Mapping[str, Any], name: str) -> int | None:
    value = fields.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if isinstance(value, bool) or number < 0:
        raise BadRequestError(f"{name}: {value!r} is not a log offset (an integer >= 0)")
    return number


def _page(fields: Mapping[str, Any]) -> list[str]:
    """The feed's page: ``limit`` (1..MAX_PAGE, required: the console never asks a whole range)
    and the cursor ``after`` (optional: the first page without it)."""
    limit = fields.get("limit")
    size = 0
    if isinstance(limit, int) and not isinstance(limit, bool):
        size = limit
    elif isinstance(limit, str) and limit.isdigit():
        size = int(limit)
    if not 1 <= size <= MAX_PAGE:
        raise BadRequestError(f"limit: {limit!r} is not a page size; give an integer from 1 to {MAX_PAGE}")
    after = _offset(fields, "after")
    return [f"--limit={size}", *([] if after is None else [f"--after={after}"])]


def _resource(fields: Mapping[str, Any]) -> list[str]:
    return [
        f"--resource-type={_named(ResourceType, 'resource type', _required(fields, 'resourceType'))}",
        f"--resource-name={_required(fields, 'resourceName')}",
        f"--operation={_named(AclOperation, 'operation', _required(fields, 'operation'))}",
        f"--host={_text(fields, 'host', required=False) or '*'}",
    ]


def _point(fields: Mapping[str, Any]) -> list[str]:
    """``--at`` or ``--offset``: exactly one (a time is checked by the command itself)."""
    at = _text(fields, "at", required=False)
    offset = _offset(fields, "offset")
    if (at is None) == (offset is None):
        raise BadRequestError("give one of at (a time: ISO-8601 or epoch ms) or offset (a log offset)")
    return [f"--at={at}"] if at is not None else [f"--offset={offset}"]


def _range(fields: Mapping[str, Any], *, required: bool = False) -> list[str]:
    out = []
    for name, option in (("from", "--from"), ("to", "--to")):
        value = _text(fields, name, required=required)
        if value is not None:
            out.append(f"{option}={value}")
    return out


def question(kind: Any, fields: Any) -> Question:
    """The question ``kind`` with ``fields`` (the page's JSON object), checked.

    * ``when``: ``principal``, ``resourceType``, ``resourceName``, ``operation``, ``host``
      (default ``*``), optional ``from``/``to``;
    * ``who``: the resource fields and ``at`` or ``offset``;
    * ``events``: ``limit`` (a page's size), optional ``after`` (the page's cursor: the
      previous page's ``next``) and ``from``/``to``;  ``diff``: ``from`` and ``to``;
    * ``restore``: ``at`` or ``offset`` (the plan only: the write is its own request).
    """
    if kind not in QUESTIONS:
        raise BadRequestError(f"question {kind!r} is not one the console asks; use one of "
                              f"{', '.join(QUESTIONS)}")  # fmt: skip
    if not isinstance(fields, Mapping):
        raise BadRequestError("fields: give a JSON object of the question's fields")
    if kind == "when":
        args = [f"--principal={_principal(_required(fields, 'principal'))}", *_resource(fields),
                *_range(fields)]  # fmt: skip
    elif kind == "who":
        args = [*_resource(fields), *_point(fields)]
    elif kind == "events":
        args = [*_range(fields), *_page(fields)]
    elif kind == "diff":
        args = _range(fields, required=True)
    else:
        args = _point(fields)
    return Question(str(kind), tuple(args))


def cli_error(stderr: str) -> str:
    """The command's own message from what it wrote on stderr: its last ``error:`` line
    (the command's refusals are one such line), else the last line written."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("error: "):
            return line[len("error: "):]
    return lines[-1] if lines else "the question ended without an answer and without a message"
