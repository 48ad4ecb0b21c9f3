"""The soak's load: decision clients and an ACL writer, each a process of its own.

Each process sends what it measured to the bench through a queue about once a second, as
:class:`Report` values: one :class:`Sample` per answered request (its wall-clock time, so the
bench files it under the minute it was asked in) and one :class:`Failure` per error (any
answer outside 2xx, any exception, and a write the log did not carry out as asked).
"""

from __future__ import annotations

import http.client
import json
import random
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType

HOSTS: Final = ("10.0.0.1", "10.0.1.2", "10.0.3.7")
BATCH: Final = 100
LIVE_WRITES: Final = 50
"""Bindings the writer keeps created: past that, each create is paired with a delete of the
oldest, so the store's size stays steady."""
_ASKED_OPS: Final = ("READ", "WRITE", "DESCRIBE")


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    """Wall-clock time (``time.time()``) the request was sent."""
    ms: float
    decisions: int
    """Actions decided: 1, a batch's size, or 0 for a write."""
    denied: int


@dataclass(frozen=True, slots=True)
class Failure:
    at: float
    what: str


@dataclass(slots=True)
class Report:
    source: str
    samples: list[Sample] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    last: bool = False
    """The process's final report: it stopped."""


Grants = list[tuple[str, list[tuple[str, str, str]]]]
"""Per principal: (resource type, operation, resource name) it holds an ALLOW binding for."""


def grants(bindings: Iterable[AclBinding], principals: int, seed: int) -> Grants:
    """What the clients ask about: ``principals`` principals (a seeded sample of those with an
    ALLOW binding), each with the resources its ALLOW bindings grant (a prefixed binding
    grants a name under its prefix; an ALL binding is asked about as READ)."""
    held: dict[str, list[tuple[str, str, str]]] = {}
    for b in bindings:
        if b.permission_type is not AclPermissionType.ALLOW or b.principal == "User:*":
            continue
        name = b.name + "events" if b.pattern_type is PatternType.PREFIXED else b.name
        op = "READ" if b.operation is AclOperation.ALL else b.operation.name
        held.setdefault(b.principal, []).append((b.resource_type.name, op, name))
    names = sorted(held)
    chosen = random.Random(seed).sample(names, min(principals, len(names)))
    return [(p, held[p]) for p in chosen]


class Asker:
    """Request bodies as brokers send them: 80 % of requests from a hot twentieth of the
    principals; 90 % of actions about what the principal was granted, 10 % about any topic
    (mostly denied).  Drawn afresh for each request, so the mix is the same in every minute."""

    def __init__(self, table: Grants, teams: int, seed: int) -> None:
        self.table = table
        self.hot = max(1, len(table) // 20)
        self.teams = teams
        self.rng = random.Random(seed)

    def body(self, actions: int) -> bytes:
        rng = self.rng
        index = rng.randrange(self.hot) if rng.random() < 0.8 else rng.randrange(len(self.table))
        principal, granted = self.table[index]
        asked = []
        for _ in range(actions):
            if rng.random() < 0.9:
                rt, op, name = rng.choice(granted)
            else:
                rt, op = "TOPIC", rng.choice(_ASKED_OPS[:2])
                name = f"team{rng.randrange(self.teams)}.app{rng.randrange(40)}.events"
            asked.append({"operation": op, "resourceType": rt, "resourceName": name})
        return json.dumps({"principal": principal, "host": rng.choice(HOSTS), "actions": asked}).encode()


class _Connection:
    """One keep-alive connection, opened again after an exception."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.port = port
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        try:
            self.conn.request("POST", path, body=body, headers=self.headers)
            response = self.conn.getresponse()
            return response.status, response.read()
        except BaseException:
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            raise


class _Pace:
    """``rate`` steps a second; a step more than a second late is not made up for in a burst."""

    def __init__(self, rate: float, stop: Any) -> None:
        self.period = 1.0 / rate
        self.stop = stop
        self.next_at = time.perf_counter()

    def wait(self) -> None:
        self.next_at += self.period
        pause = self.next_at - time.perf_counter()
        if pause > 0:
            self.stop.wait(pause)
        elif pause < -1.0:
            self.next_at = time.perf_counter()


def ask(
    name: str, port: int, table: Grants, teams: int, seed: int, rate: float, stop: Any, queue: Any
) -> None:
    """A client: ``rate`` requests a second until ``stop`` is set, every tenth a batch of
    :data:`BATCH` actions, the others single decisions."""
    asker = Asker(table, teams, seed)
    connection = _Connection(port)
    pace = _Pace(rate, stop)
    report, flushed, i = Report(name), time.monotonic(), 0
    while not stop.is_set():
        actions = BATCH if i % 10 == 9 else 1
        body = asker.body(actions)
        at = time.time()
        started = time.perf_counter()
        try:
            status, answer = connection.post("/v1/authorize", body)
            ms = (time.perf_counter() - started) * 1000
            if 200 <= status < 300:
                report.samples.append(Sample(at, ms, actions, answer.count(b'"DENIED"')))
            else:
                report.failures.append(Failure(at, f"/v1/authorize answered {status}: {answer[:200]!r}"))
        except Exception as exc:
            report.failures.append(Failure(at, f"/v1/authorize: {exc!r}"))
        i += 1
        if time.monotonic() - flushed >= 1.0:
            queue.put(report)
            report, flushed = Report(name), time.monotonic()
        pace.wait()
    report.last = True
    queue.put(report)


def write(port: int, token: str, table: Grants, rate: float, stop: Any, queue: Any) -> None:
    """The writer: ``rate`` changes a second through the admin API until ``stop`` is set, each
    acknowledged by the log: creates of topic ALTER bindings of the hot principals on names
    they are asked about (ALTER: no prefilled binding has it, so a create always adds one and
    a delete never removes a prefilled one), each deleted again :data:`LIVE_WRITES` changes
    later.  A create that wrote no record, or a delete that did not delete exactly its one
    binding, is an error."""
    rng = random.Random(5)
    hot = table[: max(1, len(table) // 20)]
    connection = _Connection(port, token)
    pace = _Pace(rate, stop)
    live: deque[dict[str, str]] = deque()
    keys: set[tuple[str, str]] = set()
    report, flushed = Report("writer"), time.monotonic()
    while not stop.is_set():
        at = time.time()
        if len(live) >= LIVE_WRITES:
            binding = live.popleft()
            keys.discard((binding["principal"], binding["resourceName"]))
            path, body = "/v1/acls/delete", {"filters": [binding]}
        else:
            principal, granted = rng.choice(hot)
            name = rng.choice(granted)[2]
            if (principal, name) in keys:
                continue
            binding = {
                "resourceType": "TOPIC", "resourceName": name, "patternType": "LITERAL",
                "principal": principal, "host": "*", "operation": "ALTER", "permissionType": "ALLOW",
            }  # fmt: skip
            live.append(binding)
            keys.add((principal, name))
            path, body = "/v1/acls", {"bindings": [binding]}
        started = time.perf_counter()
        try:
            status, answer = connection.post(path, json.dumps(body).encode())
            ms = (time.perf_counter() - started) * 1000
            wrong = write_error(path, status, answer)
            if wrong is None:
                report.samples.append(Sample(at, ms, 0, 0))
            else:
                report.failures.append(Failure(at, wrong))
        except Exception as exc:
            report.failures.append(Failure(at, f"{path}: {exc!r}"))
        if time.monotonic() - flushed >= 1.0:
            queue.put(report)
            report, flushed = Report("writer"), time.monotonic()
        pace.wait()
    report.last = True
    queue.put(report)


def write_error(path: str, status: int, answer: bytes) -> str | None:
    """What is wrong with a write's answer, or None."""
    if not 200 <= status < 300:
        return f"{path} answered {status}: {answer[:200]!r}"
    parsed = json.loads(answer)
    result = parsed["results"][0]
    if result.get("error") is not None:
        return f"{path}: {result['error']}"
    if path == "/v1/acls" and parsed.get("recordsWritten") != 1:
        return f"{path}: the create wrote {parsed.get('recordsWritten')} records, not 1"
    if path == "/v1/acls/delete" and len(result["deleted"]) != 1:
        return f"{path}: deleted {len(result['deleted'])} bindings, not the 1 created"
    return None
