"""Randomized ACL histories and an independent replay of them for the history tests.

The replay keeps the live set and the settings as plain Python values, event by event, and
asks the pure decision rules (:func:`store.authorizer.authorize` over a :class:`ScanAclView`,
which matches bindings through KIP-290's MATCH filter, not through the archive's tables or
intervals) after every event.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizerConfig, ScanAclView, authorize
from store.authorizer.config import ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG
from store.codec import AvroEventCodec, JsonEventCodec, binding_key, config_key, event_key
from store.events import AclCreated, AclDeleted, ChangeEvent, ConfigAltered
from store.principal import SUPER_USERS_CONFIG

PRINCIPALS = ("User:alice", "User:bob", "User:carol", "User:*")
NAMED = ("User:alice", "User:bob", "User:carol", "User:dave")
HOSTS = ("*", "10.0.0.1", "10.0.0.2")
REQUEST_HOSTS = ("10.0.0.1", "10.0.0.2")
OPERATIONS = (AclOperation.READ, AclOperation.WRITE, AclOperation.ALL, AclOperation.DESCRIBE)
ASKED = (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.WRITE)
LITERAL_NAMES = ("orders", "orders-eu", "payments", "*")
PREFIXES = ("o", "ord", "orders", "orders-", "pay")
RESOURCES = (
    (ResourceType.TOPIC, "orders"),
    (ResourceType.TOPIC, "orders-eu"),
    (ResourceType.TOPIC, "payments"),
    (ResourceType.GROUP, "orders"),
)


@dataclass(frozen=True, slots=True)
class Record:
    key: bytes
    value: bytes | None


def random_binding(rng: random.Random) -> AclBinding:
    prefixed = rng.random() < 0.4
    return AclBinding.of(
        rng.choice((ResourceType.TOPIC, ResourceType.TOPIC, ResourceType.GROUP)),
        rng.choice(PREFIXES if prefixed else LITERAL_NAMES),
        PatternType.PREFIXED if prefixed else PatternType.LITERAL,
        rng.choice(PRINCIPALS),
        rng.choice(HOSTS),
        rng.choice(OPERATIONS),
        AclPermissionType.DENY if rng.random() < 0.25 else AclPermissionType.ALLOW,
    )


def random_history(seed: int, count: int) -> list[Record]:
    """``count`` records: creates, deletes, config changes and tombstones, both encodings."""
    rng = random.Random(seed)
    codecs = (AvroEventCodec(), JsonEventCodec())
    live: list[AclBinding] = []
    records: list[Record] = []
    for i in range(count):
        roll = rng.random()
        meta = {"actor": rng.choice(NAMED), "request_id": f"r{i}", "time_ms": 1_700_000_000_000 + i}
        event: ChangeEvent
        if roll < 0.03 and live:
            gone = live.pop(rng.randrange(len(live)))
            records.append(Record(binding_key(gone), None))
            continue
        if roll < 0.05:
            name = rng.choice((SUPER_USERS_CONFIG, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG))
            records.append(Record(config_key(name), None))
            continue
        if roll < 0.10:
            users = ";".join(rng.sample(NAMED, rng.randrange(0, 3)))
            event = ConfigAltered(name=SUPER_USERS_CONFIG, value=users or None, **meta)
        elif roll < 0.16:
            value = rng.choice(("true", "false", None))
            event = ConfigAltered(name=ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, value=value, **meta)
        elif roll < 0.55 and live:
            gone = live.pop(rng.randrange(len(live)))
            event = AclDeleted(binding=gone, **meta)
        else:
            binding = random_binding(rng)
            if binding not in live:
                live.append(binding)
            event = AclCreated(binding=binding, **meta)
        records.append(Record(event_key(event), rng.choice(codecs).encode(event)))
    return records


@dataclass(frozen=True, slots=True)
class State:
    """The live set and the explicitly set settings just after one offset."""

    offset: int
    bindings: frozenset[AclBinding]
    settings: tuple[tuple[str, str], ...]

    def config(self) -> AuthorizerConfig:
        values = dict(self.settings)
        return AuthorizerConfig.from_properties(
            {
                SUPER_USERS_CONFIG: values.get(SUPER_USERS_CONFIG),
                ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: values.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG),
            }
        )

    def allowed(self, principal: str, host: str, action: Action) -> bool:
        return authorize(ScanAclView(self.bindings), self.config(), principal, host, [action])[0].allowed


def replay(records: Sequence[Record], first_offset: int = 0) -> Iterator[State]:
    """The state after each record, decoding each value its own way (the codecs directly)."""
    from store.codec import decode_event, parse_key

    bindings: set[AclBinding] = set()
    settings: dict[str, str] = {}
    for i, record in enumerate(records):
        target = parse_key(record.key)
        if record.value is None:
            if isinstance(target, AclBinding):
                bindings.discard(target)
            else:
                settings.pop(target.name, None)
        else:
            event = decode_event(record.value)
            if isinstance(event, AclCreated):
                bindings.add(event.binding)
            elif isinstance(event, AclDeleted):
                bindings.discard(event.binding)
            elif isinstance(event, ConfigAltered):
                if event.value is None:
                    settings.pop(event.name, None)
                else:
                    settings[event.name] = event.value
        yield State(first_offset + i, frozenset(bindings), tuple(sorted(settings.items())))


def allowed_intervals(
    states: Sequence[State], principal: str, host: str, action: Action
) -> list[tuple[int, int | None]]:
    """(first offset allowed, first offset denied again or None) by asking after every record."""
    found: list[tuple[int, int | None]] = []
    start: int | None = None
    for state in states:
        allowed = state.allowed(principal, host, action)
        if allowed and start is None:
            start = state.offset
        elif not allowed and start is not None:
            found.append((start, state.offset))
            start = None
    if start is not None:
        found.append((start, None))
    return found
