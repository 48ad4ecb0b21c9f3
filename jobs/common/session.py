"""The SparkSession every job and test uses: loopback-bound, quiet, with Delta Lake and Kafka.

Where the jars come from, first match wins:

1. the cluster: ``spark.jars`` or ``spark.jars.packages`` already set (``spark-submit --jars``
   / ``--packages``, or ``conf`` given here), so nothing is added;
2. a configured classpath: ``ACLSTORE_SPARK_JARS`` (jar paths separated by commas or the path
   separator)
   or ``ACLSTORE_SPARK_JARS_FILE`` (a file holding such a list), whose default in development is
   ``$ACLSTORE_CACHE_DIR/spark-jars.txt`` (cache directory ``~/.cache/aclstore``): the list
   ``python -m devtools jars`` (``make jars``) writes after resolving the jars with this
   machine's Maven (Spark's own ``--packages`` resolver does not honour its Maven settings).
   The product imports no dev tooling.

The jars needed are ``org.apache.spark:spark-sql-kafka-0-10_2.13`` and
``org.apache.spark:spark-avro_2.13`` (the pyspark version; the archive reads the common event
with the latter), ``io.delta:delta-spark_2.13:4.0.0`` and ``io.delta:delta-storage:4.0.0``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

JARS_ENV: Final = "ACLSTORE_SPARK_JARS"
JARS_FILE_ENV: Final = "ACLSTORE_SPARK_JARS_FILE"

DELTA_CONF: Final = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
LOCAL_CONF: Final = {
    # Delta reads a table's log into 50 partitions by default: far too many tasks for a
    # local session on two cores, where each costs more than the data it holds.
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
}
_CODE_CACHE: Final = "-XX:ReservedCodeCacheSize=256m"
QUERY_JVM_OPTIONS: Final = "-XX:TieredStopAtLevel=1 " + _CODE_CACHE
"""A local session's JVM (driver and executor at once) for a question or a short run: the
client compiler alone.  On two cores the server compiler's threads take more CPU than a short
job's own tasks.  On the client compiler alone the JVM reserves 48 MB for compiled code, not
240: Spark compiles classes for every query and micro-batch, a long session fills it, and the
JVM then stops compiling for the rest of the session; hence 256 MB."""
STREAM_JVM_OPTIONS: Final = _CODE_CACHE + " -XX:+UseParallelGC"
"""A local session's JVM for a streaming job (the archive, the audit job, the downgrade watch),
which runs for as long as it is left running: both compilers, whose optimized code pays for
its compiling within a minute or two; and the parallel collector, which spends less of two
cores than G1 on a stream of batches a few hundred megabytes each.  Its pauses stop the batch
in hand for a fraction of a second, which a job whose latency is counted in seconds does not
notice."""


class SessionSetupError(Exception):
    """The session's jars could not be found as configured."""


def build_session(
    app_name: str = "aclstore",
    *,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    warehouse: Path | None = None,
    streaming: bool = False,
) -> Any:
    """A SparkSession on ``master`` with Delta Lake's catalog and the Kafka source's jars;
    ``streaming``: for a streaming job (a local JVM then compiles as for a long run).  An
    existing session of this process is returned as it is."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = session_settings(master, conf, streaming=streaming)
    jars = session_jars(settings)
    if jars is not None:
        settings["spark.jars"] = ",".join(jars)
    builder = SparkSession.builder.appName(app_name).master(master)
    if warehouse is not None:
        builder = builder.config("spark.sql.warehouse.dir", str(warehouse))
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def session_settings(
    master: str, conf: Mapping[str, str] | None = None, *, streaming: bool = False
) -> dict[str, str]:
    """The session's settings before its jars: loopback, Delta, on a local ``master`` the
    local settings and the JVM's compilers (:data:`QUERY_JVM_OPTIONS`, or with ``streaming``
    :data:`STREAM_JVM_OPTIONS`), then ``conf`` over them."""
    settings: dict[str, str] = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.driver.memory": "2g",  # the archive's batches (jobs.history.job)
        **DELTA_CONF,
    }
    if master.startswith("local"):
        settings.update(LOCAL_CONF)
        settings["spark.driver.extraJavaOptions"] = STREAM_JVM_OPTIONS if streaming else QUERY_JVM_OPTIONS
    settings.update(conf or {})
    return settings


def session_jars(conf: Mapping[str, str], environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The jars to put on ``spark.jars``, or None when the cluster already provides them."""
    env = os.environ if environ is None else environ
    if "spark.jars" in conf or "spark.jars.packages" in conf or _submitted_with_jars(env):
        return None
    listed = env.get(JARS_ENV)
    if listed:
        return _existing(_split(listed), JARS_ENV)
    return listed_jars(env)


def jars_file(environ: Mapping[str, str] | None = None) -> Path:
    """``ACLSTORE_SPARK_JARS_FILE``, or ``spark-jars.txt`` in the aclstore cache directory."""
    env = os.environ if environ is None else environ
    if env.get(JARS_FILE_ENV):
        return Path(env[JARS_FILE_ENV])
    cache = env.get("ACLSTORE_CACHE_DIR") or str(Path.home() / ".cache" / "aclstore")
    return Path(cache) / "spark-jars.txt"


def listed_jars(environ: Mapping[str, str] | None = None) -> list[str]:
    """The jars :func:`jars_file` lists; a missing file or jar is a one-line error with the fix."""
    path = jars_file(environ)
    if not path.is_file():
        raise SessionSetupError(
            f"no Spark jar list at {path}: run `make jars` (python -m devtools jars) in a "
            f"development checkout, pass --jars/--packages, or set {JARS_FILE_ENV} to a file "
            "listing the jar paths"
        )
    jars = _split(path.read_text(encoding="utf-8"))
    missing = [j for j in jars if "://" not in j and not Path(j).exists()]
    if not jars or missing:
        what = ", ".join(missing[:3]) if missing else "no jar"
        raise SessionSetupError(f"{path} lists {what}: run `make jars` again")
    return jars


def _submitted_with_jars(env: Mapping[str, str]) -> bool:
    """True under ``spark-submit``/``pyspark`` given ``--jars``/``--packages`` (or their conf)."""
    args = env.get("PYSPARK_SUBMIT_ARGS", "")
    return bool(re.search(r"--(jars|packages)\b|spark\.jars(\.packages)?=", args)) or (
        "PYSPARK_GATEWAY_PORT" in env and _gateway_has_jars()
    )


def _gateway_has_jars() -> bool:
    """Ask the JVM ``spark-submit`` started for this process whether it was given jars."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    launched = SparkConf()
    return bool(launched.contains("spark.jars") or launched.contains("spark.jars.packages"))


def _split(text: str) -> list[str]:
    return [p.strip() for p in re.split(rf"[,\n{re.escape(os.pathsep)}]", text) if p.strip()]


def _existing(jars: list[str], source: str) -> list[str]:
    missing = [j for j in jars if "://" not in j and not Path(j).exists()]
    if not jars or missing:
        what = ", ".join(missing) if missing else "no jar"
        raise SessionSetupError(f"{source} lists {what}: give existing jar paths or URLs")
    return jars
