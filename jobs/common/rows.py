"""An event as a row: the columns every job decodes the log into, and the row forms.

The decoders (:mod:`jobs.common.worker`, :mod:`jobs.common.spark_decode`) give each record of
the log as an :data:`EVENTS_SCHEMA` row (plus the fold's refusal), the archive appends those
rows to its ``events`` table as they are, and the downgrade watch reads them back as
:class:`~jobs.common.events.HistoryEvent` values (:func:`event_of_row`).  A binding takes seven
columns (:data:`BINDING_FIELDS`, Kafka's names in the conformance vectors' order); a setting
leaves them null and fills ``configName``.  Rows are plain tuples in schema order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from jobs.common.events import HistoryEvent
from store.acl import AclBinding, parse_fields

BINDING_FIELDS: Final = (
    "resourceType", "name", "patternType", "principal", "host", "operation", "permission",
)  # fmt: skip
BINDING_COLUMNS: Final = (
    "resourceType STRING, name STRING, patternType STRING, principal STRING, host STRING, "
    "operation STRING, permission STRING"
)
""":data:`BINDING_FIELDS` with their Spark types."""
EVENTS_SCHEMA: Final = (
    f"offset BIGINT, timeMs BIGINT, day STRING, type STRING, {BINDING_COLUMNS}, "
    "configName STRING, configValue STRING, actor STRING, requestId STRING"
)
"""An event's columns: its offset, log time and that time's UTC day, its type, the binding or
the setting it changes, and who asked for it."""


def day_of(time_ms: int) -> str:
    return datetime.fromtimestamp(time_ms / 1000, UTC).strftime("%Y-%m-%d")


def binding_fields(binding: AclBinding | None) -> tuple[str | None, ...]:
    """The seven binding columns of ``binding``; nulls for none."""
    return (None,) * 7 if binding is None else binding.fields()


def binding_at(row: Sequence[Any], start: int) -> AclBinding | None:
    """The binding of the seven columns of ``row`` from ``start`` (None when they are null)."""
    fields = row[start : start + 7]
    return None if fields[0] is None else AclBinding.of(*parse_fields(fields))


def event_row(event: HistoryEvent) -> tuple[Any, ...]:
    return (
        event.offset,
        event.time_ms,
        day_of(event.time_ms),
        event.type,
        *binding_fields(event.binding),
        event.config_name,
        event.config_value,
        event.actor,
        event.request_id,
    )


def event_of_row(row: Sequence[Any]) -> HistoryEvent:
    """The inverse of :func:`event_row` (a Spark ``Row`` in schema order works too)."""
    return HistoryEvent(
        offset=row[0],
        time_ms=row[1],
        type=row[3],
        binding=binding_at(row, 4),
        config_name=row[11],
        config_value=row[12],
        actor=row[13],
        request_id=row[14],
    )
