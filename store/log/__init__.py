"""The change log: one interface (:class:`ChangeLog`), two backends.

* :class:`KafkaChangeLog` - partition 0 of a compacted Kafka topic, for a cluster;
* :class:`EmbeddedChangeLog` - SQLite in WAL mode in a data directory, for a single machine.
"""

from store.log.base import (
    ChangeLog,
    LogConfigError,
    LogOffsetOutOfRangeError,
    LogRecord,
    LogUnavailableError,
)
from store.log.embedded import EmbeddedChangeLog, EmbeddedLogSettings
from store.log.kafka import KafkaChangeLog, KafkaLogSettings

__all__ = [
    "ChangeLog",
    "EmbeddedChangeLog",
    "EmbeddedLogSettings",
    "KafkaChangeLog",
    "KafkaLogSettings",
    "LogConfigError",
    "LogOffsetOutOfRangeError",
    "LogRecord",
    "LogUnavailableError",
]
