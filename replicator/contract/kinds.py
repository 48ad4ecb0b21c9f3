"""The kinds of JSON value the API's fields have: each reads, writes and describes one.

Every reader raises :class:`~replicator.contract.fields.BadRequestError` as ``<path> <what was
expected>, got <value>`` (an enum: ``<path>: <value> is not ...; use one of ...``).  The kinds
are values: a field's declaration (:func:`replicator.contract.declare.wire`) names one.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, TypeVar

from replicator.contract.declare import Kind, Message, Schema, Shape
from replicator.contract.fields import (
    BadRequestError,
    E,
    check_principal,
    enum_value,
    show,
    where,
)
from store.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import AuthorizationResult

T = TypeVar("T")
S = TypeVar("S", bound="Message")
C = TypeVar("C", bound=enum.Enum)

INT64_END: Final = 2**63
"""Integers on this wire are a Java ``long`` (offsets, keys): at most 2**63 - 1."""


class Text(Kind[str]):
    """A string; null or absent: ``is required (a string)`` (an array's item: ``must be``)."""

    plain = True
    exact: type | None = str

    def __init__(self, *, item: bool = False) -> None:
        self.item = item

    def read(self, value: Any, parent: str, key: str | int) -> str:
        if value.__class__ is str:
            return value
        if value is None and not self.item:
            raise BadRequestError(f"{where(parent, key)} is required (a string)")
        raise self.fail(parent, key, "must be a string", value)

    def schema(self) -> Schema:
        return {"type": "string"}


class NullableText(Kind[str | None]):
    """A string or null (null means "any" in a filter, "none" elsewhere)."""

    nullable = True
    plain = True
    exact = str

    def read(self, value: Any, parent: str, key: str | int) -> str | None:
        if value is None or value.__class__ is str:
            return value
        raise self.fail(parent, key, "must be a string or null", value)

    def schema(self) -> Schema:
        return {"type": ["string", "null"]}


class Principal(Text):
    """A Kafka principal ``Type:name``, checked as ``KafkaPrincipal.parse`` does."""

    exact = None

    def read(self, value: Any, parent: str, key: str | int) -> str:
        text = super().read(value, parent, key)
        check_principal(text, where(parent, key))
        return text


class BoundedText(Text):
    """A string of ``min_length`` to ``max_length`` characters."""

    exact = None

    def __init__(self, min_length: int, max_length: int, what: str) -> None:
        super().__init__()
        self.min_length, self.max_length, self.what = min_length, max_length, what

    def read(self, value: Any, parent: str, key: str | int) -> str:
        if value.__class__ is not str or not self.min_length <= len(value) <= self.max_length:
            raise self.fail(parent, key, self.what, value)
        return value

    def schema(self) -> Schema:
        return {"type": "string", "minLength": self.min_length, "maxLength": self.max_length}


class Flag(Kind[bool]):
    plain = True
    exact = bool

    def read(self, value: Any, parent: str, key: str | int) -> bool:
        if value.__class__ is bool:
            return value
        raise self.fail(parent, key, "must be true or false", value)

    def schema(self) -> Schema:
        return {"type": "boolean"}


class Integer(Kind[int]):
    """An integer in ``[minimum, maximum]`` (a Java ``long`` when no maximum is given)."""

    plain = True

    def __init__(
        self, *, minimum: int | None = None, maximum: int | None = None,
        what: str = "must be an integer",
    ) -> None:  # fmt: skip
        self.minimum, self.maximum, self.what = minimum, maximum, what
        self._low = -INT64_END if minimum is None else minimum
        self._high = INT64_END - 1 if maximum is None else maximum

    def read(self, value: Any, parent: str, key: str | int) -> int:
        if value.__class__ is not int or not self._low <= value <= self._high:
            raise self.fail(parent, key, self.what, value)
        return value

    def schema(self) -> Schema:
        out: Schema = {"type": "integer"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out


class StoreOffset(Kind[int | None]):
    """The log offset an answer reflects.  The node always sends one (the schema says
    integer, the reader requires one); None, written as null, only in answers a Kafka broker
    relayed (:mod:`replicator.client.kafka_acls`), whose protocol carries no offset."""

    plain = True

    def read(self, value: Any, parent: str, key: str | int) -> int | None:
        return INTEGER.read(value, parent, key)

    def schema(self) -> Schema:
        return {"type": "integer"}


class Number(Kind[float]):
    """A JSON number (integer or not) in ``[minimum, maximum]``."""

    plain = True

    def __init__(self, minimum: float, maximum: float, what: str) -> None:
        self.minimum, self.maximum, self.what = minimum, maximum, what

    def read(self, value: Any, parent: str, key: str | int) -> float:
        if (
            value.__class__ not in (int, float) or not self.minimum <= value <= self.maximum
        ):  # fmt: skip
            raise self.fail(parent, key, self.what, value)
        return value

    def schema(self) -> Schema:
        return {"type": "number", "minimum": self.minimum, "maximum": self.maximum}


# --- enums ------------------------------------------------------------------------------------

_ENUM_TEXT: Final = "Kafka names; any letter case and PascalCase (DescribeConfigs) are accepted."
KAFKA_ENUMS: Final[Mapping[type[enum.IntEnum], tuple[str, str]]] = {
    ResourceType: ("ResourceType", "Resource type"),
    AclOperation: ("AclOperation", "ACL operation"),
    AclPermissionType: ("AclPermissionType", "Permission type"),
    PatternType: ("PatternType", "Resource pattern type (KIP-290)"),
}
"""Kafka's enums as components of the document: their name and what they are."""


def kafka_enum_schema(cls: type[enum.IntEnum]) -> Schema:
    """Every name Kafka knows but UNKNOWN, as the component of that enum."""
    what = KAFKA_ENUMS[cls][1]
    names = [m.name for m in cls if m.name != "UNKNOWN"]
    return {"type": "string", "enum": names, "description": f"{what}. {_ENUM_TEXT}"}


class KafkaEnum(Kind[E], Generic[E]):
    """A Kafka enum by name, any case (``fromString``), that must be one of ``allowed``.

    The schema refers to the enum's component, or with ``inline`` lists ``allowed`` itself.
    ``falsy`` is what an empty value ("", 0, false) means: a filter's ANY."""

    def __init__(
        self, cls: type[E], allowed: frozenset[E], *, inline: bool = False,
        falsy: E | None = None,
    ) -> None:  # fmt: skip
        self.cls, self.allowed, self.inline, self.falsy = cls, allowed, inline, falsy
        self._members: dict[str, E] = {m.name: m for m in allowed}
        self.names = self._members

    def read(self, value: Any, parent: str, key: str | int) -> E:
        if value.__class__ is str:
            member = self._members.get(value)
            if member is not None:
                return member
        if self.falsy is not None and not value:
            return self.falsy
        return enum_value(self.cls, value, where(parent, key), self.allowed)

    def write(self, value: E) -> str:
        return value._name_

    def schema(self) -> Schema:
        if self.inline:
            return {"type": "string", "enum": [m.name for m in self.cls if m in self.allowed]}
        return {"$ref": f"#/components/schemas/{KAFKA_ENUMS[self.cls][0]}"}


class Choice(Kind[C], Generic[C]):
    """One of an enum's members by value (``by="value"``) or name; for values the store writes
    (decision results and rules), so any other text is refused."""

    def __init__(self, cls: type[C], *, by: str = "name", component: str | None = None) -> None:
        self.cls, self.component = cls, component
        self._members = {getattr(m, by): m for m in cls}
        self._write = operator.attrgetter(f"_{by}_")  # the member's own slot: no property call

    def read(self, value: Any, parent: str, key: str | int) -> C:
        member = self._members.get(value) if value.__class__ is str else None
        if member is None:
            raise BadRequestError(
                f"{where(parent, key)}: {show(value)} is not one of {', '.join(self._members)}"
            )
        return member

    def write(self, value: C) -> Any:
        return self._write(value)

    def writer(self) -> Callable[[C], Any]:
        return self._write

    def values(self) -> list[str]:
        return list(self._members)

    def schema(self) -> Schema:
        if self.component is not None:
            return {"$ref": f"#/components/schemas/{self.component}"}
        return {"type": "string", "enum": self.values()}


RESULT: Final = Choice(AuthorizationResult, by="value", component="Result")
"""ALLOWED or DENIED: the component ``Result``."""


# --- containers -------------------------------------------------------------------------------


class Array(Kind[list[T]], Generic[T]):
    """A JSON array of one kind, at most ``limit`` items per request (None: no bound)."""

    shows_default = False

    def __init__(self, item: Kind[T], *, limit: int | None = None) -> None:
        self.item, self.limit = item, limit
        self._read_item = item.reader()
        self._write_item = None if item.plain else item.writer()

    def read(self, value: Any, parent: str, key: str | int) -> list[T]:
        if value.__class__ is not list:
            raise self.fail(parent, key, "must be a JSON array", value)
        path = where(parent, key)
        if self.limit is not None and len(value) > self.limit:
            raise BadRequestError(
                f"{path} has {len(value)} items; at most {self.limit} per request"
            )
        read = self._read_item
        return [read(item, path, i) for i, item in enumerate(value)]

    def write(self, value: list[T]) -> list[Any]:
        write = self._write_item
        return list(value) if write is None else list(map(write, value))

    def schema(self) -> Schema:
        out: Schema = {"type": "array"}
        if self.limit is not None:
            out["maxItems"] = self.limit
        out["items"] = self.item.schema()
        return out


class ConfigMap(Kind[dict[str, str | None]]):
    """Settings to change: name -> value, null resetting one to its default (KIP-133)."""

    shows_default = False

    def __init__(self, *, non_empty: bool) -> None:
        self.non_empty = non_empty

    def read(self, value: Any, parent: str, key: str | int) -> dict[str, str | None]:
        path = where(parent, key)
        if value.__class__ is not dict or (self.non_empty and not value):
            what = "a non-empty object" if self.non_empty else "an object"
            raise BadRequestError(
                f"{path} must be {what} of name -> value (or null), got {show(value)}"
            )
        for name, item in value.items():
            if item is not None and item.__class__ is not str:
                raise BadRequestError(f"{path}.{name} must be a string or null, got {show(item)}")
        return dict(value)

    def write(self, value: dict[str, str | None]) -> dict[str, str | None]:
        return dict(value)

    def schema(self) -> Schema:
        return {"type": "object", "additionalProperties": {"type": ["string", "null"]}}


class Nullable(Kind[T | None], Generic[T]):
    """``kind`` or null.  A nullable component (``ItemError``) is referred to as it is."""

    nullable = True

    def __init__(self, kind: Kind[T]) -> None:
        self.kind = kind
        self._read = kind.reader()
        self._write = kind.writer()
        self.plain = kind.plain

    def read(self, value: Any, parent: str, key: str | int) -> T | None:
        return None if value is None else self._read(value, parent, key)

    def write(self, value: T | None) -> Any:
        return None if value is None else self._write(value)

    def schema(self) -> Schema:
        out = self.kind.schema()
        if isinstance(self.kind, Shape) and self.kind.nullable:
            return out
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
            return out
        return {"oneOf": [out, {"type": "null"}]}


class Converted(Kind[T], Generic[S, T]):
    """A declared message ``shape`` read into another type (the store's own: ``AclBinding``,
    ``ConfigEntry``): ``decode(message, raw JSON)`` and ``encode(value)`` (the message, or the
    JSON to write as it is).  ``null``, when given, is what a null reads as (a filter's: the
    filter that matches anything).  ``build``, the same as ``decode`` from the field values in
    declaration order, reads without making the message first (an action: one per decision)."""

    shows_default = False

    def __init__(
        self, shape: Shape[S], decode: Callable[[S, Any], T],
        encode: Callable[[T], S | dict[str, Any]], *, null: T | None = None,
        build: Callable[..., T] | None = None,
    ) -> None:  # fmt: skip
        self.shape, self.decode, self.encode, self.null = shape, decode, encode, null
        self._read, self._write = shape.reader(), shape.writer()
        self._build = None if build is None else shape.reader_building(build)

    def read(self, value: Any, parent: str, key: str | int) -> T:
        if value is None and self.null is not None:
            return self.null
        if self._build is not None:
            return self._build(value, parent, key)
        return self.decode(self._read(value, parent, key), value)

    def reader(self) -> Callable[[Any, str, str | int], T]:
        if self._build is not None and self.null is None:
            return self._build
        return self.read

    def write(self, value: T) -> Any:
        out = self.encode(value)
        return out if isinstance(out, dict) else self._write(out)

    def schema(self) -> Schema:
        return self.shape.schema()


# --- the values every message uses -------------------------------------------------------------

TEXT: Final = Text()
TEXT_ITEM: Final = Text(item=True)
NULLABLE_TEXT: Final = NullableText()
PRINCIPAL: Final = Principal()
FLAG: Final = Flag()
INTEGER: Final = Integer()
NULLABLE_INTEGER: Final = Nullable(INTEGER)
LOG_OFFSET: Final = Integer(minimum=-1, what="must be a log offset (integer >= -1)")
"""``minOffset``: the log offset the answer must reflect at least (a consistency token)."""
STORE_OFFSET: Final = StoreOffset()
