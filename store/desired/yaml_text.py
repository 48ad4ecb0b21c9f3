"""YAML text to values that remember their line, for errors that name it.

PyYAML's composer (libyaml's where installed) builds the node tree; each node becomes a
:class:`Located` value: a mapping (``dict[str, Located]``), a sequence (``list[Located]``) or a
scalar (str, int, float, bool, None by YAML 1.1's core tags), with its 1-based line.  A
duplicate key is an error (PyYAML would keep the last one silently), so is an anchor's alias
of a mapping used to merge (``<<``).  Pure: text in, values out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from store.desired.errors import AclsFileError

try:  # libyaml's composer, where PyYAML was built with it
    _Loader: type[Any] = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - a PyYAML without libyaml
    _Loader = yaml.SafeLoader

_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})


@dataclass(frozen=True, slots=True)
class Located:
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
    if isinstance(node, yaml.MappingNode):
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
    if isinstance(node, yaml.SequenceNode):
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
