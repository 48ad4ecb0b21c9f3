"""``kafka-acls.sh`` options turned into bindings and filters, with its checks and its messages.

Pure translation, no I/O: mirrors ``org.apache.kafka.tools.AclCommand`` (``getResourceFilter``,
``getAcl``, ``getProducerResourceFilterToAcls``, ``getConsumerResourceFilterToAcls``,
``validateOperation``, ``checkArgs``) so that habits carry over: hosts default to ``*`` when a
principal is given, ``--operation`` defaults to ``All``, ``--cluster`` (and ``--idempotent``)
adds the LITERAL ``kafka-cluster`` resource, ``--resource-pattern-type`` defaults to ``literal``
and must be ``literal`` or ``prefixed`` to add, ``--producer``/``--consumer`` expand to the
role's operations, taken from the store's own expansions (:func:`store.kafka_apis.producer_bindings`,
:func:`store.kafka_apis.consumer_bindings`).  Also the text Kafka prints for patterns and entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from store.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from store.errors import InvalidRequestError
from store.kafka_apis import consumer_bindings, producer_bindings
from store.principal import KafkaPrincipal, java_trim


class AclCommandError(InvalidRequestError):
    """The options do not make a valid command (kafka-acls.sh's ``printUsageAndExit``): the
    message goes to stderr followed by the usage, exit code 1."""


class AclExecutionError(InvalidRequestError):
    """The command failed while running (AclCommand's ``Error while executing ACL command``):
    a value that does not parse (a principal, a pattern type) or a store that refused.

    ``cause`` is the underlying reason where Kafka's message names only the symptom (its
    ``Caused by:`` line)."""

    def __init__(self, message: str, *, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause


_R = ResourceType
_O = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    _R.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                         _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    _R.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    _R.CLUSTER: frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                           _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}),
    _R.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE}),
    _R.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
    _R.USER: frozenset({_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS}),
}  # fmt: skip
"""``AclEntry.supportedOperations`` (Kafka 4.3): what each resource type accepts (ALL always).

Kafka's TRANSACTIONAL_ID also takes ``TwoPhaseCommit`` (KIP-939), an operation the store's model
does not have yet."""

def _role_operations(bindings: Iterable[AclBinding]) -> dict[ResourceType, tuple[AclOperation, ...]]:
    """The operations a role's bindings grant, per resource type, in the bindings' order."""
    operations: dict[ResourceType, dict[AclOperation, None]] = {}
    for b in bindings:
        operations.setdefault(b.resource_type, {})[b.operation] = None
    return {rt: tuple(ops) for rt, ops in operations.items()}


# The roles as the store expands them, read off once: --producer on a topic, a transactional id
# and (with --idempotent) the cluster; --consumer on a topic and a group.
PRODUCER_OPERATIONS: Final = _role_operations(
    producer_bindings(principal="User:role", topic="t", transactional_id="tx", idempotent=True)
)
CONSUMER_OPERATIONS: Final = _role_operations(
    consumer_bindings(principal="User:role", topic="t", group="g")
)

CLUSTER_FILTER = ResourcePatternFilter(
    resource_type=ResourceType.CLUSTER, name=CLUSTER_NAME, pattern_type=PatternType.LITERAL
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AclOptions:
    """The parsed ``aclstore acls`` options that describe ACLs (not where the store is)."""

    action: str  # "add" | "remove" | "list"
    topics: Sequence[str] = ()
    groups: Sequence[str] = ()
    cluster: bool = False
    transactional_ids: Sequence[str] = ()
    delegation_tokens: Sequence[str] = ()
    user_principals: Sequence[str] = ()
    resource_pattern_type: str = "literal"
    operations: Sequence[str] = ()
    allow_principals: Sequence[str] = ()
    deny_principals: Sequence[str] = ()
    allow_hosts: Sequence[str] = ()
    deny_hosts: Sequence[str] = ()
    list_principals: Sequence[str] = ()
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False
    explicit: frozenset[str] = field(default_factory=frozenset)
    """Options given on the command line (kafka-acls.sh checks presence, not values)."""


_PATTERN_CHOICES = "|".join(t.name for t in PatternType if t is not PatternType.UNKNOWN)


def parse_pattern_type(text: str) -> PatternType:
    """``--resource-pattern-type`` as AclCommand's ``PatternTypeConverter``: the enum name in any
    letter case, UNKNOWN refused; a bad value fails the run (not the option check)."""
    value = next((t for t in PatternType if t.name == text.upper()), None)
    if value is None or value is PatternType.UNKNOWN:
        cause = (
            f"Unknown resource-pattern-type: {text}"
            if value is PatternType.UNKNOWN
            else f"Value [{text}] is not one of [{_PATTERN_CHOICES}]"
        )
        raise AclExecutionError(
            f"Cannot parse argument '{text}' of option resource-pattern-type", cause=cause
        )
    return value


_OPERATION_KEYS: Final = {op.name.replace("_", ""): op for op in AclOperation}


def parse_operation(text: str) -> AclOperation:
    """``SecurityUtils.operation`` of the trimmed text (Java's ``trim``, as AclCommand's
    ``getAcl``): the PascalCase name in any letter case (``DescribeConfigs``,
    ``describeconfigs``, ``READ``), else UNKNOWN; ``DESCRIBE_CONFIGS`` is UNKNOWN, as in Kafka,
    and so is ``Read`` after a no-break space (U+00A0 is no char ``trim`` removes).

    UNKNOWN and ANY are refused later, per resource type (:func:`_validate_operations`)."""
    return _OPERATION_KEYS.get(java_trim(text).upper(), AclOperation.UNKNOWN)


def _principal(text: str) -> str:
    """``SecurityUtils.parseKafkaPrincipal`` of the trimmed text (AclCommand's ``getPrincipals``)."""
    try:
        return str(KafkaPrincipal.parse(java_trim(text)))
    except InvalidRequestError as exc:
        raise AclExecutionError(exc.message) from exc
    except Exception as exc:  # InvalidPrincipalError is an AuthorizationError
        raise AclExecutionError(str(exc)) from exc


def check_args(o: AclOptions) -> None:
    """``AclCommandOptions.checkArgs``, with kafka-acls.sh's messages."""
    has = o.explicit.__contains__
    if o.action == "list":
        for name in ("producer", "consumer", "allow-host", "allow-principal", "deny-host",
                     "deny-principal"):  # fmt: skip
            if has(name):
                raise AclCommandError(f'Option "[list]" can\'t be used with option "[{name}]"')
    for role in ("producer", "consumer"):
        if has(role):
            for name in ("operation", "deny-principal", "deny-host"):
                if has(name):
                    raise AclCommandError(
                        f'Option "[{role}]" can\'t be used with option "[{name}]"'
                    )
    if has("principal") and o.action != "list":
        raise AclCommandError("The --principal option is only available if --list is set")
    if o.producer and not o.topics:
        raise AclCommandError("With --producer you must specify a --topic")
    if o.idempotent and not o.producer:
        raise AclCommandError("The --idempotent option is only available if --producer is set")
    if o.consumer and (
        not o.topics or not o.groups or (not o.producer and (o.cluster or o.transactional_ids))
    ):
        raise AclCommandError(
            "With --consumer you must specify a --topic and a --group and no --cluster or "
            "--transactional-id option should be specified."
        )


def resource_filters(o: AclOptions, *, required: bool) -> list[ResourcePatternFilter]:
    """``getResourceFilter``: one filter per named resource, in option order.

    Names are trimmed as Kafka trims them, with Java's ``trim``: every char <= U+0020 at either
    end goes, control chars too (U+0001 ``orders`` is ``orders``), and no other (``orders``
    U+00A0 keeps its no-break space).  Transactional ids are not trimmed, as in Kafka."""
    pattern_type = parse_pattern_type(o.resource_pattern_type)
    filters: list[ResourcePatternFilter] = []

    def add(rt: ResourceType, names: Iterable[str], trim: bool = True) -> None:
        for name in names:
            f = ResourcePatternFilter(
                resource_type=rt, name=java_trim(name) if trim else name, pattern_type=pattern_type
            )
            if f not in filters:
                filters.append(f)

    add(ResourceType.TOPIC, o.topics)
    if pattern_type is PatternType.LITERAL and (o.cluster or o.idempotent):
        filters.append(CLUSTER_FILTER)
    add(ResourceType.GROUP, o.groups)
    add(ResourceType.TRANSACTIONAL_ID, o.transactional_ids, trim=False)  # as Kafka: untrimmed
    add(ResourceType.DELEGATION_TOKEN, o.delegation_tokens)
    add(ResourceType.USER, o.user_principals)
    if not filters and required:
        raise AclCommandError(
            "You must provide at least one resource: --topic <topic> or --cluster or --group "
            "<group> or --delegation-token <Delegation Token ID>"
        )
    return filters


def _entries(o: AclOptions, operations: Iterable[AclOperation]) -> list[AccessControlEntry]:
    """``getAcl``: principals x operations x hosts, ALLOW then DENY; hosts (trimmed as Java's
    ``trim``, as Kafka's ``getHosts``) default to ``*``."""
    entries: list[AccessControlEntry] = []
    ops = list(dict.fromkeys(operations))
    for principals, hosts, permission in (
        (o.allow_principals, o.allow_hosts, AclPermissionType.ALLOW),
        (o.deny_principals, o.deny_hosts, AclPermissionType.DENY),
    ):
        host_list = [java_trim(h) for h in hosts] or ([WILDCARD_HOST] if principals else [])
        for principal in dict.fromkeys(_principal(p) for p in principals):
            for op in ops:
                for host in dict.fromkeys(host_list):
                    entry = AccessControlEntry(
                        principal=principal, host=host, operation=op, permission_type=permission
                    )
                    if entry not in entries:
                        entries.append(entry)
    return entries


def filter_to_entries(
    o: AclOptions,
) -> list[tuple[ResourcePatternFilter, list[AccessControlEntry]]]:
    """``getResourceFilterToAcls``: the resources and the entries each gets (or removes).

    Entries are principals x operations x hosts, the same for every role, so the operations are
    gathered per resource first and checked (``validateOperation``) before any entry exists."""
    operations: dict[ResourcePatternFilter, list[AclOperation]] = {}
    if not o.producer and not o.consumer:
        asked = [parse_operation(t) for t in (o.operations or ["All"])]
        if o.allow_principals or o.deny_principals:  # getAcl builds the entries first
            for p in (*o.allow_principals, *o.deny_principals):
                _principal(p)
            if AclOperation.ANY in asked:  # Kafka's AccessControlEntry refuses it
                raise AclExecutionError("operation must not be ANY")
        for f in resource_filters(o, required=True):
            operations[f] = list(asked)
    if o.producer:
        for f in resource_filters(o, required=True):
            if f.resource_type in (ResourceType.TOPIC, ResourceType.TRANSACTIONAL_ID):
                operations[f] = list(PRODUCER_OPERATIONS[f.resource_type])
        if o.idempotent:
            operations[CLUSTER_FILTER] = list(PRODUCER_OPERATIONS[ResourceType.CLUSTER])
    if o.consumer:
        for f in resource_filters(o, required=True):
            if f.resource_type in CONSUMER_OPERATIONS:
                existing = operations.setdefault(f, [])
                existing.extend(op for op in CONSUMER_OPERATIONS[f.resource_type] if op not in existing)
    if o.allow_principals or o.deny_principals:  # no entries, nothing to check (as Kafka)
        _validate_operations(operations)
    return [(f, _entries(o, ops)) for f, ops in operations.items()]


def _validate_operations(operations: dict[ResourcePatternFilter, list[AclOperation]]) -> None:
    for f, ops in operations.items():
        valid = SUPPORTED_OPERATIONS.get(f.resource_type, frozenset()) | {_O.ALL}
        if any(op not in valid for op in ops):
            # Kafka prints a HashSet, in no fixed order; here in the enum's order.
            names = ", ".join(op.name for op in sorted(valid))
            raise AclCommandError(
                f"ResourceType {f.resource_type.name} only supports operations [{names}]"
            )


def bindings_to_add(o: AclOptions) -> list[tuple[ResourcePattern, list[AclBinding]]]:
    """``getResourceToAcls``: what ``--add`` creates, per resource pattern."""
    pattern_type = parse_pattern_type(o.resource_pattern_type)
    if not pattern_type.is_specific:
        raise AclCommandError(
            f"A '--resource-pattern-type' value of '{pattern_type.name}' is not valid when adding "
            "acls."
        )
    out: list[tuple[ResourcePattern, list[AclBinding]]] = []
    for f, entries in filter_to_entries(o):
        if not entries:
            raise AclCommandError(
                "You must specify one of: --allow-principal, --deny-principal when trying to add "
                "ACLs."
            )
        assert f.name is not None
        pattern = ResourcePattern(
            resource_type=f.resource_type, name=f.name, pattern_type=f.pattern_type
        )
        out.append((pattern, [AclBinding(pattern=pattern, entry=e) for e in entries]))
    return out


@dataclass(frozen=True, slots=True)
class RemovePlan:
    """One resource filter of ``--remove``: all its ACLs (no entries given) or the entries'."""

    resource: ResourcePatternFilter
    entries: list[AccessControlEntry]

    @property
    def filters(self) -> list[AclBindingFilter]:
        if not self.entries:
            return [AclBindingFilter(pattern_filter=self.resource)]
        return [
            AclBindingFilter(pattern_filter=self.resource, entry_filter=e.to_filter())
            for e in self.entries
        ]

    def confirmation(self) -> str:
        """kafka-acls.sh's question before it deletes."""
        if not self.entries:
            resource = pattern_text(self.resource)
            return (
                f"Are you sure you want to delete all ACLs for resource filter `{resource}`? (y/n)"
            )
        listed = "\n".join(f" \t{entry_text(e)}" for e in self.entries)
        return (
            f"Are you sure you want to remove ACLs: \n{listed}\n from resource filter "
            f"`{pattern_text(self.resource)}`? (y/n)"
        )


def remove_plans(o: AclOptions) -> list[RemovePlan]:
    return [RemovePlan(f, entries) for f, entries in filter_to_entries(o)]


def list_filters(o: AclOptions) -> list[AclBindingFilter]:
    """``listAcls``: one filter per named resource, or everything."""
    filters = resource_filters(o, required=False)
    if not filters:
        return [AclBindingFilter()]
    return [AclBindingFilter(pattern_filter=f) for f in filters]


def list_principals(o: AclOptions) -> list[str]:
    return list(dict.fromkeys(_principal(p) for p in o.list_principals))


def with_principal(acl_filter: AclBindingFilter, principal: str) -> AclBindingFilter:
    """``acl_filter`` narrowed to the ACLs of ``principal`` (``--list --principal``)."""
    return AclBindingFilter(
        pattern_filter=acl_filter.pattern_filter,
        entry_filter=replace(acl_filter.entry_filter, principal=principal),
    )


# --- Kafka's toString forms -------------------------------------------------------------------


_KAFKA_EXCEPTIONS: Final = {
    -1: "UnknownServerException",
    7: "TimeoutException",
    19: "NotEnoughReplicasException",
    31: "ClusterAuthorizationException",
    35: "UnsupportedVersionException",
    40: "InvalidConfigurationException",
    42: "InvalidRequestException",
    44: "PolicyViolationException",
    54: "SecurityDisabledException",
    56: "KafkaStorageException",
    67: "InvalidPrincipalTypeException",
    96: "FeatureUpdateFailedException",
}
"""The ``org.apache.kafka.common.errors`` class the Admin client raises for an error code."""


def item_error_text(code: int, message: str) -> str:
    """A refused item as AclCommand prints it: the ``ExecutionException``'s message, which is
    its cause's ``toString`` (``org.apache.kafka.common.errors.InvalidRequestException: ...``)."""
    name = _KAFKA_EXCEPTIONS.get(code, "UnknownServerException")
    return f"org.apache.kafka.common.errors.{name}: {message}"


def pattern_text(p: ResourcePattern | ResourcePatternFilter) -> str:
    """``ResourcePattern.toString`` (the model's ``str``) / ``ResourcePatternFilter.toString``,
    which prints the same form with ``<any>`` for a null name."""
    if isinstance(p, ResourcePattern):
        return str(p)
    name = "<any>" if p.name is None else p.name
    return (
        f"ResourcePattern(resourceType={p.resource_type.name}, name={name}, "
        f"patternType={p.pattern_type.name})"
    )


def entry_text(e: AccessControlEntry) -> str:
    """``AccessControlEntry.toString``."""
    return (
        f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
        f"permissionType={e.permission_type.name})"
    )


def binding_text(b: AclBinding) -> str:
    """``AclBinding.toString``."""
    return f"(pattern={b.pattern}, entry={entry_text(b.entry)})"


def group_by_pattern(
    bindings: Iterable[AclBinding],
) -> list[tuple[ResourcePattern, list[AccessControlEntry]]]:
    """Bindings grouped by resource pattern, patterns and entries in DescribeAcls order."""
    groups: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in sorted(bindings):
        groups.setdefault(b.pattern, []).append(b.entry)
    return list(groups.items())


def resource_acls_text(groups: Iterable[tuple[ResourcePattern, list[AccessControlEntry]]]) -> str:
    """``printResourceAcls``: a block per resource pattern."""
    blocks = []
    for pattern, entries in groups:
        listed = "\n".join(f"\t{entry_text(e)}" for e in entries)
        blocks.append(f"Current ACLs for resource `{pattern_text(pattern)}`:\n{listed}\n")
    return "\n".join(blocks)
