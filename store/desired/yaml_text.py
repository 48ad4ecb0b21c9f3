"""YAML text to values that remember their line, for errors that name it.

PyYAML's composer (libyaml's where installed) builds the node tree; each node becomes a
:class:`Located` value: a mapping (``dict[str, Located]``), a sequence (``list[Located]``) or a
scalar (str, int, float, bool, None by YAML 1.1's core tags), with its 1-based line.  A
duplicate key is an error (PyYAML would keep the last one silently), so is an anchor's alias
of a mapping used to merge (``<<``).  Pure: text in, values out.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import yaml

from store.desired.errors import AclsFileError

try:  # libyaml's parser and composer, where PyYAML was built with it
    _Base: type[Any] = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - a PyYAML without libyaml
    _Base = yaml.SafeLoader

_STR: Final = "tag:yaml.org,2002:str"
_WORDS: Final = ("yes", "no", "true", "false", "on", "off", "null")
_MAYBE_NOT_TEXT: Final = frozenset(v for w in _WORDS for v in (w, w.title(), w.upper())) | {"~"}
_NOT_TEXT_START: Final = frozenset("0123456789+-.<=~")


class _Loader(_Base):  # type: ignore[misc]
    """The safe loader, with a fast answer for the plain scalars that can only be text.

    YAML 1.1's implicit tags (int, float, bool, null, timestamp, merge, value) are regular
    expressions tried on every plain scalar, in Python, from libyaml's composer: most of the
    time of reading a large file.  A scalar that starts with none of their first characters and
    is none of their words is text; everything else goes to PyYAML's resolver as before."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and (
            not implicit[0] or (value and value[0] not in _NOT_TEXT_START and value not in _MAYBE_NOT_TEXT)
        ):
            return _STR
        return super().resolve(kind, value, implicit)


_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})


class Located(NamedTuple):
    """A value of the file and the line it starts on (1-based)."""

    value: Any
    line: int


def parse_yaml(text: str, source: str) -> Located:
    """The one document of ``text``; :class:`AclsFileError` naming ``source`` and the line
    for text that is not YAML, or holds several documents, or none."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise AclsFileError(
            source, line, f"not valid YAML: {exc.problem or exc.context}; fix the syntax there"
        ) from exc
    except yaml.YAMLError as exc:
        raise AclsFileError(source, 0, f"not valid YAML: {exc}") from exc
    if node is None:
        raise AclsFileError(source, 0, "the file is empty; start it with `version: 1`")
    return _located(node, source)


def _located(node: yaml.Node, source: str) -> Located:
    line = node.start_mark.line + 1
    cls = node.__class__
    if cls is yaml.ScalarNode:
        return Located(node.value if node.tag == _STR else _scalar(node), line)
    if cls is yaml.MappingNode:
        out: dict[str, Located] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise AclsFileError(source, key_node.start_mark.line + 1, "a key must be a plain name")
            key = str(key_node.value)
            if key == "<<":
                raise AclsFileError(source, key_node.start_mark.line + 1, "merge keys (<<) are not "
                                    "supported; write the keys out")  # fmt: skip
            if key in out:
                raise AclsFileError(
                    source, key_node.start_mark.line + 1,
                    f"key {key!r} given twice in this mapping (first on line {out[key].line}); "
                    "keep one",
                )  # fmt: skip
            out[key] = _located(value_node, source)
        return Located(out, line)
    if cls is yaml.SequenceNode:
        return Located([_located(item, source) for item in node.value], line)
    return Located(_scalar(node), line)


def _scalar(node: yaml.Node) -> Any:
    text, tag = str(node.value), node.tag
    if tag.endswith(":str") or tag == "!":
        return text
    if tag.endswith(":null"):
        return None
    if tag.endswith(":bool"):
        return text.lower() in _TRUE if text.lower() in _TRUE | _FALSE else text
    if tag.endswith(":int"):
        try:
            return int(text.replace("_", ""), 0)
        except ValueError:
            return text
    if tag.endswith(":float"):
        try:
            return float(text.replace("_", ""))
        except ValueError:
            return text
    return text
