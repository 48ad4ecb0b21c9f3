"""A downgrade check's answer kept on disk and read a page at a time.

At a million bindings the node's answer to ``/v1/format/downgrade-check`` is about 150 MB of
JSON, one item of each list per line (:meth:`replicator.access.parallel.DowngradeDocument.write`):
a header line opening ``ignored``, its items, a line closing it and opening ``widened``, and
so on.  The console writes that body to a file once, notes where each item's line starts
(:class:`LineIndex`, pure), and answers a page by seeking to its first line: a page costs its
own lines, not the answer.

* :func:`index_body`: the lists' item lines of a body, by list;
* :class:`SpooledAnswer`: the file, its index, and :meth:`SpooledAnswer.page`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from array import array
from dataclasses import dataclass, field
from typing import Any, Final

from replicator.contract.fields import BadRequestError

LISTS: Final = ("ignored", "widened", "narrowed")
"""The answer's lists, in the order the body writes them."""
_OPENS: Final = re.compile(rb'"(ignored|widened|narrowed)":\[$')


class BodyShapeError(ValueError):
    """The body is not laid out one item a line as the node writes it."""


@dataclass(slots=True)
class LineIndex:
    """Where each list's item lines start in the body, and where the body ends."""

    starts: dict[str, array[int]] = field(
        default_factory=lambda: {name: array("q") for name in LISTS}
    )
    size: int = 0

    def count(self, name: str) -> int:
        return len(self.starts[name])


def index_body(body: bytes) -> LineIndex:
    """The item lines of each list in ``body``.  The first line is the header; a later line
    starting with ``{`` is an item of the list the last structural line opened (one ending
    in ``"name":[``); a list written empty (``[]``) opens nothing."""
    index = LineIndex(size=len(body))
    current: str | None = None
    start = 0
    first = True
    while start < len(body):
        end = body.find(b"\n", start)
        end = len(body) if end < 0 else end
        line = body[start:end]
        if not first and line.startswith(b"{"):
            if current is None:
                raise BodyShapeError(f"an item at byte {start} outside every list")
            index.starts[current].append(start)
        else:
            opened = _OPENS.search(line)
            current = None if opened is None else opened.group(1).decode()
        first = False
        start = end + 1
    return index


def item_of(line: bytes) -> Any:
    """One item line's JSON value (the separating comma dropped)."""
    text = line.rstrip(b"\r\n ")
    if text.endswith(b","):
        text = text[:-1]
    return json.loads(text)


@dataclass(frozen=True, slots=True)
class ListPage:
    """Items ``skip`` to ``skip + len(items)`` of one list, and how many it holds."""

    name: str
    items: list[Any]
    skip: int
    total: int


class SpooledAnswer:
    """A downgrade check's body in a file of its own (removed by :meth:`close`)."""

    def __init__(self, body: bytes, directory: str | None = None) -> None:
        self.index = index_body(body)
        fd, self.path = tempfile.mkstemp(prefix="downgrade-", suffix=".json", dir=directory)
        with os.fdopen(fd, "wb") as out:
            out.write(body)

    def counts(self) -> dict[str, int]:
        return {name: self.index.count(name) for name in LISTS}

    def page(self, name: str, skip: int, limit: int) -> ListPage:
        """Items ``skip`` to ``skip + limit`` of list ``name``: one seek, then their lines."""
        if name not in LISTS:
            raise BadRequestError(f"list {name!r}: use one of {', '.join(LISTS)}")
        starts = self.index.starts[name]
        total = len(starts)
        items: list[Any] = []
        if skip < total:
            with open(self.path, "rb") as body:
                body.seek(starts[skip])
                for _ in range(min(limit, total - skip)):
                    items.append(item_of(body.readline()))
        return ListPage(name, items, skip, total)

    def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
