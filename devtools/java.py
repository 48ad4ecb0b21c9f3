"""Compile and run the small Java programs that put Kafka's own classes beside ours.

The differential tests and benchmarks drive Kafka's real classes (``StandardAuthorizer``,
``SslPrincipalMapper``, ``KerberosShortNamer``...) through one-file Java harnesses under
``tests/java/``.  :func:`compile_harness` compiles such a file with ``javac`` against a
classpath (usually :func:`devtools.maven.kafka_classpath`) into
``<source dir>/build/<Name>-<hash>/``, keyed by a hash of the source text and the classpath,
so an unchanged harness is compiled once and an edited one (or another Kafka version) never
runs stale classes.  A harness may declare a package (to reach a package-private class of the
plugin); its main class is then run by its qualified name.  :func:`run_harness` runs the
compiled main class with text on stdin.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from devtools.maven import require_java, require_tool
from store.errors import StoreError

_LOG4J2 = "status = error\nrootLogger.level = ERROR\n"
SHORT_RUN_JVM_OPTIONS: tuple[str, ...] = ("-XX:TieredStopAtLevel=1",)
"""JVM options for a Java process that runs for seconds (a test's broker or harness): the
client compiler alone.  On two cores the server compiler's threads take more CPU in a JVM's
first seconds than such a run saves by them (a local broker: 3.4 s of CPU to its first
answer, 2.1 s without them).  Benchmarks keep the JVM's default: they measure the code the
server compiler produces."""
_JDK_HINT = "install a JDK 17 or newer (Debian: apt-get install openjdk-17-jdk-headless)"


class HarnessError(StoreError):
    """A Java harness did not compile, or exited with an error; the message says which and why."""


def _classpath_text(classpath: Sequence[Path | str]) -> str:
    return os.pathsep.join(str(entry) for entry in classpath)


def compile_harness(source: Path, classpath: Sequence[Path | str]) -> Path:
    """The directory holding ``source``'s compiled classes (and a quiet ``log4j2.properties``).

    Compiles only when no build for this exact source text and classpath exists; the build
    is written to a temporary directory and renamed into place, so concurrent runs never see
    half a build.
    """
    javac = require_tool("javac", _JDK_HINT)
    source = source.resolve()
    cp = _classpath_text(classpath)
    digest = hashlib.sha256(source.read_bytes() + b"\0" + cp.encode()).hexdigest()[:16]
    build_root = source.parent / "build"
    target = build_root / f"{source.stem}-{digest}"
    if target.is_dir() and any(target.rglob(f"{source.stem}.class")):  # in its package's folder
        return target
    build_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{source.stem}-", dir=build_root))
    proc = subprocess.run(
        [javac, "-Xlint:none", "-encoding", "UTF-8", "-d", str(scratch), "-cp", cp, str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        first = next((line for line in proc.stderr.splitlines() if "error:" in line), proc.stderr)
        raise HarnessError(f"javac failed on {source}: {first.strip()}")
    (scratch / "log4j2.properties").write_text(_LOG4J2)
    try:
        scratch.rename(target)
    except OSError:  # another run finished the same build first
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def run_harness(
    build: Path,
    main_class: str,
    classpath: Sequence[Path | str],
    args: Sequence[str] = (),
    stdin: str = "",
    timeout: float = 600,
    heap: str = "1g",
    jvm_options: Sequence[str] = (),
) -> str:
    """Run ``main_class`` from a :func:`compile_harness` build; its stdout, or :class:`HarnessError`.
    ``jvm_options`` go on the ``java`` command line (:data:`SHORT_RUN_JVM_OPTIONS`, say)."""
    java = require_java()
    command = [
        java,
        f"-Xmx{heap}",
        *jvm_options,
        f"-Dlog4j2.configurationFile={build / 'log4j2.properties'}",
        "-cp",
        _classpath_text([build, *classpath]),
        main_class,
        *args,
    ]
    proc = subprocess.run(
        command, input=stdin, capture_output=True, text=True, encoding="utf-8",
        timeout=timeout, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise HarnessError(f"{main_class} exited with {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout
