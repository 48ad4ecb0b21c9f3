"""Resolve jars from Maven Central with the machine's Maven, cached outside the work tree.

Resolution runs ``mvn dependency:build-classpath`` on a generated POM and caches the
resulting classpath under ``$ACLSTORE_CACHE_DIR`` (default ``~/.cache/aclstore``); the jars
themselves live in Maven's local repository.  ``ACLSTORE_MAVEN_SETTINGS`` names a Maven
settings file (a mirror, a proxy) to use instead of the default.  A second call with the
same coordinates reads the cache and checks that every jar is still there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path

from devtools.errors import RuntimeSetupError

KAFKA_VERSION = os.environ.get("ACLSTORE_KAFKA_VERSION", "4.3.1")
"""Apache Kafka release used for the broker and the reference authorizer.

4.3.1 is the newest 4.x release whose whole dependency tree resolves from Maven Central as
this machine reaches it (4.4.0's ``kafka-tools-api`` is not published there).
"""
SCALA_BINARY = "2.13"
DELTA_VERSION = "4.0.0"
"""Delta Lake for the history archive: 4.0.0 is the release built for Spark 4.0."""
LOG4J_VERSION = "2.25.4"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>aclstore.local</groupId><artifactId>resolve</artifactId><version>1</version>
  <dependencies>
{deps}
  </dependencies>
</project>
"""
_DEP = (
    "    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
    "<version>{v}</version></dependency>"
)


def cache_dir() -> Path:
    """Where resolved classpaths, compiled helpers and broker scratch space are kept."""
    root = os.environ.get("ACLSTORE_CACHE_DIR") or str(Path.home() / ".cache" / "aclstore")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (created if missing) for the ``with`` block.

    Two test workers (pytest-xdist) or two runs may resolve jars or build the plugin at the
    same moment; the second waits for the first and then finds its result.
    """
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it, so that a reader
    sees the old content or the new, never a file half written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise


def require_tool(name: str, hint: str) -> str:
    """Path of an executable on PATH, or a one-line error naming it and the fix."""
    found = shutil.which(name)
    if found is None:
        raise RuntimeSetupError(f"{name} not found on PATH: {hint}")
    return found


def require_java() -> str:
    return require_tool(
        "java", "install a JDK 17 or newer (Debian: apt-get install openjdk-17-jdk-headless)"
    )


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_UNREACHABLE = re.compile(
    r"Unknown host|Could not transfer|Connection refused|Network is unreachable|Connect to"
    r"|No plugin found for prefix"
)


def _explain_maven_failure(output: str, coords: Sequence[str]) -> str:
    output = _ANSI.sub("", output)
    wanted = ", ".join(coords)
    if _UNREACHABLE.search(output):
        return (
            f"Maven could not reach Maven Central while resolving {wanted}: check the network "
            "route to Maven Central (or a mirror in ~/.m2/settings.xml), then run again"
        )
    missing = re.search(r"Could not find artifact (\S+)", output)
    if missing:
        return (
            f"Maven Central has no {missing.group(1)} (resolving {wanted}): pick a released "
            "version (for Kafka set ACLSTORE_KAFKA_VERSION)"
        )
    tail = " | ".join([line for line in output.splitlines() if "[ERROR]" in line][:2])
    return f"Maven failed to resolve {wanted}: {tail or 'see mvn -X output'}"


def _cached_classpath(cp_file: Path) -> list[Path] | None:
    if not cp_file.exists():
        return None
    jars = [Path(p) for p in cp_file.read_text().split(os.pathsep) if p]
    return jars if jars and all(j.exists() for j in jars) else None


def resolve(coords: Sequence[str]) -> list[Path]:
    """The runtime classpath of ``group:artifact:version`` coordinates, resolved with Maven."""
    key = hashlib.sha256("\n".join(sorted(coords)).encode()).hexdigest()[:16]
    work = cache_dir() / "maven" / key
    cp_file = work / "classpath.txt"
    cached = _cached_classpath(cp_file)
    if cached is not None:
        return cached
    with exclusive(work.with_name(f"{key}.lock")):
        cached = _cached_classpath(cp_file)  # resolved by whoever held the lock before
        return cached if cached is not None else _resolve_now(coords, work, cp_file)


def _resolve_now(coords: Sequence[str], work: Path, cp_file: Path) -> list[Path]:
    mvn = require_tool("mvn", "install Apache Maven (Debian: apt-get install maven)")
    require_java()
    work.mkdir(parents=True, exist_ok=True)
    deps = []
    for coord in coords:
        group, artifact, version = coord.split(":")
        deps.append(_DEP.format(g=group, a=artifact, v=version))
    (work / "pom.xml").write_text(_POM.format(deps="\n".join(deps)))
    cmd = [mvn, "-B", "-q", "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}"]
    settings = os.environ.get("ACLSTORE_MAVEN_SETTINGS")
    if settings:
        cmd += ["-s", settings]
    proc = subprocess.run(
        cmd,
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not cp_file.exists():
        raise RuntimeSetupError(_explain_maven_failure(proc.stdout + proc.stderr, coords))
    return [Path(p) for p in cp_file.read_text().split(os.pathsep) if p]


@cache
def kafka_classpath() -> list[Path]:
    """Apache Kafka's broker (``kafka_2.13``) with every dependency, plus a log4j2 binding.

    Includes kafka-clients and kafka-metadata, so Kafka's own ``StandardAuthorizer`` is on it.
    """
    return resolve(
        [
            f"org.apache.kafka:kafka_{SCALA_BINARY}:{KAFKA_VERSION}",
            f"org.apache.logging.log4j:log4j-slf4j-impl:{LOG4J_VERSION}",
        ]
    )


@cache
def kafka_tools_classpath() -> list[Path]:
    """Apache Kafka's command-line tools (``kafka-tools``: ``AclCommand``, ``ConfigCommand``...)
    with every dependency, plus a log4j2 binding, for differential tests of aclstore's CLI."""
    return resolve(
        [
            f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
            f"org.apache.logging.log4j:log4j-slf4j-impl:{LOG4J_VERSION}",
        ]
    )


def _artifact_name(jar: Path) -> str:
    """``spark-avro_2.13-4.0.0.jar`` -> ``spark-avro_2.13``: the name without its version."""
    return re.sub(r"-\d[^-]*(-[A-Za-z0-9.]+)?\.jar$", "", jar.name)


@cache
def spark_connector_jars() -> list[Path]:
    """Spark's Kafka source, Avro and Delta Lake for the installed pyspark, minus jars pyspark ships."""
    import pyspark

    version = pyspark.__version__
    jars = resolve(
        [
            f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{version}",
            f"org.apache.spark:spark-avro_{SCALA_BINARY}:{version}",
            f"io.delta:delta-spark_{SCALA_BINARY}:{DELTA_VERSION}",
            f"io.delta:delta-storage:{DELTA_VERSION}",
        ]
    )
    shipped_dir = Path(pyspark.__file__).parent / "jars"
    shipped = {_artifact_name(j) for j in shipped_dir.glob("*.jar")}
    return [j for j in jars if _artifact_name(j) not in shipped]


SPARK_JARS_FILE = "spark-jars.txt"
"""The jar list the jobs read in development (``jobs.common.session``: ``ACLSTORE_SPARK_JARS_FILE``'s
default is this file in the cache directory), so the product never imports this module."""


def write_spark_jars_file() -> Path:
    """Resolve Spark's connector jars and write their paths, one a line, where the jobs look.

    Written atomically: a job another test worker starts meanwhile reads the whole list.
    """
    path = cache_dir() / SPARK_JARS_FILE
    text = "".join(f"{jar}\n" for jar in spark_connector_jars())
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        write_atomically(path, text)
    return path
