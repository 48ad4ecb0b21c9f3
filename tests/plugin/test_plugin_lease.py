"""The plugin's decision cache under its default lease, against ``aclstore serve``.

A Java harness (``tests/java/PluginMetricsHarness.java``, mode ``lease``) loads the plugin as a
broker does, with no cache setting at all, starts it (so its long-poll runs), and answers each
"ask" on stdin with alice's WRITE on ``orders`` and the plugin's own counters.  Expected:

* a granted action is asked once, then answered from the cache (``decision-cache-hits-total``
  grows, ``sidecar-calls-total`` does not);
* once ``aclstore acls --remove`` returned its offset and the node answers at that offset
  (``--min-offset``), alice is denied on the very next ask: the node made the removal visible
  only after the plugin dropped its entries;
* a plugin that stops acknowledging (the JVM stopped with SIGSTOP) holds the node's apply
  back for at most its lease (1 s by default), and once resumed answers from nothing stale.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_support import Sidecar

from devtools.java import compile_harness
from devtools.maven import kafka_classpath, require_java
from devtools.plugin import plugin_jar

pytestmark = pytest.mark.slow  # a JVM harness and ``aclstore serve``

HARNESS = Path(__file__).resolve().parents[1] / "java" / "PluginMetricsHarness.java"
GRANT = ("--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders")


class Plugin:
    """The harness JVM in ``lease`` mode, driven line by line."""

    def __init__(self, url: str, *settings: str) -> None:
        classpath = [*kafka_classpath(), plugin_jar()]
        build = compile_harness(HARNESS, classpath)
        self.asked = 0
        self.proc = subprocess.Popen(
            [require_java(), "-Xmx256m", f"-Dlog4j2.configurationFile={build / 'log4j2.properties'}",
             "-cp", os.pathsep.join(str(p) for p in [build, *classpath]),
             "PluginMetricsHarness", "lease", url, *settings],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert json.loads(self._line()) == {"started": True}

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the harness exited with {self.proc.wait(10)}"
        return line

    def ask(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.asked += 1
        self.proc.stdin.write("ask\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self._line())
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[Sidecar]:
    s = Sidecar(tmp_path / "sidecar")
    s.start()
    try:
        yield s
    finally:
        s.stop()


def _offset(out: str) -> int:
    return int(json.loads(out)["offset"])


def _ask_until(plugin: Plugin, check: Any, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer = plugin.ask()
        if check(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def test_the_default_cache_answers_repeats_and_never_hides_an_applied_removal(
    sidecar: Sidecar,
) -> None:
    plugin = Plugin(sidecar.url)
    try:
        assert plugin.ask()["result"] == "DENIED"
        granted = _offset(sidecar.cli("acls", "--add", *GRANT, "--format", "json"))
        sidecar.cli("authorize", "--principal", "User:alice", "--operation", "Write", "--topic",
                    "orders", "--min-offset", str(granted))  # fmt: skip
        first = plugin.ask()
        assert first["result"] == "ALLOWED"
        # The long-poll heard of the grant's offset before the answer: cached from the next ask
        # on (the very first cacheable answer may race the long-poll's renewal; allow one more).
        repeats = [plugin.ask() for _ in range(20)]
        assert all(r["result"] == "ALLOWED" for r in repeats)
        assert repeats[-1]["hits"] >= first["hits"] + 18, repeats[-1]
        assert repeats[-1]["calls"] <= first["calls"] + 2, repeats[-1]

        for _ in range(3):  # each removal lands at once, whatever the cache held
            removed = _offset(sidecar.cli("acls", "--remove", "--force", *GRANT, "--format", "json"))
            out = sidecar.cli("authorize", "--principal", "User:alice", "--operation", "Write",
                              "--topic", "orders", "--min-offset", str(removed))  # fmt: skip
            assert out.startswith("DENIED"), out
            assert plugin.ask()["result"] == "DENIED"  # no stale allow, not even once
            granted = _offset(sidecar.cli("acls", "--add", *GRANT, "--format", "json"))
            sidecar.cli("authorize", "--principal", "User:alice", "--operation", "Write",
                        "--topic", "orders", "--min-offset", str(granted))  # fmt: skip
            assert _ask_until(plugin, lambda a: a["result"] == "ALLOWED")["result"] == "ALLOWED"
            hits = plugin.ask()["hits"]
            assert plugin.ask()["hits"] == hits + 1  # cached again at the new offset
        last = plugin.ask()
        # Each ask is one action, answered from the cache (a hit) or not (a miss): never both.
        assert last["hits"] + last["misses"] == plugin.asked, last
        assert last["misses"] == last["calls"], last  # each miss was one call of one action
    finally:
        plugin.close()


def _change_then_read(sidecar: Sidecar, change: tuple[str, ...], topic: str) -> tuple[float, str]:
    """``aclstore acls <change>``, then alice's Write on ``topic`` read at the change's offset
    (``--min-offset``: the node answers once the change is visible): (seconds taken, answer)."""
    started = time.monotonic()
    offset = _offset(sidecar.cli("acls", *change, "--format", "json"))
    out = sidecar.cli("authorize", "--principal", "User:alice", "--operation", "Write",
                      "--topic", topic, "--min-offset", str(offset))  # fmt: skip
    return time.monotonic() - started, out


def test_a_stopped_plugin_holds_the_sidecar_back_for_its_lease_at_most(sidecar: Sidecar) -> None:
    plugin = Plugin(sidecar.url)
    try:
        sidecar.cli("acls", "--add", *GRANT)
        cached = _ask_until(plugin, lambda a: a["result"] == "ALLOWED" and a["hits"] > 0)
        assert cached["hits"] > 0, cached
        # The same two commands (a change, then a read at its offset) with the plugin running:
        # what they cost on this machine right now, the plugin acknowledging at once.
        other = (*GRANT[:-1], "other")
        baseline, out = _change_then_read(sidecar, ("--add", *other), "other")
        assert out.startswith("ALLOWED"), out
        plugin.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.2)
        held, out = _change_then_read(sidecar, ("--remove", "--force", *GRANT), "orders")
        assert out.startswith("DENIED"), out
        # The apply did not wait for the stopped plugin (it is still stopped), only for the
        # rest of its 1 s lease: no longer than the commands alone, plus the lease, plus slack
        # for two CLI runs on a busy machine.
        assert held < baseline + 1.0 + 2.5, (held, baseline)
        plugin.proc.send_signal(signal.SIGCONT)
        # Its lease ran out by its own clock while it was stopped: nothing stale is answered.
        assert plugin.ask()["result"] == "DENIED"
    finally:
        plugin.close()


def test_a_cached_allow_is_asked_again_after_its_max_age_so_the_audit_sees_the_grant(
    sidecar: Sidecar,
) -> None:
    # Two seconds: "within the age" must hold across an ask or two on a busy machine.
    plugin = Plugin(sidecar.url, "aclstore.cache.entry.max.age.ms=2000")
    try:
        sidecar.cli("acls", "--add", *GRANT)
        cached = _ask_until(plugin, lambda a: a["result"] == "ALLOWED" and a["hits"] > 0)
        assert cached["hits"] > 0, cached
        again = plugin.ask()  # well within the age: from the cache
        assert (again["hits"], again["calls"]) == (cached["hits"] + 1, cached["calls"]), again
        time.sleep(2.2)
        aged = plugin.ask()  # past the age: the sidecar is asked (and audits it)
        assert aged["result"] == "ALLOWED"
        assert (aged["hits"], aged["calls"]) == (again["hits"], again["calls"] + 1), aged
        assert plugin.ask()["hits"] == aged["hits"] + 1  # and cached afresh
    finally:
        plugin.close()
