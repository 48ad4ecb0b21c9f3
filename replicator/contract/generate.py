"""The code :mod:`replicator.contract.declare` generates for each declared message.

For a message it writes, as Python source compiled once (as :mod:`dataclasses` writes
``__init__``), the parser (a JSON value to the instance, or to ``build(...)`` of its fields),
the writer (the instance to a JSON object) and ``__init__``.  Generated rather than a loop
over field objects: the decision endpoints read a message per action.  Each field is read
inline when its kind takes a value as it is (``exact``) or by a lookup (``names``); else its
kind's reader is called, which also raises the error.  Slots are set through their
descriptors, past the frozen dataclass's ``__setattr__`` guard.  The source is kept in
:mod:`linecache`, so a traceback shows the generated line.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

from replicator.contract.fields import ABSENT, BadRequestError, show, where


class KindSpec(Protocol):
    """What the generated code needs of a field's kind (:class:`~replicator.contract.declare.Kind`)."""

    @property
    def exact(self) -> type | None: ...

    @property
    def names(self) -> Mapping[str, Any] | None: ...

    @property
    def plain(self) -> bool: ...

    def reader(self) -> Callable[[Any, str, str | int], Any]: ...

    def writer(self) -> Callable[[Any], Any]: ...


class FieldSpec(Protocol):
    """What the generated code needs of a declared field (:class:`~replicator.contract.declare.Field`)."""

    @property
    def attribute(self) -> str: ...

    @property
    def json(self) -> str: ...

    @property
    def kind(self) -> KindSpec: ...

    @property
    def default(self) -> Any: ...

    @property
    def factory(self) -> Callable[[], Any] | None: ...

    @property
    def null_is_absent(self) -> bool: ...

    @property
    def required(self) -> bool: ...

    @property
    def omitted_when_none(self) -> bool: ...


class ShapeSpec(Protocol):
    """What the generated code needs of a declared message (:class:`~replicator.contract.declare.Shape`)."""

    @property
    def cls(self) -> type[Any]: ...

    @property
    def fields(self) -> tuple[FieldSpec, ...]: ...

    @property
    def read_order(self) -> tuple[FieldSpec, ...]: ...

    @property
    def read_first(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    @property
    def checks(self) -> bool: ...

    @property
    def checks_body(self) -> bool: ...


def _not_object(value: Any, path: str) -> BadRequestError:
    return BadRequestError(f"{path or 'the body'} must be a JSON object, got {show(value)}")


def _unknown_field(value: dict[str, Any], path: str, known: frozenset[str]) -> BadRequestError:
    """The first unknown key by name, and the keys that are known (a typo must not pass)."""
    unknown = sorted(value.keys() - known)[0]
    prefix = f"{path}." if path else ""
    return BadRequestError(f"unknown field {prefix}{unknown}; known fields: {', '.join(sorted(known))}")


def compile_reader(
    s: ShapeSpec, build: Callable[..., Any] | None = None
) -> Callable[[Any, str, str | int], Any]:
    """The parser of ``s``: each field read into a local ``f<i>`` (``i``: its place in the
    declaration), then the instance made from them, or ``build(f0, f1, ...)`` when given."""
    known = frozenset(f.json for f in s.fields)
    scope: dict[str, Any] = {
        "cls": s.cls, "new": object.__new__, "where": where, "ABSENT": ABSENT, "build": build,
        "not_object": _not_object, "unknown_field": _unknown_field, "KNOWN": known,
    }  # fmt: skip
    body = [
        "    if value.__class__ is not dict:",
        "        raise not_object(value, where(parent, key))",
        "    if key.__class__ is int:",
        '        path = f"{parent}[{key}]"',
        "    elif parent and key:",
        '        path = f"{parent}.{key}"',
        "    else:",
        "        path = parent or key",
    ]
    if s.closed:
        body += ["    if not value.keys() <= KNOWN:", "        raise unknown_field(value, path, KNOWN)"]
    body.append("    get = value.get")
    place = {f.attribute: i for i, f in enumerate(s.fields)}
    for n, f in enumerate(s.read_order):
        if s.checks_body and n == s.read_first:
            body.append("    cls.check_body(value, path)")
        i = place[f.attribute]
        scope[f"r{i}"] = f.kind.reader()
        scope[f"X{i}"] = f.kind.exact
        scope[f"L{i}"] = f.kind.names
        scope[f"d{i}"] = f.factory if f.factory is not None else f.default
        default = f"d{i}()" if f.factory is not None else f"d{i}"
        if f.required:
            body += [f"    v = get({f.json!r})", *_value_lines(i, f, "    ")]
        elif f.default is None or f.null_is_absent:
            body += [f"    v = get({f.json!r})", "    if v is None:", f"        f{i} = {default}",
                     "    else:", *_value_lines(i, f, "        ")]  # fmt: skip
        else:
            body += [f"    v = get({f.json!r}, ABSENT)", "    if v is ABSENT:",
                     f"        f{i} = {default}", "    else:", *_value_lines(i, f, "        ")]  # fmt: skip
    if build is not None:
        body.append(f"    return build({', '.join(f'f{i}' for i in range(len(s.fields)))})")
    else:
        body.append("    obj = new(cls)")
        for i, f in enumerate(s.fields):
            scope[f"s{i}"] = getattr(s.cls, f.attribute).__set__  # the slot, past the frozen guard
            body.append(f"    s{i}(obj, f{i})")
        if s.checks:
            body.append("    obj.check(path)")
        body.append("    return obj")
    name = f"read_{s.cls.__name__}" if build is None else f"build_from_{s.cls.__name__}"
    reader = _define(name, "value, parent, key", body, scope)
    return cast(Callable[[Any, str, "str | int"], Any], reader)


def _value_lines(i: int, f: FieldSpec, indent: str) -> list[str]:
    """Read ``v`` into ``f<i>``: inline when the kind takes a value as it is (``exact``) or by
    a lookup (``names``), else by calling its reader (which also raises the errors)."""
    read = f"r{i}(v, path, {f.json!r})"
    if f.kind.exact is not None:
        return [f"{indent}f{i} = v if v.__class__ is X{i} else {read}"]
    if f.kind.names is not None:
        return [f"{indent}f{i} = L{i}.get(v) if v.__class__ is str else None",
                f"{indent}if f{i} is None:", f"{indent}    f{i} = {read}"]  # fmt: skip
    return [f"{indent}f{i} = {read}"]


def compile_init(s: ShapeSpec) -> Callable[..., None]:
    """``__init__`` with the dataclass's keyword-only signature, setting the slots directly:
    a frozen dataclass's own sets each through ``object.__setattr__``, several times slower
    (answers are made per request)."""
    scope: dict[str, Any] = {"NO_VALUE": ABSENT}
    parameters, body = ["self", "*"], []
    for i, f in enumerate(s.fields):
        scope[f"s{i}"] = getattr(s.cls, f.attribute).__set__
        if f.factory is not None:
            scope[f"d{i}"] = f.factory
            parameters.append(f"{f.attribute}=NO_VALUE")
            body.append(f"    s{i}(self, d{i}() if {f.attribute} is NO_VALUE else {f.attribute})")
            continue
        if not f.required:
            scope[f"d{i}"] = f.default
            parameters.append(f"{f.attribute}=d{i}")
        else:
            parameters.append(f.attribute)
        body.append(f"    s{i}(self, {f.attribute})")
    return cast(Callable[..., None], _define("__init__", ", ".join(parameters), body or ["    pass"], scope))


def compile_writer(s: ShapeSpec) -> Callable[[Any], dict[str, Any]]:
    scope: dict[str, Any] = {}
    body = ["    out = {}"]
    for i, f in enumerate(s.fields):
        scope[f"w{i}"] = f.kind.writer()
        value = "v" if f.kind.plain else f"w{i}(v)"
        if f.omitted_when_none:
            body += [f"    v = obj.{f.attribute}", "    if v is not None:",
                     f"        out[{f.json!r}] = {value}"]  # fmt: skip
        else:
            body += [f"    v = obj.{f.attribute}", f"    out[{f.json!r}] = {value}"]
    body.append("    return out")
    writer = _define(f"write_{s.cls.__name__}", "obj", body, scope)
    return cast(Callable[[Any], dict[str, Any]], writer)


def _define(name: str, parameters: str, body: list[str], scope: dict[str, Any]) -> Any:
    source = "\n".join([f"def {name}({parameters}):", *body, ""])
    filename = f"<contract {name} {len(linecache.cache)}>"
    # Kept where tracebacks look for source lines, so an error shows the generated line.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)
    return scope[name]
