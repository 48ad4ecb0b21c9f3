"""The realistic broker workload's shape: who holds which ACLs, who produces where, what changes.

Pure values only (no I/O): ``bench broker`` loads :func:`bindings` into both authorizers,
creates :attr:`Traffic.topics` on both brokers, draws produce requests from :class:`Traffic`
and applies :func:`changes` during the run.

The cluster is 500 teams of 20 applications: 10,000 principals ``User:tNNN-appMM``, each
owning 10 topics ``tNNN.appMM.K``, 100,000 topic names in all.  The ACLs are the ones such a
cluster grows (and that make Kafka's authorizer look at every kind of pattern on a produce):

* LITERAL ALLOW WRITE on each of the 100,000 topics to its owner;
* PREFIXED ALLOW READ on ``tNNN.`` to each application of the team (its consumers);
* PREFIXED ALLOW WRITE on ``tNNN.`` to the team's ``app00`` (its ingest service), and a
  PREFIXED DENY WRITE on ``tNNN.app19.`` to that same service (a carved-out namespace);
* on the wildcard topic ``*``: ALLOW DESCRIBE to each team's ``app01`` (monitoring), and a
  DENY WRITE to the ``app18`` of 50 teams (quarantined applications), so that every produce
  decision finds DENY entries to check on ``*``;
* ``User:*`` ALLOW READ on PREFIXED ``public.``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

TEAMS = 500
APPS = 20
TOPICS_PER_APP = 10
QUARANTINED_TEAMS = 50
"""Teams whose ``app18`` is denied WRITE on every topic (``*``)."""

Binding = dict[str, str]


def principal(team: int, app: int) -> str:
    return f"User:t{team:03d}-app{app:02d}"


def topic(team: int, app: int, k: int) -> str:
    return f"t{team:03d}.app{app:02d}.{k}"


def _binding(
    name: str, pattern: str, who: str, operation: str, permission: str = "ALLOW"
) -> Binding:
    return {"resourceType": "TOPIC", "resourceName": name, "patternType": pattern,
            "principal": who, "host": "*", "operation": operation,
            "permissionType": permission}  # fmt: skip


def bindings() -> list[Binding]:
    """Every binding of the workload (about 111,000), in a fixed order."""
    out: list[Binding] = []
    for team in range(TEAMS):
        prefix = f"t{team:03d}."
        for app in range(APPS):
            who = principal(team, app)
            out.extend(_binding(topic(team, app, k), "LITERAL", who, "WRITE")
                       for k in range(TOPICS_PER_APP))  # fmt: skip
            out.append(_binding(prefix, "PREFIXED", who, "READ"))
        ingest = principal(team, 0)
        out.append(_binding(prefix, "PREFIXED", ingest, "WRITE"))
        out.append(_binding(f"{prefix}app19.", "PREFIXED", ingest, "WRITE", "DENY"))
        out.append(_binding("*", "LITERAL", principal(team, 1), "DESCRIBE"))
        if team < QUARANTINED_TEAMS:
            out.append(_binding("*", "LITERAL", principal(team, 18), "WRITE", "DENY"))
    out.append(_binding("public.", "PREFIXED", "User:*", "READ"))
    return out


@dataclass(frozen=True, slots=True)
class Traffic:
    """Who produces where.  ``teams`` teams send traffic, each through two applications: its
    ingest service ``app00`` (WRITE by the team's prefix) and one other application (WRITE by
    its literal ACLs).  Each writes to its own topics and the ingest service to the other
    application's too, so a produce is allowed by a literal ACL or by a prefix, with DENY
    entries on ``*`` and on the team's prefixes to check either way."""

    writable: dict[str, tuple[str, ...]]
    """Principal (``User:...``) -> the existing topics it produces to."""

    @property
    def principals(self) -> list[str]:
        return sorted(self.writable)

    @property
    def topics(self) -> list[str]:
        """Every topic that receives traffic (these exist on the brokers)."""
        return sorted({name for names in self.writable.values() for name in names})

    @property
    def pairs(self) -> int:
        """Distinct (principal, topic) pairs: the keys a decision cache could hold."""
        return sum(len(names) for names in self.writable.values())

    @staticmethod
    def draw(teams: int, rng: random.Random) -> Traffic:
        writable: dict[str, tuple[str, ...]] = {}
        for team in sorted(rng.sample(range(QUARANTINED_TEAMS, TEAMS), teams)):
            app = rng.randrange(2, 18)
            own = tuple(topic(team, app, k) for k in range(TOPICS_PER_APP))
            ingest = tuple(topic(team, 0, k) for k in range(TOPICS_PER_APP))
            writable[principal(team, app)] = own
            writable[principal(team, 0)] = ingest + own
        return Traffic(writable)

    def requests(self, count: int, rng: random.Random) -> list[tuple[str, str]]:
        """``count`` produce requests (principal, topic): a principal drawn evenly, then one of
        its topics."""
        names = self.principals
        out = []
        for _ in range(count):
            who = rng.choice(names)
            out.append((who, rng.choice(self.writable[who])))
        return out


def changes(
    traffic: Traffic, base: list[Binding], rng: random.Random, live: int = 100
) -> Iterator[tuple[str, Binding]]:
    """An endless stream of ACL changes, ``("create", binding)`` or ``("delete", binding)``:
    each created binding is deleted again ``live`` changes later, so the ACL count stays put.
    None is one of ``base`` (deleting it again would remove a binding the workload needs).

    A quarter name the topics that receive traffic (so both authorizers change the very
    resources they are deciding), the rest any of the 100,000 names or a team's prefix; one in
    ten is a DENY, and a DENY never names a producing principal (the run's produces must keep
    succeeding: the point is the cost of changes, not their effect).
    """
    producing = set(traffic.writable)
    busy = traffic.topics
    pending: list[Binding] = []
    seen = {tuple(b.values()) for b in base}
    while True:
        if len(pending) >= live:
            old = pending.pop(0)
            seen.discard(tuple(old.values()))
            yield "delete", old
            continue
        kind = rng.random()
        if kind < 0.25:
            name, pattern = rng.choice(busy), "LITERAL"
        elif kind < 0.85:
            name = topic(rng.randrange(TEAMS), rng.randrange(APPS), rng.randrange(TOPICS_PER_APP))
            pattern = "LITERAL"
        else:
            name, pattern = f"t{rng.randrange(TEAMS):03d}.app{rng.randrange(APPS):02d}.", "PREFIXED"
        deny = rng.random() < 0.1
        while True:
            who = principal(rng.randrange(TEAMS), rng.randrange(APPS))
            if not (deny and who in producing):
                break
        operation = rng.choice(["READ", "WRITE", "DESCRIBE", "ALTER_CONFIGS"])
        binding = _binding(name, pattern, who, operation, "DENY" if deny else "ALLOW")
        key = tuple(binding.values())
        if key in seen:
            continue
        seen.add(key)
        pending.append(binding)
        yield "create", binding


def kafka_acl(b: Mapping[str, str], *, as_filter: bool = False) -> Any:
    """A binding of the workload (its JSON fields) as confluent-kafka's ``AclBinding``, or with
    ``as_filter`` the ``AclBindingFilter`` that matches exactly it."""
    from confluent_kafka.admin._acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
    from confluent_kafka.admin._resource import ResourcePatternType, ResourceType

    kind = AclBindingFilter if as_filter else AclBinding
    return kind(
        ResourceType[b["resourceType"]], b["resourceName"], ResourcePatternType[b["patternType"]],
        b["principal"], b["host"], AclOperation[b["operation"]],
        AclPermissionType[b["permissionType"]],
    )  # fmt: skip


def produce_ms(producer: Any, topic: str) -> tuple[float, int]:
    """One record produced and waited for: (milliseconds, Kafka error code or 0)."""
    outcome: list[int] = []
    started = time.perf_counter()
    producer.produce(topic, value=b"x" * 100,
                     on_delivery=lambda err, _: outcome.append(0 if err is None else err.code()))  # fmt: skip
    producer.flush(15)
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, outcome[0] if outcome else -1
