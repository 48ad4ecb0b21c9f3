"""What a user's command costs: a process run end to end, its wall time and its peak memory.

A TARGET times what a user types, so the benchmarks run ``aclstore ...`` as a process of its
own (Python start, imports, the request, the output) and measure it from outside:
:func:`run_command` samples the resident memory of the command's whole process tree (a Spark
question's JVM is a child of the CLI) and keeps the peak of the sum; :class:`RssWatch` does the
same for a process that is already running (a node), to report how much it grew meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_S = 0.02


def tree_rss(process: psutil.Process) -> int:
    """Bytes resident in ``process`` and every process below it (0 once it is gone)."""
    total = 0
    try:
        members = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


class RssWatch:
    """The peak resident memory of a process tree while the ``with`` block runs."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.start = tree_rss(self.process)
        self.peak = self.start
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(SAMPLE_S):
            self.peak = max(self.peak, tree_rss(self.process))

    def __enter__(self) -> RssWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, tree_rss(self.process))

    @property
    def growth(self) -> int:
        """Bytes the tree grew by, at its peak, over what it held when the watch began."""
        return max(0, self.peak - self.start)


@dataclass(frozen=True, slots=True)
class CommandRun:
    """One command, run to its end."""

    argv: tuple[str, ...]
    returncode: int
    wall_s: float
    peak_rss: int
    """Bytes: the peak of the summed resident memory of the command and its children."""
    stdout: bytes
    stderr: bytes

    @property
    def peak_rss_mb(self) -> float:
        return self.peak_rss / 1e6

    def check(self) -> CommandRun:
        """This run, or an error with what the command said when it failed."""
        if self.returncode != 0:
            raise RuntimeError(
                f"{' '.join(self.argv)} exited {self.returncode}: "
                f"{self.stderr.decode(errors='replace')[-2000:]}"
            )
        return self


def aclstore_argv(*args: str) -> list[str]:
    """``aclstore ARGS`` as a user runs it: the installed console script when there is one
    beside this interpreter, else the package's module with the same interpreter."""
    script = Path(sys.executable).with_name("aclstore")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-m", "cli", *args]


def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: bytes | None = None,
    stdout: Path | None = None,
    timeout: float = 3600.0,
) -> CommandRun:
    """Run ``argv`` to its end; its wall time from start to exit and its tree's peak RSS.

    ``stdout``: a file the command's output is written to (a large answer, which this process
    should not hold); the run's ``stdout`` is then empty."""
    with contextlib.ExitStack() as files:
        out: IO[bytes] | int = subprocess.PIPE
        if stdout is not None:
            out = files.enter_context(stdout.open("wb"))
        started = time.perf_counter()
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=cwd or ROOT,
        )
        with RssWatch(process.pid) as watch:
            answer, stderr = process.communicate(stdin, timeout=timeout)
        wall = time.perf_counter() - started
    return CommandRun(tuple(argv), process.returncode, wall, watch.peak, answer or b"", stderr)


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages, as printed beside every full run."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def cpu_model() -> str:
    """The CPU's model name and how many cores this process may use (Linux)."""
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {len(os.sched_getaffinity(0))} cores"


PACE_STEPS = 200_000
PACE_SAMPLES = 7


def pace_ms() -> list[float]:
    """Milliseconds per million steps of one fixed interpreter loop, :data:`PACE_SAMPLES` times
    over (under half a second in all): how fast this machine runs Python just now.
    The same CPU model ran it at 75 to 280 ms from one minute to the next (a shared host), so
    a figure is read beside the pace measured around it."""
    samples = []
    for _ in range(PACE_SAMPLES):
        started = time.perf_counter()
        total = 0
        for i in range(PACE_STEPS):
            total += i * i % 7
        samples.append((time.perf_counter() - started) * 1e9 / PACE_STEPS)  # ns a step = ms a million
    return samples


MEMORY_KEYS = 1_000_000
MEMORY_LOOKUPS = 200_000


def memory_pace_ns() -> float:
    """Nanoseconds per lookup of a random key in a dictionary of a million integers (about
    100 MB, beyond the caches): how fast this machine reaches memory just now.  A decision's
    work is mostly such reads, and in a virtual machine they vary more than the interpreter
    loop of :func:`pace_ms` does (each miss may walk the host's page tables too)."""
    table = {i * 7919: i for i in range(MEMORY_KEYS)}
    rng = random.Random(1)
    keys = [rng.randrange(MEMORY_KEYS) * 7919 for _ in range(MEMORY_LOOKUPS)]
    get = table.get
    started = time.perf_counter()
    for key in keys:
        get(key)
    return (time.perf_counter() - started) * 1e9 / MEMORY_LOOKUPS


def pace_text() -> str:
    """The pace (:func:`pace_ms`: its best and its median sample) and the memory pace."""
    samples = sorted(pace_ms())
    best, median = samples[0], samples[len(samples) // 2]
    return (f"pace {best:.0f} ms per million interpreter steps (median {median:.0f}), "
            f"{memory_pace_ns():.0f} ns per random dict lookup")  # fmt: skip


def machine_text() -> str:
    """One line for a bench's head: the CPU, the load average, the memory and the pace."""
    memory = psutil.virtual_memory()
    return (f"machine: {cpu_model()}; load {load_average()}; memory {memory.total / 1e9:.1f} GB, "
            f"{memory.available / 1e9:.1f} GB available; {pace_text()}")  # fmt: skip


def jvm_text(spark: Any) -> str:
    """The flags a local Spark session's JVM runs with, and its collectors (a classic session)."""
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    collectors = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = [collectors.get(i).getName() for i in range(collectors.size())]
    flags = [str(a) for a in runtime.getInputArguments() if str(a).startswith("-X")]
    vm = f"{runtime.getVmName()} {runtime.getVmVersion()}"
    return f"JVM {vm}: {' '.join(flags)}; collectors {', '.join(names)}"
