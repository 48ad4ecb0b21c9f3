"""``python -m bench listing [--quick]``: ``aclstore acls --list`` beside Kafka's own ``--list``.

The same N bindings (1,000,000; 100,000 with ``--quick``; the ``bench downgrade`` shape: shared
prefixes, 20 % PREFIXED, 20 % DENY, two wildcard ALLOWs) are loaded into

* a local Kafka KRaft broker (combined broker and controller) with ``StandardAuthorizer``,
  through the Admin API's CreateAcls in batches of 10,000, a few batches in flight, and
* an aclstore node (``aclstore serve`` on the embedded default, a child process), through its
  admin API in batches of 10,000,

one after the other (each load's time is printed).

Then each listing of everything is run as a user runs it, a process from start to exit with its
output written to a file, the two taking turns:

* ``aclstore acls --store URL --command-config admin.properties --list``;
* ``kafka-acls.sh --bootstrap-server HOST:PORT --list``: ``org.apache.kafka.tools.AclCommand``
  on the kafka-tools classpath, with the JVM options of ``kafka-run-class.sh``.  Its default heap
  (``-Xmx256M``) is tried first; if the JVM runs out of it, the heap is doubled until the
  listing fits (a user would set ``KAFKA_HEAP_OPTS``), and the heap used is printed.

Each run's wall time and peak RSS (the process tree's) are printed, with the node's growth while
ours ran; both outputs must hold the same ACLs under the same resources (an order-independent
digest of each output's (resource, ACL) lines, and their count, which must be N) - Kafka prints
its resources in no set order.  TARGET ``list_cli_1m_ratio``: the median wall time of ours ÷ that
of Kafka's (<= 1.0).  The load average is printed before and after: on shared cores the times
follow it.
"""

from __future__ import annotations

import hashlib
import os
import random
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.downgrade import synthetic_bindings
from bench.process import CommandRun, RssWatch, aclstore_argv, load_average, run_command
from bench.report import Target, figure, median
from bench.sidecar import _Server
from devtools.kafka_process import LocalKafka
from devtools.maven import kafka_tools_classpath, require_java
from replicator.client import StoreClient
from replicator.client.config import ClientConfig
from store.acl import AclBinding

STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_COMMAND: Final = "org.apache.kafka.tools.AclCommand"
BATCH: Final = 10_000
IN_FLIGHT: Final = 2
"""CreateAcls requests sent to the broker before the oldest is waited for."""
RUN_CLASS_JVM: Final = (
    "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
)  # fmt: skip
"""``KAFKA_JVM_PERFORMANCE_OPTS`` as ``kafka-run-class.sh`` sets it."""
DEFAULT_HEAP: Final = "256M"
"""``KAFKA_HEAP_OPTS``'s default in ``kafka-run-class.sh``."""
HEAPS: Final = (DEFAULT_HEAP, "512M", "1G", "2G", "4G")

HEADER: Final = "Current ACLs for resource `"
ACL_LINE: Final = "\t(principal="


# --- what a listing printed (pure) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListingDigest:
    """What a ``--list`` output holds, whatever the order it was printed in: its resource
    blocks, its ACL lines, the sum of a hash of each (resource, ACL) pair, and any other
    non-empty lines (none, in a plain listing)."""

    resources: int
    acls: int
    digest: int
    other: int

    def same_acls(self, other: ListingDigest) -> bool:
        return (self.acls, self.digest) == (other.acls, other.digest)


def listing_digest(lines: Iterable[str]) -> ListingDigest:
    """The digest of the lines of ``printResourceAcls`` blocks (each ACL line belongs to the
    header above it).  An ACL line with no header above it is an error."""
    resources = acls = other = 0
    total = 0
    header: bytes | None = None
    for raw in lines:
        line = raw.rstrip("\n").strip(" ")  # Kafka's older printResourceAcls padded with spaces
        if line.startswith(HEADER):
            resources += 1
            header = line.encode("utf-8", "surrogatepass")
        elif line.startswith(ACL_LINE):
            if header is None:
                raise ValueError(f"an ACL line before any resource: {line!r}")
            acls += 1
            pair = header + b"\n" + line.encode("utf-8", "surrogatepass")
            total += int.from_bytes(hashlib.blake2b(pair, digest_size=8).digest(), "big")
        elif line.strip():
            other += 1
    return ListingDigest(resources, acls, total % (1 << 64), other)


def file_digest(path: Path) -> ListingDigest:
    with path.open(encoding="utf-8", errors="surrogateescape", newline="\n") as text:
        return listing_digest(text)


# --- loading the same bindings into both ------------------------------------------------------


def _batches(bindings: Sequence[AclBinding]) -> Iterator[Sequence[AclBinding]]:
    for start in range(0, len(bindings), BATCH):
        yield bindings[start : start + BATCH]


def load_node(node: _Server, bindings: Sequence[AclBinding]) -> None:
    with StoreClient(ClientConfig(url=node.url, token=node.token, timeout_s=600.0)) as client:
        for batch in _batches(bindings):
            failed = [r for r in client.create_acls(batch).results if r.error is not None]
            if failed:
                raise RuntimeError(f"the node refused {len(failed)} bindings: {failed[0].error}")


def load_broker(broker: LocalKafka, bindings: Sequence[AclBinding]) -> None:
    """CreateAcls in batches, :data:`IN_FLIGHT` at a time (each answered once the controller
    committed it to the metadata log)."""
    from confluent_kafka.admin import AdminClient

    from store.interop import to_confluent

    # A batch of 10,000 can take longer than librdkafka's default 60 s on busy shared
    # cores (300 s is its maximum).
    admin = AdminClient({**broker.client_config(), "socket.timeout.ms": 300_000})
    pending: list[Any] = []
    for batch in _batches(bindings):
        pending.append(admin.create_acls([to_confluent(b) for b in batch], request_timeout=600))
        while len(pending) >= IN_FLIGHT:
            for future in pending.pop(0).values():
                future.result(timeout=600)
    for futures in pending:
        for future in futures.values():
            future.result(timeout=600)


@contextmanager
def standard_broker(workdir: Path, heap: str) -> Iterator[LocalKafka]:
    overrides = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"}
    broker = LocalKafka(workdir, heap=heap, overrides=overrides)
    broker.start(timeout=180)
    try:
        yield broker
    except BaseException:
        if not broker.running:  # its log goes with the temporary folder: say how it ended
            print(f"  the broker stopped; its log ended with:\n{_tail(broker.log_path)}")
        raise
    finally:
        broker.stop()


# --- the two commands -------------------------------------------------------------------------


def kafka_acls_argv(bootstrap: str, heap: str) -> list[str]:
    """``kafka-acls.sh --bootstrap-server BOOTSTRAP --list`` as ``kafka-run-class.sh`` runs it."""
    classpath = os.pathsep.join(str(p) for p in kafka_tools_classpath())
    return [
        require_java(), f"-Xmx{heap}", *RUN_CLASS_JVM, "-cp", classpath, ACL_COMMAND,
        "--bootstrap-server", bootstrap, "--list",
    ]  # fmt: skip


def kafka_listing(bootstrap: str, heap: str, output: Path) -> tuple[CommandRun, str]:
    """kafka-acls.sh's listing with ``heap``, or with the least larger heap of :data:`HEAPS`
    the JVM did not run out of; the run and the heap it took."""
    for tried in HEAPS[HEAPS.index(heap) :]:
        done = run_command(kafka_acls_argv(bootstrap, tried), stdout=output)
        if done.returncode == 0:
            return done, tried
        # AclCommand prints its failure ("Error while executing ACL command: ...") on stdout.
        said = f"{done.stderr.decode(errors='replace')[-2000:]}{_tail(output)}"
        if "OutOfMemoryError" not in said and "Java heap space" not in said:
            raise RuntimeError(f"kafka-acls.sh --list exited {done.returncode}: {said}")
        print(f"  kafka-acls.sh ran out of heap with -Xmx{tried}: retried with more", flush=True)
    raise RuntimeError(f"kafka-acls.sh --list ran out of heap even with -Xmx{HEAPS[-1]}")


def _tail(path: Path, size: int = 4000) -> str:
    with path.open("rb") as data:
        data.seek(max(0, path.stat().st_size - size))
        return data.read().decode(errors="replace")


@dataclass(slots=True)
class Runs:
    """The runs of one command and what its output held."""

    label: str
    walls: list[float]
    peaks: list[int]
    digest: ListingDigest | None = None

    def add(self, run: CommandRun, output: Path) -> ListingDigest:
        run.check()
        found = file_digest(output)
        if self.digest is not None and found != self.digest:
            raise RuntimeError(f"{self.label} listed {found}, before {self.digest}")
        self.digest = found
        self.walls.append(run.wall_s)
        self.peaks.append(run.peak_rss)
        print(f"  {self.label}: {run.wall_s:.2f} s, peak RSS {run.peak_rss_mb:.0f} MB, "
              f"{found.acls} ACLs under {found.resources} resources", flush=True)  # fmt: skip
        return found


def run(quick: bool) -> list[Target]:
    size = 100_000 if quick else 1_000_000
    rounds = 3 if quick else 2
    bindings = list(synthetic_bindings(size))
    random.Random(7).shuffle(bindings)  # no help from the load order
    print(f"  bindings: {len(bindings):,}", flush=True)
    print(f"  load average (1, 5, 15 min) at the start: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-listing-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        (root / "node").mkdir()
        node = _Server(root / "node" / "data")
        stack.callback(node.stop)
        broker = stack.enter_context(standard_broker(root / "kafka", "1g" if quick else "4g"))
        started = time.perf_counter()
        load_broker(broker, bindings)
        took = time.perf_counter() - started
        figure("StandardAuthorizer broker loaded", took, f"s ({len(bindings) / took:.0f} bindings/s)")
        started = time.perf_counter()
        load_node(node, bindings)
        took = time.perf_counter() - started
        figure("aclstore node loaded", took, f"s ({len(bindings) / took:.0f} bindings/s)")
        del bindings
        time.sleep(2.0)  # the broker's authorizer has published the metadata log's end

        ours_argv = aclstore_argv(
            "acls", "--store", node.url, "--command-config",
            str(node.data_dir / "admin.properties"), "--list",
        )  # fmt: skip
        ours, kafka = Runs("aclstore acls --list", [], []), Runs("kafka-acls.sh --list", [], [])
        growth: list[int] = []
        figure("the node's resident memory before the listings", RssWatch(node.process.pid).start / 1e6, "MB")
        heap = DEFAULT_HEAP
        output = root / "listing.out"
        for _ in range(rounds):
            with RssWatch(node.process.pid) as watch:
                ours.add(run_command(ours_argv, stdout=output), output)
            growth.append(watch.growth)
            done, heap = kafka_listing(broker.bootstrap_servers, heap, output)
            kafka.add(done, output)
        output.unlink()
    print(f"  load average (1, 5, 15 min) at the end: {load_average()}", flush=True)
    assert ours.digest is not None and kafka.digest is not None
    if not ours.digest.same_acls(kafka.digest) or ours.digest.acls != size:
        raise RuntimeError(f"the listings differ: ours {ours.digest}, Kafka's {kafka.digest}")
    print(f"  both listed the same {ours.digest.acls:,} ACLs under {ours.digest.resources:,} resources")
    print(f"  kafka-acls.sh ran with -Xmx{heap} (kafka-run-class.sh's default: -Xmx{DEFAULT_HEAP})")
    ratio = median(ours.walls) / median(kafka.walls)
    for runs in (ours, kafka):
        peak = max(runs.peaks) / 1e6
        figure(f"{runs.label}, median", median(runs.walls), f"s (peak RSS at most {peak:.0f} MB)")
    figure("the node's growth while ours ran, at most", max(growth) / 1e6, "MB")
    if quick:
        print(f"  (at {size:,} bindings, --quick)")
    return [Target("list_cli_1m_ratio", ratio, "ratio", 1.0, higher_is_better=False)]
