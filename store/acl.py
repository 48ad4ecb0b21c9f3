"""Kafka's ACL vocabulary: enums with their int8 wire codes, bindings and filters.

The types mirror ``org.apache.kafka.common.acl`` / ``org.apache.kafka.common.resource``
(KIP-140, KIP-290) and the shape confluent-kafka-python users know from
``confluent_kafka.admin.AclBinding``: frozen, hashable, sortable values whose
constructors take keyword arguments.  Pure values, no I/O.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

WILDCARD_RESOURCE = "*"
"""A LITERAL resource name that matches every resource of its type."""
WILDCARD_PRINCIPAL = "User:*"
"""The principal string that matches every principal, of any principal type."""
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"
"""The only name a CLUSTER resource may have."""

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


_PARSED: dict[type[enum.IntEnum], dict[str, enum.IntEnum]] = {}
"""Each enum's parsed names: a state's decoding parses the same few names millions of times."""
_PARSED_LIMIT = 4096
"""How many distinct texts each enum remembers (arbitrary input cannot grow it further)."""


class _KafkaEnum(enum.IntEnum):
    """An enum whose values are Kafka's int8 codes; unknown codes and names are UNKNOWN."""

    @classmethod
    def from_code(cls, code: int) -> Self:
        """Decode an int8 wire code; any code Kafka has not assigned is ``UNKNOWN``."""
        try:
            return cls(code)
        except ValueError:
            return cls["UNKNOWN"]

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse a name as Kafka does: case-insensitive, PascalCase accepted, else UNKNOWN.

        ``DescribeConfigs``, ``DESCRIBE_CONFIGS`` and ``describe_configs`` all parse;
        mirrors ``SecurityUtils.operation`` / ``AclOperation.fromString``.
        """
        known = _PARSED.setdefault(cls, {})
        member = known.get(text) if isinstance(text, str) else None
        if member is None:
            member = cls._parse_text(text)
            if isinstance(text, str) and len(known) < _PARSED_LIMIT:
                known[text] = member
        return member  # type: ignore[return-value]

    @classmethod
    def _parse_text(cls, text: str) -> Self:
        upper = text.upper()
        if upper in cls.__members__:
            return cls[upper]
        snake = _CAMEL_BOUNDARY.sub("_", text).upper()
        if snake in cls.__members__ and "_" not in text:
            return cls[snake]
        return cls["UNKNOWN"]

    @property
    def is_unknown(self) -> bool:
        return self.name == "UNKNOWN"

    def __str__(self) -> str:
        return self.name


class ResourceType(_KafkaEnum):
    """``org.apache.kafka.common.resource.ResourceType``."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(_KafkaEnum):
    """``org.apache.kafka.common.acl.AclOperation``."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_KafkaEnum):
    """``org.apache.kafka.common.acl.AclPermissionType``."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class PatternType(_KafkaEnum):
    """``org.apache.kafka.common.resource.PatternType`` (KIP-290)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @classmethod
    def _parse_text(cls, text: str) -> Self:
        """Case-sensitive, as ``PatternType.fromString``: ``"prefixed"`` is UNKNOWN."""
        return cls[text] if text in cls.__members__ else cls["UNKNOWN"]

    @property
    def is_specific(self) -> bool:
        """LITERAL and PREFIXED name a stored pattern; ANY, MATCH, UNKNOWN do not."""
        return self is PatternType.LITERAL or self is PatternType.PREFIXED


class _Descending:
    """Sort-key wrapper that inverts the order of a string (Kafka sorts names in reverse)."""

    __slots__ = ("key",)

    def __init__(self, key: bytes) -> None:
        self.key = key

    def __lt__(self, other: _Descending) -> bool:
        return self.key > other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def _rebuilt(cls: type[Any], kwargs: dict[str, Any]) -> Any:
    """Unpickling's constructor call: the value is built (and its hash computed) anew, since
    a string's hash differs from one process to the next."""
    return cls(**kwargs)


def java_string_key(text: str) -> bytes:
    """A bytes key that orders strings as Java's ``String.compareTo`` (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourcePattern:
    """A stored resource pattern: type, name, and LITERAL or PREFIXED (KIP-290).

    Construction refuses what Kafka's ``ResourcePattern`` refuses: a resource type
    of ANY and a pattern type of ANY or MATCH (those exist only in filters).
    UNKNOWN values are allowed so that records from newer writers can be carried.
    """

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL
    _hash: int = field(init=False, repr=False, compare=False)
    """The fields' hash, computed once: a state's sets and dicts hash each binding often."""

    def __post_init__(self) -> None:
        # Kafka's constructor order: requireNonNull(name) before the ANY/MATCH checks.
        if not isinstance(self.name, str):
            raise TypeError("name must be a string")
        if self.resource_type is ResourceType.ANY:
            raise ValueError("resourceType must not be ANY")
        if self.pattern_type in (PatternType.MATCH, PatternType.ANY):
            raise ValueError(f"patternType must not be {self.pattern_type.name}")
        object.__setattr__(self, "_hash", hash((self.resource_type, self.name, self.pattern_type)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (ResourcePattern, {"resource_type": self.resource_type, "name": self.name,
                                            "pattern_type": self.pattern_type})  # fmt: skip

    @property
    def is_unknown(self) -> bool:
        return self.resource_type.is_unknown or self.pattern_type.is_unknown

    def to_filter(self) -> ResourcePatternFilter:
        return ResourcePatternFilter(
            resource_type=self.resource_type, name=self.name, pattern_type=self.pattern_type
        )

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntry:
    """Who may (or may not) do what from where: ``org.apache.kafka.common.acl.AccessControlEntry``."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType
    _hash: int = field(init=False, repr=False, compare=False)
    """The fields' hash, computed once (as :attr:`ResourcePattern._hash`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.principal, str):
            raise TypeError("principal must be a string")
        if not isinstance(self.host, str):
            raise TypeError("host must be a string")
        if self.operation is AclOperation.ANY:
            raise ValueError("operation must not be ANY")
        if self.permission_type is AclPermissionType.ANY:
            raise ValueError("permissionType must not be ANY")
        object.__setattr__(
            self, "_hash", hash((self.principal, self.host, self.operation, self.permission_type))
        )

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (AccessControlEntry, {
            "principal": self.principal, "host": self.host, "operation": self.operation,
            "permission_type": self.permission_type,
        })  # fmt: skip

    @property
    def is_unknown(self) -> bool:
        return self.operation.is_unknown or self.permission_type.is_unknown

    def to_filter(self) -> AccessControlEntryFilter:
        return AccessControlEntryFilter(
            principal=self.principal,
            host=self.host,
            operation=self.operation,
            permission_type=self.permission_type,
        )


@functools.total_ordering
@dataclass(frozen=True, slots=True, kw_only=True, eq=True)
class AclBinding:
    """A resource pattern bound to an access control entry.

    Bindings sort in Kafka's DescribeAcls order (``StandardAcl.compareTo``): resource
    type, then resource name in *reverse* order, pattern type, operation, principal,
    host, permission type.  Strings compare as Java strings (UTF-16 code units).
    """

    pattern: ResourcePattern
    entry: AccessControlEntry
    _hash: int = field(init=False, repr=False, compare=False)
    """The hash of the (already hashed) pattern and entry, computed once."""
    _mark: int = field(init=False, repr=False, compare=False)
    """Scratch state of whoever holds this very object, never part of the value (not compared,
    hashed, pickled or copied; 0 on a new object): the audit emitter keeps in it the usage
    period in which it last wrote this binding's use, a check on an object the request has
    just used, where a set of object ids costs a cache miss or two per decision."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.pattern, self.entry)))
        object.__setattr__(self, "_mark", 0)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (AclBinding, {"pattern": self.pattern, "entry": self.entry})

    @classmethod
    def of(
        cls,
        resource_type: ResourceType,
        name: str,
        pattern_type: PatternType,
        principal: str,
        host: str,
        operation: AclOperation,
        permission_type: AclPermissionType,
    ) -> AclBinding:
        """Build from the seven fields in the order the conformance vectors use."""
        return cls(
            pattern=ResourcePattern(resource_type=resource_type, name=name, pattern_type=pattern_type),
            entry=AccessControlEntry(
                principal=principal, host=host, operation=operation, permission_type=permission_type
            ),
        )

    @property
    def resource_type(self) -> ResourceType:
        return self.pattern.resource_type

    @property
    def name(self) -> str:
        return self.pattern.name

    @property
    def pattern_type(self) -> PatternType:
        return self.pattern.pattern_type

    @property
    def principal(self) -> str:
        return self.entry.principal

    @property
    def host(self) -> str:
        return self.entry.host

    @property
    def operation(self) -> AclOperation:
        return self.entry.operation

    @property
    def permission_type(self) -> AclPermissionType:
        return self.entry.permission_type

    @property
    def is_unknown(self) -> bool:
        """True when any field holds UNKNOWN (a value from a newer writer)."""
        return self.pattern.is_unknown or self.entry.is_unknown

    def fields(self) -> tuple[str, str, str, str, str, str, str]:
        """The seven fields as Kafka names, in the conformance-vector order."""
        # ``_name_`` is the member's name without the ``name`` descriptor's cost: every event
        # written and every log key is built from these.
        pattern, entry = self.pattern, self.entry
        return (
            pattern.resource_type._name_,
            pattern.name,
            pattern.pattern_type._name_,
            entry.principal,
            entry.host,
            entry.operation._name_,
            entry.permission_type._name_,
        )

    def sort_key(self) -> tuple[Any, ...]:
        return (
            int(self.pattern.resource_type),
            _Descending(java_string_key(self.pattern.name)),
            int(self.pattern.pattern_type),
            int(self.entry.operation),
            java_string_key(self.entry.principal),
            java_string_key(self.entry.host),
            int(self.entry.permission_type),
        )

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, AclBinding):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    def to_filter(self) -> AclBindingFilter:
        return AclBindingFilter(pattern_filter=self.pattern.to_filter(), entry_filter=self.entry.to_filter())

    def __str__(self) -> str:
        return "(" + ", ".join(self.fields()) + ")"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourcePatternFilter:
    """Selects resource patterns (KIP-140 / KIP-290).

    ``name=None`` matches any name; ``"*"`` is an exact string, not "any".
    ``pattern_type`` ANY matches stored patterns of every type by exact name;
    MATCH matches every stored pattern that *applies to* the named resource
    (the exact LITERAL, the LITERAL wildcard ``*``, and every PREFIXED prefix).
    """

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    @property
    def is_unknown(self) -> bool:
        return self.resource_type.is_unknown or self.pattern_type.is_unknown

    def matches(self, pattern: ResourcePattern) -> bool:
        """``ResourcePatternFilter.matches`` exactly."""
        if self.resource_type is not ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if (
            self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
            and self.pattern_type != pattern.pattern_type
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type is PatternType.ANY or self.pattern_type == pattern.pattern_type:
            return self.name == pattern.name
        if pattern.pattern_type is PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type is PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        raise ValueError(f"Unsupported PatternType: {pattern.pattern_type.name}")

    def find_indefinite_field(self) -> str | None:
        """Why this filter may match more than one pattern, or None (Kafka's wording)."""
        if self.resource_type is ResourceType.ANY:
            return "Resource type is ANY."
        if self.resource_type is ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type is PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type is PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        return None

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryFilter:
    """Selects entries; ``None`` principal/host and ANY enums match everything."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    @property
    def is_unknown(self) -> bool:
        return self.operation.is_unknown or self.permission_type.is_unknown

    def matches(self, entry: AccessControlEntry) -> bool:
        """``AccessControlEntryFilter.matches`` exactly."""
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation != entry.operation:
            return False
        return self.permission_type is AclPermissionType.ANY or self.permission_type == entry.permission_type

    def find_indefinite_field(self) -> str | None:
        """Kafka's ``AccessControlEntryData`` wording: unlike the pattern filter's, no period."""
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation is AclOperation.ANY:
            return "Operation is ANY"
        if self.operation is AclOperation.UNKNOWN:
            return "Operation is UNKNOWN"
        if self.permission_type is AclPermissionType.ANY:
            return "Permission type is ANY"
        if self.permission_type is AclPermissionType.UNKNOWN:
            return "Permission type is UNKNOWN"
        return None

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None


@dataclass(frozen=True, slots=True, kw_only=True)
class AclBindingFilter:
    """A resource-pattern filter and an entry filter, ANDed (KIP-140)."""

    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    @classmethod
    def of(
        cls,
        resource_type: ResourceType,
        name: str | None,
        pattern_type: PatternType,
        principal: str | None,
        host: str | None,
        operation: AclOperation,
        permission_type: AclPermissionType,
    ) -> AclBindingFilter:
        return cls(
            pattern_filter=ResourcePatternFilter(
                resource_type=resource_type, name=name, pattern_type=pattern_type
            ),
            entry_filter=AccessControlEntryFilter(
                principal=principal, host=host, operation=operation, permission_type=permission_type
            ),
        )

    @property
    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown or self.entry_filter.is_unknown

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    def find_indefinite_field(self) -> str | None:
        return self.pattern_filter.find_indefinite_field() or self.entry_filter.find_indefinite_field()

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None


def parse_fields(
    fields: Sequence[Any],
) -> tuple[ResourceType, Any, PatternType, Any, Any, AclOperation, AclPermissionType]:
    """Seven fields in :meth:`AclBinding.fields` order with their Kafka names parsed.

    The inverse of ``fields()``, for a binding (``AclBinding.of(*parse_fields(f))``) or a
    filter (``AclBindingFilter.of(...)``): names this release does not know become UNKNOWN.
    """
    rt, name, pt, principal, host, op, perm = fields
    return (
        ResourceType.parse(rt),
        name,
        PatternType.parse(pt),
        principal,
        host,
        AclOperation.parse(op),
        AclPermissionType.parse(perm),
    )


ANY_FILTER = AclBindingFilter()
"""Matches every binding (``AclBindingFilter.ANY``)."""
