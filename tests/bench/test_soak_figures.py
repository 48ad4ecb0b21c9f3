"""The soak benchmark's arithmetic and its clients' table, on values worked out by hand."""

from __future__ import annotations

import math

import pytest

from bench._soak_figures import (
    Latencies,
    Minute,
    audit_missing,
    growth_window,
    interval_of,
    p99_drift,
    rss_growth_pct,
)
from bench._soak_load import grants, write_error
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

pytestmark = pytest.mark.unit


def minute(number: int, single_p99: float, **changes: float) -> Minute:
    figures: dict[str, float] = {"rss_bytes": 512_300_000, "decisions": 100_000, "node_cpu_s": 6.0}
    figures.update(changes)
    return Minute(
        number=number, rss_bytes=int(figures["rss_bytes"]), open_files=12, fds=31, threads=14,
        spool_bytes=4_240_000, backlog=7, decisions=int(figures["decisions"]),
        singles=Latencies(1000, 0.5, single_p99, 9.0), batches=Latencies(100, 2.0, 8.0, 20.0),
        writes=6000, errors=0, node_cpu_s=figures["node_cpu_s"], cache_hit_rate=0.45, load="1.00 0.90 0.80",
    )  # fmt: skip


def test_percentiles_of_a_minute_are_nearest_ranks() -> None:
    # 2,000 samples 1..2000 ms in reverse: ranks ceil(0.5·2000) = 1000, ceil(0.99·2000) = 1980,
    # ceil(0.999·2000) = 1998.
    figures = Latencies.of([float(v) for v in range(2000, 0, -1)])
    assert (figures.count, figures.p50, figures.p99, figures.p999) == (2000, 1000.0, 1980.0, 1998.0)


def test_a_minute_without_requests_has_no_percentiles() -> None:
    figures = Latencies.of([])
    assert figures.count == 0
    assert math.isnan(figures.p99)


@pytest.mark.parametrize(
    ("minutes", "window"), [(30, 20), (45, 20), (60, 20), (3, 2), (4, 2), (2, 1), (1, 1)]
)
def test_the_growth_window_is_20_minutes_or_two_thirds_of_a_shorter_run(minutes: int, window: int) -> None:
    assert growth_window(minutes) == window


def test_no_growth_window_without_a_minute() -> None:
    with pytest.raises(ValueError, match="0 minutes"):
        growth_window(0)


def test_rss_growth_of_a_short_run_counts_from_a_third_in() -> None:
    # 3 minutes: the window is the last 2, from the end of minute 1 (200) to the end (210).
    assert rss_growth_pct([100, 200, 205, 210]) == pytest.approx(5.0)


def test_rss_growth_of_30_minutes_ignores_the_first_10() -> None:
    # The end of minute 10 holds 1000; the end 1040: 4 %, whatever the first 10 minutes did.
    rss = [500] * 10 + [1000] + [1020] * 19 + [1040]
    assert len(rss) == 31
    assert rss_growth_pct(rss) == pytest.approx(4.0)


def test_p99_drift_is_the_last_minutes_p99_over_the_first() -> None:
    assert p99_drift([minute(1, 2.0), minute(2, 9.0), minute(3, 2.5)]) == pytest.approx(1.25)


def test_audit_events_missing() -> None:
    assert audit_missing(denials_answered=10, denials_logged=10, unshipped=0) == 0
    assert audit_missing(denials_answered=10, denials_logged=7, unshipped=0) == 3
    assert audit_missing(denials_answered=10, denials_logged=10, unshipped=4) == 4
    # A request that timed out at the client but was answered and audited by the node.
    assert audit_missing(denials_answered=10, denials_logged=11, unshipped=0) == 0


def test_the_minute_line_names_each_figure() -> None:
    line = minute(7, 2.0).line()
    for part in (
        "minute 7:", "rss 512.3 MB", "open files 12 (fds 31)", "threads 14", "spool 4.24 MB (7 events",
        "decisions 100000", "p99 2.00", "p999 9.00", "writes 6000", "errors 0",
        "60.0 us/decision", "cache hits 45%", "load 1.00 0.90 0.80",
    ):  # fmt: skip
        assert part in line, (part, line)


def test_the_clients_ask_about_what_allow_bindings_grant() -> None:
    def binding(name: str, pattern: PatternType, principal: str, op: AclOperation, allow: bool) -> AclBinding:
        permission = AclPermissionType.ALLOW if allow else AclPermissionType.DENY
        return AclBinding.of(ResourceType.TOPIC, name, pattern, principal, "*", op, permission)

    table = grants(
        [
            binding("team1.app2.events", PatternType.LITERAL, "User:a", AclOperation.WRITE, True),
            binding("team1.", PatternType.PREFIXED, "User:a", AclOperation.ALL, True),
            binding("team2.app1.events", PatternType.LITERAL, "User:a", AclOperation.READ, False),
            binding("*", PatternType.LITERAL, "User:*", AclOperation.DESCRIBE, True),
            binding("team3.app3.events", PatternType.LITERAL, "User:b", AclOperation.READ, False),
        ],
        principals=10,
        seed=1,
    )
    assert table == [("User:a", [("TOPIC", "WRITE", "team1.app2.events"), ("TOPIC", "READ", "team1.events")])]


def test_requests_are_filed_under_the_interval_they_were_sent_in() -> None:
    start, length = 1000.0, 60.0
    assert interval_of(940.0, start, length) == 0  # the warm-up
    assert interval_of(999.999, start, length) == 0
    assert interval_of(1000.0, start, length) == 1
    assert interval_of(1059.999, start, length) == 1
    assert interval_of(1060.0, start, length) == 2
    assert interval_of(2800.5, start, length) == 31  # after the 30th: the stop's last requests
    assert interval_of(1044.9, start, 45.0) == 1
    assert interval_of(1045.0, start, 45.0) == 2


CREATED = b'{"results": [{"binding": {}, "error": null}], "offset": 7, "recordsWritten": 1}'
DELETED = b'{"results": [{"filter": {}, "deleted": [{}], "error": null}], "offset": 8, "recordsWritten": 1}'


def test_a_write_the_log_carried_out_is_no_error() -> None:
    assert write_error("/v1/acls", 200, CREATED) is None
    assert write_error("/v1/acls/delete", 200, DELETED) is None


def test_a_write_that_did_not_do_what_was_asked_is_an_error() -> None:
    assert "answered 503" in str(write_error("/v1/acls", 503, b'{"error": "LogUnavailable"}'))
    there = CREATED.replace(b'"recordsWritten": 1', b'"recordsWritten": 0')
    assert "wrote 0 records" in str(write_error("/v1/acls", 200, there))
    missed = DELETED.replace(b'"deleted": [{}]', b'"deleted": []')
    assert "deleted 0 bindings" in str(write_error("/v1/acls/delete", 200, missed))
    refused = CREATED.replace(b'"error": null', b'"error": {"error": "InvalidRequest", "message": "no"}')
    assert "InvalidRequest" in str(write_error("/v1/acls", 200, refused))
