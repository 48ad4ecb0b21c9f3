"""The bindings of a file read as it streams: pure, chunks of text in, items out.

Three shapes are read, so that what one aclstore command writes another loads:

* the document ``aclstore acls --list --format json`` prints (``{"bindings": [...],
  "offset": N}``; other keys before or after ``bindings`` are skipped);
* a bare JSON array of bindings;
* JSON Lines: one binding object after another, separated by white space (an empty file is
  none).

Only the item being read is held (and the chunk it sits in): a file of a million bindings is
read in bounded memory.  Each item comes with its number (from 1) and the line it starts on,
so that an error can name both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from store.errors import InvalidRequestError

MAX_ITEM_CHARS: Final = 1 << 20
"""An item longer than this is an error (a binding takes a few hundred characters)."""
_DECODER: Final = json.JSONDecoder()
_SPACE: Final = " \t\r\n"
_DOCUMENT_KEYS: Final = frozenset({"bindings", "offset"})
"""The listing document's keys: a binding has neither."""


class BindingFileError(InvalidRequestError):
    """The file is not one of the three shapes, or is cut short; the message names the line."""


@dataclass(frozen=True, slots=True)
class Item:
    number: int
    """The item's place in the file, from 1."""
    line: int
    """The line the item starts on, from 1."""
    value: Any


class _Text:
    """The text read so far past what was consumed, with the line count of what was."""

    def __init__(self, chunks: Iterable[str], source: str) -> None:
        self._chunks = iter(chunks)
        self.source = source
        self.buf = ""
        self.pos = 0
        self.line = 1
        self.ended = False
        self.mark: int | None = None
        """A place in ``buf`` that reading more must keep (to read the first object again)."""

    def more(self) -> bool:
        """Read another chunk; False at the end of the text."""
        if self.ended:
            return False
        for chunk in self._chunks:
            if chunk:
                cut = self.pos if self.mark is None else min(self.mark, self.pos)
                self.buf = self.buf[cut:] + chunk
                self.pos -= cut
                if self.mark is not None:
                    self.mark -= cut
                return True
        self.ended = True
        return False

    def advance(self, to: int) -> None:
        self.line += self.buf.count("\n", self.pos, to)
        self.pos = to

    def skip_space(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            at = self.pos
            while at < len(self.buf) and self.buf[at] in _SPACE:
                at += 1
            self.advance(at)
            if at < len(self.buf):
                return self.buf[at]
            if not self.more():
                return ""

    def expect(self, char: str, what: str) -> None:
        found = self.skip_space()
        if found != char:
            raise self.error(f"expected {what}, found {_shown(found)}")
        self.advance(self.pos + 1)

    def value(self) -> Any:
        """The JSON value starting here (white space skipped)."""
        if not self.skip_space():
            raise self.error("the file ends where a value should be: it is cut short")
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos > MAX_ITEM_CHARS or not self.more():
                    raise self._decode_error(exc) from None
                continue
            # a number or literal at the end may go on in the next chunk: read it before deciding
            if end == len(self.buf) and self.buf[self.pos] not in '{["' and self.more():
                continue
            self.advance(end)
            return value

    def _decode_error(self, exc: json.JSONDecodeError) -> BindingFileError:
        line = self.line + self.buf.count("\n", self.pos, exc.pos)
        column = exc.pos - (self.buf.rfind("\n", 0, exc.pos) + 1) + 1
        if exc.pos >= len(self.buf) and self.ended:
            return BindingFileError(
                f"{self.source}, line {self.line}: the file ends inside the value that starts "
                "here: it is cut short"
            )
        return BindingFileError(f"{self.source}, line {line}, column {column}: {exc.msg}")

    def error(self, message: str) -> BindingFileError:
        return BindingFileError(f"{self.source}, line {self.line}: {message}")


def _shown(char: str) -> str:
    return "the end of the file" if not char else repr(char)


_SHAPES: Final = (
    "write the document `aclstore acls --list --format json` prints, a JSON array of "
    "bindings, or one binding object per line"
)


def binding_items(chunks: Iterable[str], source: str) -> Iterator[Item]:
    """The items of the file whose text comes in ``chunks``; ``source`` names it in errors."""
    text = _Text(chunks, source)
    first = text.skip_space()
    if not first:  # an empty file: no bindings
        return
    if first == "[":
        text.advance(text.pos + 1)
        yield from _array(text, 0)
        _end(text)
        return
    if first != "{":
        raise text.error(f"{_SHAPES}; found {_shown(first)}")
    # The listing document, or JSON Lines: the first key tells (a binding has neither key).
    start_line, start = text.line, text.pos
    text.mark = start
    text.advance(text.pos + 1)
    key = text.value() if text.skip_space() == '"' else None
    document = isinstance(key, str) and key in _DOCUMENT_KEYS and text.skip_space() == ":"
    start, text.mark = text.mark, None  # the same place, moved if more text was read
    assert start is not None
    if not document:
        text.line, text.pos = start_line, start
        yield from _lines(text)
        return
    text.advance(text.pos + 1)
    yield from _document(text, str(key))


def _document(text: _Text, key: str) -> Iterator[Item]:
    seen_bindings = False
    while True:
        if key == "bindings":
            if seen_bindings:
                raise text.error('"bindings" appears twice in the document')
            seen_bindings = True
            text.expect("[", 'the array of "bindings"')
            yield from _array(text, 0)
        else:
            text.value()
        following = text.skip_space()
        if following == "}":
            text.advance(text.pos + 1)
            break
        if following != ",":
            raise text.error(f"expected ',' or '}}' after {key!r}, found {_shown(following)}")
        text.advance(text.pos + 1)
        if text.skip_space() != '"':
            raise text.error(f"expected a key, found {_shown(text.skip_space())}")
        key = text.value()
        text.expect(":", "':' after a key")
    if not seen_bindings:
        raise text.error(f'the document has no "bindings": {_SHAPES}')
    _end(text)


def _array(text: _Text, numbered: int) -> Iterator[Item]:
    if text.skip_space() == "]":
        text.advance(text.pos + 1)
        return
    while True:
        text.skip_space()
        line = text.line
        numbered += 1
        yield Item(numbered, line, text.value())
        following = text.skip_space()
        if following not in ("]", ","):
            raise text.error(f"expected ',' or ']' after binding #{numbered}, found {_shown(following)}")
        text.advance(text.pos + 1)
        if following == "]":
            return


def _lines(text: _Text) -> Iterator[Item]:
    numbered = 0
    while text.skip_space():
        line = text.line
        numbered += 1
        yield Item(numbered, line, text.value())


def _end(text: _Text) -> None:
    trailing = text.skip_space()
    if trailing:
        raise text.error(f"unexpected {trailing!r} after the bindings: {_SHAPES}")
