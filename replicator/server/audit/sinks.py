"""The audit log as a sender process opens it: the node describes it, the sender opens it.

A sink is what the sender appends events to (:class:`AuditSink`, the ``append`` of a change
log).  Each opener here is a picklable :class:`AuditSinkOpener`, handed to the sender process at
its start (:mod:`replicator.server.audit.sender`), with everything the sink needs: the embedded
log's directory, or the Kafka topic and how to connect to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from store.log import EmbeddedChangeLog, KafkaChangeLog, KafkaLogSettings
from store.log.client_properties import KafkaClientProperties


class AuditSink(Protocol):
    """Where audit events go: the ``append`` of a :class:`~store.log.base.ChangeLog`."""

    def append(
        self, records: Sequence[tuple[bytes, bytes | None]], *, timeout: float = 10.0
    ) -> list[int]: ...


class ClosableAuditSink(AuditSink, Protocol):
    def close(self) -> None: ...


@runtime_checkable
class AuditSinkOpener(Protocol):
    """A way to open the sink in another process: picklable, and what it opens is closed there
    (the openers below)."""

    def open_sink(self) -> ClosableAuditSink: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddedAuditLog:
    """The embedded audit log in ``<data dir>/audit``.

    Opened with ``cleanup.policy=delete``, as the audit topic on Kafka: events are never
    compacted, so the log keeps no index of them by key (which every append would pay for)
    and stores each of the sender's appends as one row (:mod:`store.log.record_batches`).
    An audit log of an earlier version (the index, one row an event) is converted when the
    sender first opens it: the index is dropped (once, under the log's write lock: on a large
    log it takes a while, during which the events wait in the spool); its rows are not
    touched.
    """

    data_dir: Path

    def open_sink(self) -> EmbeddedChangeLog:
        return EmbeddedChangeLog(self.data_dir, cleanup_policy="delete")


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaAuditTopic:
    """The audit topic next to the ACL topic (created by the node before the sender starts)."""

    bootstrap_servers: str
    topic: str
    log_settings: KafkaLogSettings
    client: KafkaClientProperties | None

    def open_sink(self) -> KafkaChangeLog:
        return KafkaChangeLog(
            self.bootstrap_servers, self.topic, self.log_settings, create_topic=False,
            client=self.client,
        )  # fmt: skip
