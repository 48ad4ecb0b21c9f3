"""Filling a change-log topic fast for a benchmark: encoded events through a raw batched producer.

The store's own admin API writes one acknowledged request at a time; a benchmark that needs
millions of events in the log before it measures anything writes them here instead (Avro,
``acks=all``, lz4, large batches), and fails loudly if any record was not delivered.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from store.codec import codec_named, event_key
from store.events import ChangeEvent


def produce_events(
    bootstrap: str,
    topic: str,
    events: Iterable[ChangeEvent],
    *,
    event_time: bool = False,
    flush_timeout: float = 120.0,
    progress_every: int = 0,
) -> float:
    """Produce ``events`` to partition 0 of ``topic`` (created with the store's settings); events/s.

    ``event_time`` stamps each record with its event's ``time_ms`` (else the broker's time);
    ``progress_every`` prints a line every that many events (0: never).
    """
    from confluent_kafka import Producer

    from store.log import KafkaChangeLog

    KafkaChangeLog(bootstrap, topic).close()  # the topic, created with the store's settings
    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50, "batch.size": 1_000_000,
        "compression.type": "lz4", "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
    })  # fmt: skip
    codec = codec_named("avro")
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    started = time.perf_counter()
    count = 0
    for count, event in enumerate(events, start=1):
        value, key = codec.encode(event), event_key(event)
        stamp = event.time_ms if event_time else 0  # 0: the broker's (create) time
        while True:
            try:
                producer.produce(
                    topic, value, key, partition=0, on_delivery=delivered, timestamp=stamp
                )
                break
            except BufferError:
                producer.poll(0.05)
        if count % 10_000 == 0:
            producer.poll(0)
            if progress_every and count % progress_every == 0:
                print(f"  produced {count} events", flush=True)
    if producer.flush(flush_timeout) or failures:
        raise RuntimeError(f"prefill failed: {len(producer)} unsent, errors {failures[:3]}")
    return count / (time.perf_counter() - started)
