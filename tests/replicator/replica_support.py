"""Helpers shared by the replica tests: writing events to a log, and an independent replay.

``replay`` is the reference a replica is compared with: it reads the log from its start with
nothing but the codec and a dict (no RocksDB, no replicator code), applying creates, deletes,
tombstones and settings in log order.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from store.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.codec import ConfigKey, codec_named, decode_event, event_key, parse_key
from store.events import AclCreated, AclDeleted, ChangeEvent, ConfigAltered
from store.log import ChangeLog

LogFactory = Callable[[], ChangeLog]
"""Opens another handle on one fresh log (the ``open_log`` fixture)."""

_AVRO = codec_named("avro")
_JSON = codec_named("json")

RESOURCE_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)
OPERATIONS = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.DESCRIBE,
    AclOperation.ALL,
    AclOperation.ALTER,
    AclOperation.DELETE,
)
PRINCIPALS = ("User:alice", "User:bob", "User:carol", "User:*")
HOSTS = ("*", "10.0.0.1")
NAMES = ("*", "a", "ab", "abc", "abd", "orders", "orders-eu", "order", "pay", "payments-1")


def created(binding: AclBinding, **kw: int) -> AclCreated:
    return AclCreated(binding=binding, actor="User:admin", request_id="t", time_ms=1, **kw)


def deleted(binding: AclBinding, **kw: int) -> AclDeleted:
    return AclDeleted(binding=binding, actor="User:admin", request_id="t", time_ms=1, **kw)


def config(name: str, value: str | None) -> ConfigAltered:
    return ConfigAltered(name=name, value=value, actor="User:admin", request_id="t", time_ms=1)


def record(event: ChangeEvent, *, codec: str = "avro") -> tuple[bytes, bytes]:
    """The (key, value) the write path appends for ``event``."""
    return event_key(event), (_AVRO if codec == "avro" else _JSON).encode(event)


def append_events(log: ChangeLog, events: Sequence[ChangeEvent], *, chunk: int = 2000) -> int:
    """Append and return the offset of the last event."""
    last = -1
    for start in range(0, len(events), chunk):
        last = log.append([record(e) for e in events[start : start + chunk]], timeout=60)[-1]
    return last


def binding(
    rt: ResourceType = ResourceType.TOPIC,
    name: str = "orders",
    pt: PatternType = PatternType.LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    op: AclOperation = AclOperation.READ,
    perm: AclPermissionType = AclPermissionType.ALLOW,
) -> AclBinding:
    return AclBinding.of(rt, name, pt, principal, host, op, perm)


def random_binding(rng: random.Random, names: Sequence[str] = NAMES) -> AclBinding:
    return binding(
        rng.choice(RESOURCE_TYPES),
        rng.choice(names),
        rng.choice((PatternType.LITERAL, PatternType.PREFIXED)),
        rng.choice(PRINCIPALS),
        rng.choice(HOSTS),
        rng.choice(OPERATIONS),
        rng.choice((AclPermissionType.ALLOW, AclPermissionType.DENY)),
    )


def random_events(
    rng: random.Random, count: int, names: Sequence[str] = NAMES
) -> list[ChangeEvent]:
    """Creates and deletes (deletes mostly of live bindings), now and then a setting."""
    live: list[AclBinding] = []
    events: list[ChangeEvent] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.01:
            events.append(
                config("allow.everyone.if.no.acl.found", rng.choice(["true", "false", None]))
            )
        elif roll < 0.3 and live:
            events.append(deleted(live.pop(rng.randrange(len(live)))))
        else:
            b = random_binding(rng, names)
            live.append(b)
            events.append(created(b))
    return events


@dataclass
class Replay:
    """The live set and settings after applying a log from its start."""

    bindings: dict[bytes, AclBinding] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    last_offset: int = -1
    last_timestamp_ms: int = -1


def replay(log: ChangeLog, *, until: int | None = None, timeout: float = 60.0) -> Replay:
    """Apply the log up to ``until`` (default: its end) with a dict."""
    out = Replay()
    high = log.watermarks()[1] if until is None else until + 1
    position, deadline = 0, time.monotonic() + timeout
    while position < high:
        assert time.monotonic() < deadline, f"replay stuck at {position} of {high}"
        for rec in log.read(position, max_records=20_000, timeout=1.0):
            if rec.offset >= high:
                break
            position = rec.offset + 1
            out.last_offset, out.last_timestamp_ms = rec.offset, rec.timestamp_ms
            if rec.value is None:
                target = parse_key(rec.key)
                if isinstance(target, ConfigKey):
                    out.settings.pop(target.name, None)
                else:
                    out.bindings.pop(rec.key, None)
                continue
            event = decode_event(rec.value)
            if isinstance(event, AclCreated):
                out.bindings[rec.key] = event.binding
            elif isinstance(event, AclDeleted):
                out.bindings.pop(rec.key, None)
            elif event.value is None:
                out.settings.pop(event.name, None)
            else:
                out.settings[event.name] = event.value
    return out


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)
