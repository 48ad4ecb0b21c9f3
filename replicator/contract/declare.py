"""A message of the API declared once: a frozen dataclass whose fields carry their wire form.

::

    @message("OnBehalfOf", closed=True)
    class OnBehalfOf(Message):
        principal: str = wire(PRINCIPAL, example="User:alice")
        host: str = wire(TEXT, example="10.0.0.1")

Each field names its :class:`Kind` (how one JSON value is read, written and described, see
:mod:`replicator.contract.kinds`), its JSON name (the attribute in camelCase unless ``name=``
says otherwise), its default, and the description and example the OpenAPI document shows.
From that one declaration come:

* the parser, ``OnBehalfOf.from_json(value)``: strict as a request parser must be; every error
  is a :class:`~replicator.contract.fields.BadRequestError` naming the JSON path
  (``onBehalfOf.principal``), the value and what would be accepted; a ``closed`` message refuses
  an unknown key by name;
* the writer, ``instance.to_json()``;
* the JSON Schema of the shape, :meth:`Shape.definition` (a named message is a component of
  the OpenAPI document, referenced by ``$ref``; an unnamed one is written inline).

**Absent and null.**  A field without a default is required: absent reads as null, which the
kind refuses or accepts (a nullable kind).  A field with a default takes it when the key is
absent; when the default is None a null means the same, and ``null_is_absent=True`` says so for
another default.  On writing, a None is left out, unless the kind is nullable (then it is
written as null).  A field is ``required`` in the schema exactly when it has no default.

**Rules across fields** are the message's :meth:`Message.check`, called by the parser once
the fields are read (at least one change), or :meth:`Message.check_body`, called on the JSON
object before (exactly one identity).  Fields are read in the order they are declared (the
order of the schema and of the JSON written), unless ``read_first`` names some to read before
``check_body`` and the others: which error a body with several wrong fields gets.

The parser, the writer and ``__init__`` of each message are generated as Python source and
compiled once (:mod:`replicator.contract.generate`), as :mod:`dataclasses` does for
``__init__``: the decision endpoints parse a message per action.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, TypeVar, cast, dataclass_transform, overload

from replicator.contract.fields import BadRequestError, show, where
from replicator.contract.generate import compile_init, compile_reader, compile_writer

T = TypeVar("T")
M = TypeVar("M", bound="Message")
Schema = dict[str, Any]
Reader = Callable[[Any, str, "str | int"], T]


class Kind(Generic[T]):
    """How one JSON value is read, written and described.

    :meth:`read` gets the value (never :data:`~replicator.contract.fields.ABSENT`: an absent
    required field reads as None), the path of the object it is in and its key there; the
    path is only joined for an error.
    """

    nullable: bool = False
    """Null is a value of this kind (the schema says so, and None is written as null)."""
    plain: bool = False
    """The Python value is its own JSON value (:meth:`write` is the identity)."""
    shows_default: bool = True
    """A field's default is shown in the schema (scalars; not empty lists or maps)."""
    exact: type | None = None
    """A value of exactly this class reads as itself (the parser then skips :meth:`read`)."""
    names: Mapping[str, Any] | None = None
    """A string found here reads as what it maps to (the parser then skips :meth:`read`)."""

    def read(self, value: Any, parent: str, key: str | int) -> T:
        raise NotImplementedError

    def write(self, value: T) -> Any:
        return value

    def schema(self) -> Schema:
        raise NotImplementedError

    def reader(self) -> Reader[T]:
        """The function that reads (a message's compiled parser; bound :meth:`read` else)."""
        return self.read

    def writer(self) -> Callable[[T], Any]:
        return self.write

    def fail(self, parent: str, key: str | int, what: str, value: Any) -> BadRequestError:
        """``<path> <what>, got <value>``: the error every kind raises for a wrong value."""
        return BadRequestError(f"{where(parent, key)} {what}, got {show(value)}")


@dataclasses.dataclass(frozen=True, slots=True)
class Wire:
    """A field's wire form: the metadata :func:`wire` puts on a dataclass field."""

    kind: Kind[Any]
    name: str | None
    description: str | None
    example: Any
    null_is_absent: bool


_WIRE: Final = "aclstore.wire"


@overload
def wire(
    kind: Kind[T], *, name: str | None = None, description: str | None = None,
    example: Any = None,
) -> T: ...
@overload
def wire(
    kind: Kind[T], *, default: None, name: str | None = None, description: str | None = None,
    example: Any = None,
) -> T | None: ...
@overload
def wire(
    kind: Kind[T], *, default: T, name: str | None = None, description: str | None = None,
    example: Any = None, null_is_absent: bool = False,
) -> T: ...
@overload
def wire(
    kind: Kind[T], *, default_factory: Callable[[], T], name: str | None = None,
    description: str | None = None, example: Any = None, null_is_absent: bool = False,
) -> T: ...
def wire(
    kind: Kind[Any],
    *,
    default: Any = dataclasses.MISSING,
    default_factory: Any = dataclasses.MISSING,
    name: str | None = None,
    description: str | None = None,
    example: Any = None,
    null_is_absent: bool = False,
) -> Any:
    """A field of a :func:`message`: its kind, JSON name (default: the attribute in camelCase),
    default, and what the schema shows (``description``, ``example``)."""
    metadata = {_WIRE: Wire(kind, name, description, example, null_is_absent)}
    return dataclasses.field(
        default=default, default_factory=default_factory, metadata=metadata
    )  # fmt: skip


def camel(attribute: str) -> str:
    """``min_offset`` -> ``minOffset``: the default JSON name of a field."""
    head, *rest = attribute.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Message:
    """Base of every declared message: ``from_json`` and ``to_json`` by its :class:`Shape`."""

    __slots__ = ()

    @classmethod
    def from_json(cls: type[M], value: Any, path: str = "") -> M:
        """Parse ``value`` (decoded JSON); errors name the field from ``path`` on."""
        return shape(cls).read(value, "", path)

    def to_json(self) -> dict[str, Any]:
        return shape(type(self)).write(self)

    def check(self, path: str) -> None:
        """Rules across fields, after they are read; raise BadRequestError naming the fix."""

    @classmethod
    def check_body(cls, value: dict[str, Any], path: str) -> None:
        """Rules on the JSON object, before the fields not in ``read_first`` are read."""


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    attribute: str
    json: str
    kind: Kind[Any]
    default: Any
    """The default value; :data:`dataclasses.MISSING` for a required field."""
    factory: Callable[[], Any] | None
    description: str | None
    example: Any
    null_is_absent: bool

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING and self.factory is None

    @property
    def omitted_when_none(self) -> bool:
        """Left out of the JSON when None (a None default and a kind that has no null)."""
        return self.default is None and not self.kind.nullable

    def schema(self) -> Schema:
        out = self.kind.schema()
        extra: Schema = {}
        if self.default not in (dataclasses.MISSING, None) and self.kind.shows_default:
            extra["default"] = self.kind.write(self.default)
        if self.example is not None:
            extra["example"] = self.example
        if self.description is not None:
            extra["description"] = self.description
        if extra and list(out) == ["$ref"]:  # keywords beside a $ref go through allOf
            out = {"allOf": [out]}
        out.update(extra)
        return out


class Shape(Kind[M]):
    """A declared message as a kind: its fields, compiled parser and writer, and schema."""

    shows_default = False

    def __init__(
        self, cls: type[M], name: str | None, *, closed: bool, nullable: bool,
        description: str | None, read_first: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        self.cls = cls
        self.name = name
        self.closed = closed
        self.nullable = nullable
        self.description = description
        self.fields = tuple(_field(f) for f in dataclasses.fields(cast(Any, cls)))
        unknown = set(read_first) - {f.attribute for f in self.fields}
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]} to read first")
        rank = {attribute: i for i, attribute in enumerate(read_first)}
        self.read_order = tuple(sorted(self.fields, key=lambda f: rank.get(f.attribute, len(rank))))
        self.read_first = len(read_first)
        self.checks = _overrides(cls, "check")
        """The parser calls :meth:`Message.check` (a class below Message defines it)."""
        self.checks_body = _overrides(cls, "check_body")
        # Compiled when first used: a process pays only for the messages it reads or writes
        # (a command line starts in a fraction of the time that compiling all of them takes).
        self._read: Reader[M] | None = None
        self._write: Callable[[M], dict[str, Any]] | None = None

    def _compiled_reader(self) -> Reader[M]:
        if self._read is None:
            self._read = compile_reader(self)
        return self._read

    def _compiled_writer(self) -> Callable[[M], dict[str, Any]]:
        if self._write is None:
            self._write = compile_writer(self)
        return self._write

    def read(self, value: Any, parent: str, key: str | int) -> M:
        return self._compiled_reader()(value, parent, key)

    def write(self, value: M) -> dict[str, Any]:
        return self._compiled_writer()(value)

    def reader(self) -> Reader[M]:
        """The compiled parser once there is one; until then :meth:`read`, which compiles it
        when first called (a kind that nests this one keeps what it got here)."""
        return self._read if self._read is not None else self.read

    def writer(self) -> Callable[[M], dict[str, Any]]:
        return self._write if self._write is not None else self.write

    def reader_building(self, build: Callable[..., T]) -> Reader[T]:
        """A parser that passes the fields, in declaration order, to ``build`` instead of
        making the message (no check runs): to read straight into another type."""
        if self.checks or self.checks_body:
            raise TypeError(f"{self.cls.__name__} has checks: read it as itself")
        return cast(Reader[T], compile_reader(self, build))

    def parse(self, body: Any) -> M:
        """A whole request body (path ``the body``)."""
        return self._compiled_reader()(body, "", "")

    def schema(self) -> Schema:
        if self.name is not None:
            return {"$ref": f"#/components/schemas/{self.name}"}
        return self.definition()

    def definition(self) -> Schema:
        """The object schema (what a component of this name holds)."""
        out: Schema = {"type": ["object", "null"] if self.nullable else "object"}
        required = [f.json for f in self.fields if f.required]
        if required:
            out["required"] = required
        if self.closed:
            out["additionalProperties"] = False
        if self.description is not None:
            out["description"] = self.description
        out["properties"] = {f.json: f.schema() for f in self.fields}
        return out


_SHAPES: dict[type, Shape[Any]] = {}


def shape(cls: type[M]) -> Shape[M]:
    """The :class:`Shape` of a declared message (a kind, to nest it in another)."""
    found = _SHAPES.get(cls)
    if found is None:
        raise TypeError(f"{cls.__name__} is not declared with @message")
    return found


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(wire,))
def message(
    name: str | None = None, *, closed: bool = False, nullable: bool = False,
    description: str | None = None, read_first: tuple[str, ...] = (),
) -> Callable[[type[M]], type[M]]:  # fmt: skip
    """Declare a message: a frozen, slotted, keyword-only dataclass of :func:`wire` fields.

    ``name`` makes it a component of the OpenAPI document (else its schema is written inline);
    ``closed`` refuses unknown keys (requests: a typo must not silently become another
    question); ``nullable`` makes null a value of the component itself (``ItemError``);
    ``read_first`` names fields to read (and so to complain about) before the others."""

    def declare(cls: type[M]) -> type[M]:
        made = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(cls)
        declared = Shape(
            made, name, closed=closed, nullable=nullable, description=description,
            read_first=read_first,
        )  # fmt: skip
        made.__init__ = _lazy_init(made, declared)  # type: ignore[method-assign]
        _SHAPES[made] = declared
        return made

    return declare


def _lazy_init(cls: type, declared: Shape[Any]) -> Callable[..., None]:
    """An ``__init__`` that compiles the message's own on the first instance, puts it in its
    place on ``cls`` and runs it."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = compile_init(declared)
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    return __init__


def _field(f: dataclasses.Field[Any]) -> Field:
    spec = f.metadata.get(_WIRE)
    if not isinstance(spec, Wire):
        raise TypeError(f"field {f.name} is not declared with wire()")
    factory = None if f.default_factory is dataclasses.MISSING else f.default_factory
    return Field(
        f.name, spec.name or camel(f.name), spec.kind, f.default, factory, spec.description,
        spec.example, spec.null_is_absent,
    )  # fmt: skip


def _overrides(cls: type, method: str) -> bool:
    """Whether a class between ``cls`` and :class:`Message` defines ``method`` (else no call)."""
    return any(method in vars(c) for c in cls.__mro__ if issubclass(c, Message) and c is not Message)
