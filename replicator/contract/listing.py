"""The streamed listing of ACLs (``POST /v1/acls/list``): DescribeAcls, written as it is read.

``/v1/acls/describe`` answers with one JSON document, which the node builds whole and a client
reads whole.  The listing is the same answer as a stream: the node writes the bindings, in
Kafka's DescribeAcls order, as it reads them from its replica (HTTP/1.1 chunked), and a client
reads them as they come, each end holding a few lines at a time.  The body is JSON lines
(``application/x-ndjson``):

* :class:`AclResourceLine` lines: a resource pattern and its ACLs, each
  ``[principal, host, operation, permissionType]`` (Kafka's ``DescribeAclsResponse`` groups
  them by resource the same way).  A pattern with many ACLs may take several lines in a row;
* then one :class:`AclListingEnd` line: the log offset the listing reflects and how many ACLs
  it held;
* a failure after the 200 is an :class:`~replicator.contract.answers.ErrorAnswer` line instead
  of the end.  A body that stops without its end line (a connection cut) failed as well:
  :class:`ListingReader` never takes a listing without its end line for a complete one.

Both ends are here: :func:`resource_line` / :func:`end_line` / :func:`error_line` write the
lines, :class:`ListingReader` reads them.  Both are written for a million bindings, so they
work on JSON text and on names, not on the declared messages, which state the shapes for the
OpenAPI document and for tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any, Final, Protocol

from replicator.contract.bindings import BINDING, FILTER, RESOURCE_NAME
from replicator.contract.declare import Kind, Message, Schema, message, shape, wire
from replicator.contract.fields import (
    ALL_OPS,
    ALL_PATTERNS,
    ALL_PERMS,
    ALL_TYPES,
    MAX_ITEMS,
    BadRequestError,
    where,
)
from replicator.contract.kinds import INTEGER, LOG_OFFSET, TEXT, Array, KafkaEnum
from replicator.contract.scope import SCOPE
from store.acl import (
    ANY_FILTER,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.desired.scope import Scope

CONTENT_TYPE: Final = "application/x-ndjson"


@message("ListAclsRequest", closed=True)
class ListAclsRequest(Message):
    """``/v1/acls/list``: the union of the filters, streamed; no body lists every binding."""

    filters: list[AclBindingFilter] = wire(
        Array(FILTER, limit=MAX_ITEMS), default_factory=lambda: [ANY_FILTER],
        description="Bindings any of these match are listed, each once (default: every "
        "binding).",
    )  # fmt: skip
    min_offset: int | None = wire(LOG_OFFSET, default=None)
    scope: Scope | None = wire(
        SCOPE, default=None,
        description="Only the bindings the filters match that are also in this desired-state "
        "scope (aclstore plan): what a plan of one team's files reads of a large store.",
    )  # fmt: skip
    after: AclBinding | None = wire(
        BINDING, default=None,
        description="A cursor: list only the bindings after this one in DescribeAcls order "
        "(the last binding of the previous page; it need not be live any more).",
    )  # fmt: skip

    def check(self, path: str) -> None:
        if not self.filters:
            raise BadRequestError(
                "filters is empty: leave it out to list every binding, or give at least one"
            )


list_request: Final = shape(ListAclsRequest).parse


AclRow = tuple[str, str, AclOperation, AclPermissionType]
"""One ACL of a listed resource: principal, host, operation, permission type."""


class _AclRowKind(Kind[AclRow]):
    """``[principal, host, operation, permissionType]``."""

    _operations = KafkaEnum(AclOperation, ALL_OPS)
    _permissions = KafkaEnum(AclPermissionType, ALL_PERMS)

    def read(self, value: Any, parent: str, key: str | int) -> AclRow:
        if value.__class__ is not list or len(value) != 4:
            raise self.fail(parent, key, "must be [principal, host, operation, permissionType]", value)
        principal, host, operation, permission = value
        path = where(parent, key)
        return (
            TEXT.read(principal, path, 0),
            TEXT.read(host, path, 1),
            self._operations.read(operation, path, 2),
            self._permissions.read(permission, path, 3),
        )

    def write(self, value: AclRow) -> list[str]:
        principal, host, operation, permission = value
        return [principal, host, operation._name_, permission._name_]

    def schema(self) -> Schema:
        return {
            "type": "array",
            "description": "[principal, host, operation, permissionType]",
            "prefixItems": [
                {"type": "string"},
                {"type": "string"},
                self._operations.schema(),
                self._permissions.schema(),
            ],
            "minItems": 4,
            "maxItems": 4,
        }


@message("AclResource", closed=True)
class AclResourceLine(Message):
    """A line of a listing: a resource pattern and its ACLs in DescribeAcls order (a pattern
    with many ACLs may take several lines in a row)."""

    resource_type: ResourceType = wire(KafkaEnum(ResourceType, ALL_TYPES))
    resource_name: str = wire(TEXT, name=RESOURCE_NAME)
    pattern_type: PatternType = wire(KafkaEnum(PatternType, ALL_PATTERNS))
    acls: list[AclRow] = wire(Array(_AclRowKind()))


@message("AclListingEnd", closed=True)
class AclListingEnd(Message):
    """The last line of a complete listing."""

    offset: int = wire(INTEGER, description="The log offset the listing reflects.")
    bindings: int = wire(INTEGER, description="How many ACLs the listing held.")


# --- writing (the node) ---------------------------------------------------------------------


class ListedPattern(Protocol):
    """What the node lists per line: a pattern's Kafka codes and name, and ACLs of it as
    (principal, host, operation code, permission type code)."""

    @property
    def resource_type(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def pattern_type(self) -> int: ...
    @property
    def acls(self) -> Sequence[tuple[str, str, int, int]]: ...


def _names(cls: type[ResourceType | PatternType | AclOperation | AclPermissionType]) -> list[str]:
    """Names by code (0..127): a code the enum does not know is UNKNOWN, as Kafka decodes it."""
    return [cls.from_code(code).name for code in range(128)]


_TYPE_NAMES: Final = _names(ResourceType)
_PATTERN_NAMES: Final = _names(PatternType)
_ACL_ENDS: Final = [
    [f',"{operation}","{permission}"]' for permission in _names(AclPermissionType)]
    for operation in _names(AclOperation)
]
"""The end of an ACL's row after its host, by operation code and permission code."""
_HOSTS_KEPT: Final = 256


class LineWriter:
    """Writes a listing's lines as ASCII JSON (every other character escaped, so a name
    holding a lone surrogate, which Java strings may, is still written)."""

    def __init__(self) -> None:
        self.bindings = 0
        self._hosts: dict[str, str] = {}

    def _host(self, host: str) -> str:
        # Hosts repeat (``*`` and a few addresses): their JSON is kept, up to a bound.
        found = self._hosts.get(host)
        if found is None:
            if len(self._hosts) >= _HOSTS_KEPT:
                self._hosts.clear()
            found = self._hosts[host] = "," + encode_basestring_ascii(host)
        return found

    def resource_line(self, resource: ListedPattern) -> bytes:
        """One :class:`AclResourceLine`, with its newline."""
        host_json = self._host
        ends = _ACL_ENDS
        rows = [
            "[" + encode_basestring_ascii(principal) + host_json(host) + ends[operation][permission]
            for principal, host, operation, permission in resource.acls
        ]
        self.bindings += len(rows)
        head = (
            f'{{"resourceType":"{_TYPE_NAMES[resource.resource_type]}",'
            f'"{RESOURCE_NAME}":{encode_basestring_ascii(resource.name)},'
            f'"patternType":"{_PATTERN_NAMES[resource.pattern_type]}","acls":['
        )
        return (head + ",".join(rows) + "]}\n").encode("ascii")

    def end_line(self, offset: int) -> bytes:
        """The :class:`AclListingEnd` line, counting the ACLs written."""
        return (json.dumps({"offset": offset, "bindings": self.bindings}) + "\n").encode("ascii")


def error_line(error: dict[str, Any]) -> bytes:
    """An Error line (:func:`replicator.contract.answers.error_json`'s body) ending a listing
    that failed after its 200 was sent."""
    return (json.dumps(error) + "\n").encode("ascii")


# --- reading (clients) ----------------------------------------------------------------------


class ListingError(Exception):
    """The listing failed: an Error line (``error``, ``message``) or a body that breaks off or
    does not follow the contract (``error`` empty)."""

    def __init__(self, message: str, *, error: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.error = error


Row = Sequence[str]
"""``[principal, host, operation, permissionType]``, as names."""

_RESOURCE_TYPES: Final = frozenset(t.name for t in ResourceType)
_PATTERN_TYPES: Final = frozenset(t.name for t in PatternType)
_ACL_NAMES: Final = frozenset(
    (o.name, p.name) for o in AclOperation for p in AclPermissionType
)


class ListedAcls:
    """A resource pattern (names) and its ACLs, as a reader yields them."""

    __slots__ = ("acls", "name", "pattern_type", "resource_type")

    def __init__(self, resource_type: str, name: str, pattern_type: str, acls: list[Row]) -> None:
        self.resource_type = resource_type
        self.name = name
        self.pattern_type = pattern_type
        self.acls = acls


class ListingReader:
    """Reads a listing's lines from its body's chunks, as they arrive.

    Iterate it for the :class:`ListedAcls` lines; :attr:`offset` and :attr:`bindings` are
    set by the end line.  An Error line, a line that does not follow the contract, or a body
    that ends without the end line raises :class:`ListingError`."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks
        self.offset: int | None = None
        self.bindings: int | None = None

    def __iter__(self) -> Iterator[ListedAcls]:
        rest = b""
        for chunk in self._chunks:
            if self.offset is not None:
                raise ListingError("the listing went on after its end line")
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                resource = self._line(line)
                if resource is not None:
                    yield resource
        if rest.strip():
            self._line(rest)
        if self.offset is None:
            raise ListingError(
                "the listing broke off before its end: the node closed the connection or "
                "failed while writing it (see its log); nothing after the last line was read"
            )

    def _line(self, line: bytes) -> ListedAcls | None:
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise ListingError(f"a line of the listing is not JSON: {exc}") from exc
        if value.__class__ is not dict:
            raise ListingError(f"a line of the listing is not a JSON object: {line[:200]!r}")
        if self.offset is not None:
            raise ListingError("the listing went on after its end line")
        acls = value.get("acls")
        if acls is not None:
            return self._resource(value, acls)
        if "error" in value:
            raise ListingError(str(value.get("message", "")), error=str(value["error"]))
        offset, bindings = value.get("offset"), value.get("bindings")
        if offset.__class__ is not int or bindings.__class__ is not int:
            raise ListingError(f"a line of the listing is none of its lines: {line[:200]!r}")
        self.offset, self.bindings = offset, bindings
        return None

    @staticmethod
    def _resource(value: dict[str, Any], acls: Any) -> ListedAcls:
        resource_type = value.get("resourceType")
        name = value.get(RESOURCE_NAME)
        pattern_type = value.get("patternType")
        if (
            resource_type not in _RESOURCE_TYPES
            or name.__class__ is not str
            or pattern_type not in _PATTERN_TYPES
            or acls.__class__ is not list
            or len(value) != 4
        ):
            raise ListingError(f"a resource line of the listing is malformed: {value!r:.300}")
        names = _ACL_NAMES
        for row in acls:
            try:
                valid = (
                    row.__class__ is list
                    and len(row) == 4
                    and row[0].__class__ is str
                    and row[1].__class__ is str
                    and (row[2], row[3]) in names
                )
            except TypeError:  # an operation that is no string (a list cannot be looked up)
                valid = False
            if not valid:
                raise ListingError(f"an ACL of the listing is malformed: {row!r:.300}")
        return ListedAcls(resource_type, name, pattern_type, acls)


def listed_acls(bindings: Iterable[AclBinding]) -> Iterator[ListedAcls]:
    """Bindings held whole (an answer of Kafka's protocol, which is not streamed), sorted into
    DescribeAcls order and grouped as a listing's resources."""
    current: tuple[ResourceType, str, PatternType] | None = None
    acls: list[Row] = []
    for b in sorted(bindings):
        pattern = (b.resource_type, b.name, b.pattern_type)
        if pattern != current:
            if current is not None:
                yield ListedAcls(current[0].name, current[1], current[2].name, acls)
            current, acls = pattern, []
        acls.append([b.principal, b.host, b.operation.name, b.permission_type.name])
    if current is not None:
        yield ListedAcls(current[0].name, current[1], current[2].name, acls)
