"""``--replay-since``: durations before now, or a time."""

from __future__ import annotations

import pytest

from cli.present.timeparse import TimeParseError, since_arg

pytestmark = pytest.mark.unit
NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [("7d", NOW - 7 * 86_400_000), ("24h", NOW - 86_400_000), ("30m", NOW - 1_800_000),
     ("90s", NOW - 90_000), ("1970-01-01T00:00:01Z", 1000), ("5", 5)],
)  # fmt: skip
def test_since(text: str, ms: int) -> None:
    assert since_arg(text, now_ms=NOW) == ms


def test_not_a_time() -> None:
    with pytest.raises(TimeParseError):
        since_arg("7 days", now_ms=NOW)
