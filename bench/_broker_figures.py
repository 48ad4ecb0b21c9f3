"""What the realistic broker run reads besides its own clock: the sidecar's ``/metrics`` and
the plugin's metrics over the broker's JMX, as an operator's scraper would.

The sidecar's decision latency is a Prometheus histogram; its p99 over a phase is read from
the difference of two scrapes, interpolated within the bucket as ``histogram_quantile`` does.
The plugin's metrics are Kafka plugin metrics (KIP-877) on the broker's JMX, read with
Kafka's own ``JmxTool``.
"""

from __future__ import annotations

import os
import re
import subprocess
import urllib.request
from dataclasses import dataclass

from devtools.maven import kafka_tools_classpath, require_java

PLUGIN_MBEAN = (
    "kafka.server:type=plugins,config=authorizer.class.name,class=AclstoreAuthorizer,role=broker"
)

_SAMPLE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SidecarScrape:
    """Counters of the sidecar's ``authorize`` endpoint at one scrape."""

    decisions: float
    """Actions decided (ALLOWED and DENIED)."""
    requests: float
    seconds: float
    """Time the requests took inside the sidecar, parsing to answer (the histogram's sum)."""
    buckets: tuple[tuple[float, float], ...]
    """(upper bound in seconds, cumulative count), ``+Inf`` last."""

    @staticmethod
    def read(url: str) -> SidecarScrape:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            text = response.read().decode()
        decisions = requests = seconds = 0.0
        buckets: dict[float, float] = {}
        for match in _SAMPLE.finditer(text):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
            if labels.get("endpoint") != "authorize":
                continue
            value = float(match["value"])
            if match["name"] == "aclstore_decisions_total":
                decisions += value
            elif match["name"] == "aclstore_decision_latency_seconds_count":
                requests = value
            elif match["name"] == "aclstore_decision_latency_seconds_sum":
                seconds = value
            elif match["name"] == "aclstore_decision_latency_seconds_bucket":
                buckets[float(labels["le"])] = value
        return SidecarScrape(decisions, requests, seconds, tuple(sorted(buckets.items())))

    def since(self, before: SidecarScrape) -> SidecarScrape:
        old = dict(before.buckets)
        return SidecarScrape(
            self.decisions - before.decisions,
            self.requests - before.requests,
            self.seconds - before.seconds,
            tuple((bound, count - old.get(bound, 0.0)) for bound, count in self.buckets),
        )

    def quantile(self, q: float) -> float:
        """Seconds: the ``q`` quantile (0..1) of the requests counted, interpolated linearly
        within its bucket (Prometheus' ``histogram_quantile``); the highest finite bound when
        it falls in ``+Inf``."""
        total = self.buckets[-1][1] if self.buckets else 0.0
        if total <= 0:
            return float("nan")
        rank = q * total
        lower_bound, lower_count = 0.0, 0.0
        for bound, count in self.buckets:
            if count >= rank:
                if bound == float("inf"):
                    return lower_bound
                inside = count - lower_count
                share = (rank - lower_count) / inside if inside else 1.0
                return lower_bound + (bound - lower_bound) * share
            lower_bound, lower_count = bound, count
        return lower_bound


def jmx_options(port: int) -> list[str]:
    """JVM options that open the broker's JMX on loopback ``port``, unauthenticated (a local
    benchmark broker; never a deployment's setting)."""
    return [
        "-Dcom.sun.management.jmxremote",
        f"-Dcom.sun.management.jmxremote.port={port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={port}",
        "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        "-Djava.rmi.server.hostname=127.0.0.1",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
    ]


def plugin_metrics(port: int) -> dict[str, float]:
    """The plugin's metrics on the broker whose JMX listens on ``port``, by name."""
    classpath = os.pathsep.join(str(p) for p in kafka_tools_classpath())
    argv = [
        require_java(), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", classpath,
        "org.apache.kafka.tools.JmxTool", "--one-time", "true", "--report-format", "properties",
        "--jmx-url", f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi",
        "--object-name", PLUGIN_MBEAN,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"JmxTool failed ({done.returncode}): {done.stderr[-1500:]}")
    out: dict[str, float] = {}
    prefix = PLUGIN_MBEAN + ":"
    for line in done.stdout.splitlines():
        key, sep, value = line.rpartition("=")
        if sep and key.startswith(prefix):
            try:
                out[key[len(prefix) :]] = float(value)
            except ValueError:
                continue
    if not out:
        raise RuntimeError(f"JmxTool found no plugin metrics under {PLUGIN_MBEAN}: {done.stdout}")
    return out
