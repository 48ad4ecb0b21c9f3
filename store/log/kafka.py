"""The Kafka change log: partition 0 of one compacted topic (confluent-kafka / librdkafka).

Writes use an idempotent producer with ``acks=all``; :meth:`KafkaChangeLog.append` returns the
offsets only after every record's delivery report said the broker stored it.  When the deadline
passes first, the queued and in-flight records are purged and the producer is replaced (a fresh
producer id), so a record of a call that reported failure cannot trail in behind later writes;
a request the broker had already received may still have been stored, which is why the caller
is told the outcome is unknown and why creates and deletes are idempotent.

Reads use a consumer assigned to partition 0 (no group, no commits): the reader owns its
position, as a replica keeps its applied offset next to its state.

Every client (producer, readers, admin) connects with the same
:class:`~store.log.client_properties.KafkaClientProperties`: a SASL or TLS listener is reached
as the operator's client properties file says (``aclstore serve --log-config``).
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.cimpl import NewTopic

from store.log.base import (
    LogConfigError,
    LogOffsetOutOfRangeError,
    LogRecord,
    LogUnavailableError,
)
from store.log.client_properties import KafkaClientProperties

DAY_MS: Final = 24 * 3600 * 1000
PARTITION: Final = 0
_LOCALLY_UNKNOWN: Final = frozenset({KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC})
"""librdkafka's own verdicts on a topic or partition (not the broker's): its metadata says so."""
_log = logging.getLogger("aclstore.log.kafka")


def wait_for_leader(admin: AdminClient, topic: str, timeout: float) -> None:
    """Wait until the broker's metadata shows ``topic``'s partition with a leader.

    CreateTopics is answered once the controller has committed the topic; a broker learns of
    it when it applies that record, a moment later, and until then answers requests about it
    (watermarks, DescribeConfigs) with UNKNOWN_TOPIC_OR_PART.  :class:`LogUnavailableError`
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            remaining = max(0.1, deadline - time.monotonic())
            found = admin.list_topics(topic, timeout=remaining).topics.get(topic)
        except KafkaException:  # metadata not propagated yet: ask again
            found = None
        partitions = {} if found is None or found.error is not None else found.partitions
        if PARTITION in partitions and partitions[PARTITION].leader >= 0:
            return
        time.sleep(0.05)
    raise LogUnavailableError(f"topic {topic!r} has no partition leader after {timeout}s")


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaLogSettings:
    """The topic's and the clients' settings, validated, each in one place.

    ``min_compaction_lag_ms`` is how long every event stays readable before the cleaner may
    remove a superseded one: the history archive and any lagging replica must read within it.
    ``delete_retention_ms`` is how long a tombstone stays after that.
    """

    replication_factor: int = 1
    min_insync_replicas: int = 1
    min_compaction_lag_ms: int = 7 * DAY_MS
    delete_retention_ms: int = DAY_MS
    segment_ms: int = 7 * DAY_MS
    segment_bytes: int = 128 * 1024 * 1024
    min_cleanable_dirty_ratio: float = 0.5
    linger_ms: float = 1.0
    message_timeout_ms: int = 60_000
    fetch_wait_max_ms: int = 50
    reconnect_backoff_max_ms: int = 500
    """The longest wait between two attempts to reach a broker that went away.  librdkafka's
    default (10 s, doubling from 100 ms, with up to 50 % jitter) can leave a replica without
    the log for 15 s after its broker is back; the Java clients' default is 1 s."""
    client_id: str = "aclstore"

    def __post_init__(self) -> None:
        if self.replication_factor < 1:
            raise ValueError(f"replication_factor must be >= 1, got {self.replication_factor}")
        if not 1 <= self.min_insync_replicas <= self.replication_factor:
            raise ValueError(
                f"min_insync_replicas {self.min_insync_replicas} must be between 1 and the "
                f"replication factor {self.replication_factor}"
            )
        for name in ("min_compaction_lag_ms", "delete_retention_ms", "segment_ms", "segment_bytes",
                     "reconnect_backoff_max_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if not 0.0 < self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError("min_cleanable_dirty_ratio must be in (0, 1]")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> KafkaLogSettings:
        """Build from ``{"min.insync.replicas": "2", ...}`` (dots or underscores).

        Unknown keys are refused, naming the known ones.
        """
        known = {f.name for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for raw_key, raw in values.items():
            key = raw_key.replace(".", "_")
            if key not in known:
                raise LogConfigError(
                    f"unknown change-log setting {raw_key!r}; known: {sorted(known)}"
                )
            kind = type(getattr(cls(), key))
            kwargs[key] = kind(raw)
        return cls(**kwargs)

    def topic_config(self) -> dict[str, str]:
        return {
            "cleanup.policy": "compact",
            "min.insync.replicas": str(self.min_insync_replicas),
            "min.compaction.lag.ms": str(self.min_compaction_lag_ms),
            "delete.retention.ms": str(self.delete_retention_ms),
            "segment.ms": str(self.segment_ms),
            "segment.bytes": str(self.segment_bytes),
            "min.cleanable.dirty.ratio": str(self.min_cleanable_dirty_ratio),
        }

    def _common_config(
        self, bootstrap_servers: str, client: KafkaClientProperties | None, role: str
    ) -> dict[str, Any]:
        """What every client of the log shares: where and how it connects, and its log lines."""
        return {
            **(client.librdkafka() if client else {}),
            "bootstrap.servers": bootstrap_servers,
            "client.id": f"{self.client_id}-{role}",
            "reconnect.backoff.max.ms": self.reconnect_backoff_max_ms,
            "logger": _log,  # librdkafka's log lines go to Python logging
        }

    def producer_config(
        self, bootstrap_servers: str, client: KafkaClientProperties | None = None
    ) -> dict[str, Any]:
        return {
            **self._common_config(bootstrap_servers, client, "writer"),
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": self.linger_ms,
            "message.timeout.ms": self.message_timeout_ms,
        }

    def consumer_config(
        self, bootstrap_servers: str, client: KafkaClientProperties | None = None
    ) -> dict[str, Any]:
        return {
            **self._common_config(bootstrap_servers, client, "reader"),
            "group.id": f"aclstore-unused-{uuid.uuid4().hex}",  # required; never joined
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            # A fetch position the log no longer has must be loud, never a silent jump: the
            # reader maps the resulting error to LogOffsetOutOfRangeError.
            "auto.offset.reset": "error",
            "fetch.wait.max.ms": self.fetch_wait_max_ms,
        }

    def admin_config(
        self, bootstrap_servers: str, client: KafkaClientProperties | None = None
    ) -> dict[str, Any]:
        return self._common_config(bootstrap_servers, client, "admin")


class KafkaChangeLog:
    """A :class:`~store.log.base.ChangeLog` on ``topic`` partition 0, created if missing.

    ``client`` is how the clients connect (SASL, TLS); none: PLAINTEXT.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        settings: KafkaLogSettings | None = None,
        *,
        create_topic: bool = True,
        admin_timeout: float = 30.0,
        client: KafkaClientProperties | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.settings = settings or KafkaLogSettings()
        self.client = client
        self._partition = TopicPartition(topic, PARTITION)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._offsets_lock = threading.Lock()
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._offsets_client: Consumer | None = None
        self._position: int | None = None
        if create_topic:
            self.ensure_topic(timeout=admin_timeout)

    def __repr__(self) -> str:
        return f"KafkaChangeLog({self.bootstrap_servers!r}, {self.topic!r})"

    def __enter__(self) -> KafkaChangeLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- topic ------------------------------------------------------------------------------

    def ensure_topic(self, *, timeout: float = 30.0) -> None:
        """Create the single-partition compacted topic, or check an existing one is such."""
        admin = AdminClient(self.settings.admin_config(self.bootstrap_servers, self.client))
        new = NewTopic(
            self.topic,
            num_partitions=1,
            replication_factor=self.settings.replication_factor,
            config=self.settings.topic_config(),
        )
        try:
            admin.create_topics([new], request_timeout=timeout)[self.topic].result(timeout=timeout)
            wait_for_leader(admin, self.topic, timeout)
            return
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if not (
                isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS
            ):
                raise LogUnavailableError(
                    f"could not create the change-log topic {self.topic!r} at "
                    f"{self.bootstrap_servers}: {exc}"
                ) from exc
        except Exception as exc:  # concurrent.futures.TimeoutError and friends
            raise LogUnavailableError(
                f"could not create the change-log topic {self.topic!r} at {self.bootstrap_servers} "
                f"within {timeout}s: {exc!r}"
            ) from exc
        self._check_existing_topic(admin, timeout)

    def _check_existing_topic(self, admin: AdminClient, timeout: float) -> None:
        try:
            metadata = admin.list_topics(self.topic, timeout=timeout)
            resource = ConfigResource(ConfigResource.Type.TOPIC, self.topic)
            configs = admin.describe_configs([resource])[resource].result(timeout=timeout)
        except Exception as exc:
            raise LogUnavailableError(f"could not describe topic {self.topic!r}: {exc!r}") from exc
        partitions = len(metadata.topics[self.topic].partitions)
        policy = configs["cleanup.policy"].value
        if partitions != 1 or policy != "compact":
            raise LogConfigError(
                f"topic {self.topic!r} exists with {partitions} partitions and "
                f"cleanup.policy={policy}; the change log needs exactly 1 partition and "
                "cleanup.policy=compact (a total order, and no deletion by time): use another "
                "topic name or recreate it"
            )

    # --- writing ----------------------------------------------------------------------------

    def acquire_producer_id(self, *, timeout: float = 30.0) -> bool:
        """Make the writer now and have the broker hand out a producer id before any append.

        A broker answers InitProducerId from a block of ids it asks the controller for, over
        the same connection on which it forwards CreateAcls and DeleteAcls to the controller
        (KRaft, KIP-590).  When the controller's authorizer is aclstore's plugin, such a
        forwarded request waits for this log's write; a write whose producer still needs an id
        from a broker without a block would wait behind that very request until the append's
        deadline.  Done before the node is ready (so before the brokers open their client
        listeners), the block is fetched while nothing else waits on it.  False, and a warning,
        when no id came within ``timeout``: the first write then waits for it.
        """
        assigned = threading.Event()

        def stats(text: str) -> None:
            if json.loads(text).get("eos", {}).get("idemp_state") == "Assigned":
                assigned.set()

        # A short-lived producer whose statistics say when its id is assigned (the writer's own
        # statistics would queue up between appends); the writer then gets its id from the
        # block this one made the broker fetch.
        config = self.settings.producer_config(self.bootstrap_servers, self.client)
        probe = Producer({**config, "statistics.interval.ms": 50, "stats_cb": stats})
        deadline = time.monotonic() + timeout
        while not assigned.is_set() and time.monotonic() < deadline:
            probe.poll(0.05)
        probe.flush(0)
        with self._write_lock:
            self._writer()
        if not assigned.is_set():
            _log.warning(
                "%s: no producer id within %.0f s; the first write will wait for one", self, timeout
            )
        return assigned.is_set()

    def _writer(self) -> Producer:
        if self._producer is None:
            self._producer = Producer(self.settings.producer_config(self.bootstrap_servers, self.client))
        return self._producer

    def append(
        self, records: Sequence[tuple[bytes, bytes | None]], *, timeout: float = 10.0
    ) -> list[int]:
        """Produce and wait for every delivery report; offsets only if all were acknowledged."""
        if not records:
            return []
        deadline = time.monotonic() + timeout
        offsets: list[int] = [-1] * len(records)
        errors: list[str] = []

        def delivered(index: int, err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                offsets[index] = msg.offset()

        with self._write_lock:
            producer = self._writer()
            try:
                for index, (key, value) in enumerate(records):
                    self._produce(producer, key, value, index, delivered, deadline)
                remaining = producer.flush(max(0.0, deadline - time.monotonic()))
            except (KafkaException, BufferError) as exc:
                errors.append(repr(exc))
                remaining = len(producer)
            acked = sum(1 for offset in offsets if offset >= 0)
            if remaining or errors or acked != len(records):
                self._discard_producer()
                reason = errors[0] if errors else f"no acknowledgement within {timeout}s"
                raise LogUnavailableError(
                    f"{self} acknowledged {acked} of {len(records)} records ({reason}); the "
                    "outcome of the others is unknown. Check the broker, then retry"
                )
        return offsets

    def _produce(
        self,
        producer: Producer,
        key: bytes,
        value: bytes | None,
        index: int,
        delivered: Any,
        deadline: float,
    ) -> None:
        while True:
            try:
                producer.produce(
                    self.topic,
                    value=value,
                    key=key,
                    partition=PARTITION,
                    on_delivery=functools.partial(delivered, index),
                )
                return
            except BufferError:  # the local queue is full: serve delivery reports, then retry
                if time.monotonic() >= deadline:
                    raise
                producer.poll(0.01)

    def _discard_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.purge(in_queue=True, in_flight=True, blocking=False)
            producer.poll(0)

    # --- reading ----------------------------------------------------------------------------

    def _reader(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(self.settings.consumer_config(self.bootstrap_servers, self.client))
        return self._consumer

    def read(
        self, from_offset: int, *, max_records: int = 10_000, timeout: float = 1.0
    ) -> list[LogRecord]:
        """Wait up to ``timeout`` for the first record, then return what is already fetched."""
        if from_offset < 0:
            raise ValueError(f"from_offset must be >= 0, got {from_offset}")
        with self._read_lock:
            consumer = self._reader()
            if from_offset != self._position:
                low, high = self.watermarks(timeout=max(timeout, 5.0))
                if from_offset > high:
                    raise LogOffsetOutOfRangeError(
                        f"offset {from_offset} is beyond the end of {self} (next offset {high}): "
                        "the topic was recreated or is another log; rebuild from its start"
                    )
                # Offsets below the log start are gone like compacted ones: start at the log
                # start (callers that must not miss them compare with watermarks first).
                consumer.assign([TopicPartition(self.topic, PARTITION, max(from_offset, low))])
                self._position = from_offset
            out: list[LogRecord] = []
            deadline = time.monotonic() + timeout
            while len(out) < max_records:
                if out:
                    batch = consumer.consume(num_messages=max_records - len(out), timeout=0)
                    if not batch:
                        break
                else:
                    first = consumer.poll(max(0.0, deadline - time.monotonic()))
                    if first is None:
                        break
                    batch = [first]
                for msg in batch:
                    self._take(msg, from_offset, out)
                if not out and time.monotonic() >= deadline:
                    break
            if out:
                self._position = out[-1].offset + 1
            return out

    def _take(self, msg: Any, from_offset: int, out: list[LogRecord]) -> None:
        error = msg.error()
        if error is not None:
            if error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                self._position = None  # reposition on the next read
                raise LogOffsetOutOfRangeError(
                    f"{self} no longer has the offsets this reader was fetching ({error}): the "
                    "topic was recreated or truncated; rebuild from the compacted log"
                )
            if error.fatal():
                raise LogUnavailableError(f"{self} reader failed: {error}")
            _log.debug("transient read error on %s: %s", self.topic, error)
            return
        offset = msg.offset()
        if offset >= from_offset:
            key = msg.key()
            out.append(
                LogRecord(offset, b"" if key is None else key, msg.value(), msg.timestamp()[1])
            )

    def _offsets(self) -> Consumer:
        """A client that is never assigned a partition, only asked for watermarks (the caller
        holds ``_offsets_lock``).

        The reader's own connection would answer a ListOffsets only after its pending long-poll
        Fetch (a broker answers one request per connection at a time): up to
        ``fetch.wait.max.ms`` of extra latency on every catch-up.
        """
        if self._offsets_client is None:
            config = self.settings.consumer_config(self.bootstrap_servers, self.client)
            self._offsets_client = Consumer(config)
        return self._offsets_client

    def watermarks(self, *, timeout: float = 10.0) -> tuple[int, int]:
        """Ask the partition leader (never a cached value), retrying until ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            failure: KafkaException | None = None
            with self._offsets_lock:  # one request at a time, so that the client can be replaced
                client = self._offsets()
                try:
                    result = client.get_watermark_offsets(
                        self._partition, timeout=max(0.01, remaining), cached=False
                    )
                except KafkaException as exc:
                    failure = exc
                    error = exc.args[0] if exc.args else None
                    if isinstance(error, KafkaError) and error.code() in _LOCALLY_UNKNOWN:
                        # This client is never assigned the partition, so librdkafka does not
                        # refresh the topic's metadata for it: after a restarting broker
                        # answered once without the partition, it kept saying "Unknown
                        # partition" (over 20 s in the tests), even after list_topics.  A new
                        # client starts from the broker's metadata as it is now.
                        self._offsets_client = None
                        client.close()
            if failure is not None:
                # Right after a topic is created or a broker restarts, the leader may not be
                # known yet (and librdkafka does not flag every such error retriable): retry.
                if time.monotonic() + 0.05 >= deadline:
                    raise LogUnavailableError(
                        f"{self} did not report its watermarks within {timeout}s: {failure}"
                    ) from failure
                time.sleep(0.05)
                continue
            if result is None:
                raise LogUnavailableError(f"{self} did not report its watermarks within {timeout}s")
            low, high = result
            return int(low), int(high)

    def close(self) -> None:
        with self._write_lock:
            if self._producer is not None:
                self._producer.flush(5.0)
                self._producer = None
        with self._read_lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
        with self._offsets_lock:
            if self._offsets_client is not None:
                self._offsets_client.close()
                self._offsets_client = None
