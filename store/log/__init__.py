"""The change log: one interface (:class:`ChangeLog`), two backends.

* :class:`KafkaChangeLog` - partition 0 of a compacted Kafka topic, for a cluster;
* :class:`EmbeddedChangeLog` - SQLite in WAL mode in a data directory, for a single machine.

The backends are imported when first named (``store.log.KafkaChangeLog``): a command that
only reads client properties (:mod:`store.log.client_properties`) does not pay for
confluent_kafka.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from store.log.base import (
    ChangeLog,
    LogConfigError,
    LogNotCompactedError,
    LogOffsetOutOfRangeError,
    LogRecord,
    LogUnavailableError,
)

if TYPE_CHECKING:
    from store.log.embedded import EmbeddedChangeLog, EmbeddedLogSettings
    from store.log.kafka import KafkaChangeLog, KafkaLogSettings

_BACKENDS = {
    "EmbeddedChangeLog": "store.log.embedded",
    "EmbeddedLogSettings": "store.log.embedded",
    "KafkaChangeLog": "store.log.kafka",
    "KafkaLogSettings": "store.log.kafka",
}


def __getattr__(name: str) -> Any:
    module = _BACKENDS.get(name)
    if module is None:
        raise AttributeError(f"module 'store.log' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ChangeLog",
    "EmbeddedChangeLog",
    "EmbeddedLogSettings",
    "KafkaChangeLog",
    "KafkaLogSettings",
    "LogConfigError",
    "LogNotCompactedError",
    "LogOffsetOutOfRangeError",
    "LogRecord",
    "LogUnavailableError",
]
