"""The times history commands accept (``--at``, ``--from``, ``--to``), as epoch milliseconds.

A time ``T`` is either

* epoch milliseconds: a bare non-negative integer (``1763906400000``), the unit of Kafka's
  record timestamps; or
* ISO-8601: a date (``2026-11-23``, its midnight), or a date and time with or without seconds
  and fractions (``2026-11-23T14:00``, ``2026-11-23 14:00:05.250``), with a zone
  (``Z``, ``+02:00``) or without one, which reads as UTC so that an answer never depends on
  the zone of the machine that asks.

Pure: no clock, no environment.  :func:`format_time` is the inverse used to print times.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Final

ACCEPTED_FORMS: Final = (
    "epoch milliseconds (e.g. 1763906400000) or ISO-8601 "
    "(e.g. 2026-11-23, 2026-11-23T14:00, 2026-11-23T14:00:00.250Z, 2026-11-23T16:00+02:00; "
    "no zone means UTC)"
)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_MS: Final = int(
    (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - _EPOCH) / timedelta(milliseconds=1)
)
_INTEGER: Final = re.compile(r"[+-]?\d+")
# What this module reads as ISO-8601: a calendar date, optionally 'T' or one space, a time of
# hours and minutes with optional seconds and fraction, and an optional zone.  Narrower than
# datetime.fromisoformat on purpose: "20261123" must not read as a date (it is epoch ms).
_ISO: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?)?"
    r"(?:Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


class TimeParseError(ValueError):
    """A time that is neither epoch milliseconds nor ISO-8601; names the value and the forms."""

    def __init__(self, value: str, reason: str = "") -> None:
        self.value = value
        detail = f" ({reason})" if reason else ""
        super().__init__(f"time {value!r} is not a time{detail}; use {ACCEPTED_FORMS}")

    @property
    def message(self) -> str:
        return str(self)


def parse_time(text: str) -> int:
    """``text`` as epoch milliseconds (UTC); :class:`TimeParseError` if it is not a time."""
    value = text.strip()
    if _INTEGER.fullmatch(value):
        ms = int(value)
        if ms < 0 or ms > _MAX_MS:
            raise TimeParseError(text, f"epoch milliseconds must be between 0 and {_MAX_MS}")
        return ms
    if not _ISO.fullmatch(value):
        raise TimeParseError(text)
    iso = value.replace(",", ".")
    if iso[-1] in "Zz":
        iso = iso[:-1] + "+00:00"
    iso = _pad_fraction(iso)
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError as exc:
        raise TimeParseError(text, str(exc)) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ms = (moment - _EPOCH) // timedelta(milliseconds=1)
    if ms < 0:
        raise TimeParseError(text, "before 1970-01-01T00:00Z, the start of epoch milliseconds")
    return ms


def format_time(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds: ``2026-11-23T14:00:00.000Z``."""
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _pad_fraction(iso: str) -> str:
    """Fractions of 1 to 9 digits as the 6 that ``fromisoformat`` reads (extra digits truncate)."""
    match = re.search(r"\.(\d+)", iso)
    if match is None:
        return iso
    digits = (match.group(1) + "000000")[:6]
    return iso[: match.start(1)] + digits + iso[match.end(1) :]


_SINCE: Final = re.compile(r"(\d+)([smhd])")
_UNIT_MS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def since_arg(text: str, now_ms: int | None = None) -> int:
    """``7d``, ``24h``, ``30m``, ``90s`` before now, or a time :func:`parse_time` reads, as
    epoch milliseconds."""
    match = _SINCE.fullmatch(text.strip())
    if match is None:
        return parse_time(text)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return max(0, now - int(match.group(1)) * _UNIT_MS[match.group(2)])
