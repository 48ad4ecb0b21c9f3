"""The realistic broker workload's shape, and the reading of the sidecar's latency histogram."""

from __future__ import annotations

import itertools
import math
import random

from bench._broker_figures import SidecarScrape
from bench._broker_workload import (
    APPS,
    QUARANTINED_TEAMS,
    TEAMS,
    TOPICS_PER_APP,
    Traffic,
    bindings,
    changes,
)


def _key(binding: dict[str, str]) -> tuple[str, ...]:
    return tuple(binding.values())


def test_the_bindings_name_every_principal_and_topic_once_each() -> None:
    base = bindings()
    keys = [_key(b) for b in base]
    assert len(keys) == len(set(keys))
    literal_topics = {b["resourceName"] for b in base
                      if b["patternType"] == "LITERAL" and b["resourceName"] != "*"}  # fmt: skip
    assert len(literal_topics) == TEAMS * APPS * TOPICS_PER_APP == 100_000
    principals = {b["principal"] for b in base} - {"User:*"}
    assert len(principals) == TEAMS * APPS == 10_000
    patterns = {(b["patternType"], b["resourceName"] == "*", b["permissionType"]) for b in base}
    assert ("PREFIXED", False, "DENY") in patterns
    assert ("LITERAL", True, "DENY") in patterns  # DENY entries on the wildcard topic


def _allowed_write(base: list[dict[str, str]], who: str, topic: str) -> bool:
    """Kafka's rule for WRITE, on topic patterns only (enough for this workload's ACLs)."""

    def matches(b: dict[str, str]) -> bool:
        if b["principal"] not in (who, "User:*") or b["operation"] not in ("WRITE", "ALL"):
            return False
        name = b["resourceName"]
        if b["patternType"] == "PREFIXED":
            return topic.startswith(name)
        return name in ("*", topic)

    found = [b for b in base if matches(b)]
    return any(b["permissionType"] == "ALLOW" for b in found) and not any(
        b["permissionType"] == "DENY" for b in found
    )


def test_every_producing_principal_may_write_to_each_of_its_topics() -> None:
    base = bindings()
    traffic = Traffic.draw(15, random.Random(10_000))
    assert len(traffic.writable) == 30
    for who, topics in traffic.writable.items():
        for topic in topics:
            assert _allowed_write(base, who, topic), (who, topic)
    teams = {int(who.split("-")[0].removeprefix("User:t")) for who in traffic.writable}
    assert min(teams) >= QUARANTINED_TEAMS


def test_requests_are_drawn_from_the_writable_pairs() -> None:
    traffic = Traffic.draw(5, random.Random(1))
    for who, topic in traffic.requests(500, random.Random(2)):
        assert topic in traffic.writable[who]


def test_changes_delete_only_what_they_created_and_never_deny_a_producer() -> None:
    base = bindings()
    traffic = Traffic.draw(15, random.Random(10_000))
    base_keys = {_key(b) for b in base}
    live: set[tuple[str, ...]] = set()
    stream = changes(traffic, base, random.Random(20), live=100)
    for kind, binding in itertools.islice(stream, 3_000):
        key = _key(binding)
        assert key not in base_keys
        if kind == "create":
            assert key not in live
            live.add(key)
            if binding["permissionType"] == "DENY":
                assert binding["principal"] not in traffic.writable
        else:
            live.remove(key)
        assert len(live) <= 100
    busy = set(traffic.topics)
    names = [b["resourceName"] for kind, b in itertools.islice(
        changes(traffic, base, random.Random(20)), 1_000) if kind == "create"]  # fmt: skip
    assert sum(name in busy for name in names) > len(names) / 10


def test_the_same_seed_gives_the_same_changes_to_both_brokers() -> None:
    base = bindings()
    traffic = Traffic.draw(15, random.Random(10_000))
    one = list(itertools.islice(changes(traffic, base, random.Random(20)), 500))
    two = list(itertools.islice(changes(Traffic(traffic.writable), base, random.Random(20)), 500))
    assert one == two


def _scrape(counts: list[float]) -> SidecarScrape:
    bounds = [0.001, 0.002, 0.005, math.inf]
    return SidecarScrape(counts[-1], counts[-1], 0.001 * counts[-1], tuple(zip(bounds, counts, strict=True)))


def test_quantile_interpolates_within_the_bucket_like_histogram_quantile() -> None:
    after = _scrape([50, 90, 100, 100])
    before = _scrape([0, 0, 0, 0])
    grown = after.since(before)
    assert grown.quantile(0.5) == 0.001
    assert math.isclose(grown.quantile(0.7), 0.0015)
    assert math.isclose(grown.quantile(0.95), 0.0035)
    assert math.isclose(after.since(_scrape([50, 50, 50, 50])).quantile(0.5), 0.001625)
    assert math.isnan(before.since(before).quantile(0.99))
    assert math.isclose(grown.seconds, 0.1)


def test_quantile_in_the_inf_bucket_is_the_highest_finite_bound() -> None:
    assert _scrape([0, 0, 0, 10]).quantile(0.99) == 0.005
