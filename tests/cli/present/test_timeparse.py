"""Times on the history command line: epoch ms and ISO-8601, against hand-worked epoch values."""

from __future__ import annotations

import pytest

from cli.present.timeparse import TimeParseError, format_time, parse_time

pytestmark = pytest.mark.unit

# 10**9 seconds after the epoch is 2001-09-09T01:46:40Z; 2000-01-01T00:00Z is 946684800 s.
BILLION_S_MS = 1_000_000_000_000
Y2K_MS = 946_684_800_000
HOUR_MS = 3_600_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("1000000000000", BILLION_S_MS),
        ("  86400000 ", 86_400_000),
        ("2001-09-09T01:46:40Z", BILLION_S_MS),
        ("2001-09-09T01:46:40z", BILLION_S_MS),
        ("2001-09-09T01:46:40", BILLION_S_MS),  # no zone: UTC
        ("2001-09-09 01:46:40", BILLION_S_MS),
        ("2001-09-09T01:46:40.250Z", BILLION_S_MS + 250),
        ("2001-09-09T01:46:40,5Z", BILLION_S_MS + 500),
        ("2001-09-09T01:46:40.123456789Z", BILLION_S_MS + 123),  # sub-ms digits truncate
        ("2001-09-09T01:46Z", BILLION_S_MS - 40_000),
        ("2001-09-09T03:46:40+02:00", BILLION_S_MS),
        ("2001-09-09T03:46:40+0200", BILLION_S_MS),
        ("2001-09-08T20:46:40-05:00", BILLION_S_MS),
        ("2000-01-01", Y2K_MS),  # a date is its midnight, UTC
        ("2000-01-01T00:00+01:00", Y2K_MS - HOUR_MS),
        ("1970-01-01T00:00:00Z", 0),
    ],
)
def test_accepted_forms(text: str, expected: int) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "2001-09-09T25:00Z",  # no hour 25
        "2001-02-30",  # no 30 February
        "2001-9-9",
        "2001-09-09T01",  # hours without minutes
        "-1",  # before the epoch
        "1969-12-31T23:59:59Z",
        "1e12",
        "99999999999999999",  # past year 9999
        "2001-09-09T01:46:40 UTC",
    ],
)
def test_malformed_is_a_typed_error_naming_the_value_and_the_forms(text: str) -> None:
    with pytest.raises(TimeParseError) as caught:
        parse_time(text)
    message = str(caught.value)
    assert repr(text) in message
    assert "epoch milliseconds" in message and "ISO-8601" in message
    assert caught.value.value == text
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("ms", "expected"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (BILLION_S_MS + 7, "2001-09-09T01:46:40.007Z"),
        (Y2K_MS - 1, "1999-12-31T23:59:59.999Z"),
    ],
)
def test_format_time(ms: int, expected: str) -> None:
    assert format_time(ms) == expected
    assert parse_time(expected) == ms
