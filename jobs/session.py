"""The SparkSession every job and test uses: local, quiet, with Spark's Kafka source.

Spark's own ``--packages`` resolver does not honour this machine's Maven settings, so the
Kafka and Avro connectors are handed to Spark as jar paths, listed (one a line) in
``ACLSTORE_SPARK_JARS_FILE``; its default, ``$ACLSTORE_CACHE_DIR/spark-jars.txt`` (cache
directory ``~/.cache/aclstore``), is what ``python -m devtools jars`` (``make jars``) writes in
development.  The product imports no dev tooling.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def build_session(
    app_name: str = "aclstore",
    *,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    warehouse: Path | None = None,
) -> Any:
    """A SparkSession bound to loopback with the Kafka and Avro connectors on its classpath."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON") or _python())
    jars = ",".join(listed_jars())
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.jars", jars)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.driver.memory", "1g")
    )
    if warehouse is not None:
        builder = builder.config("spark.sql.warehouse.dir", str(warehouse))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


JARS_FILE_ENV = "ACLSTORE_SPARK_JARS_FILE"


class SessionSetupError(Exception):
    """The session's jar list is missing or names jars that are not there."""


def jars_file(environ: Mapping[str, str] | None = None) -> Path:
    """``ACLSTORE_SPARK_JARS_FILE``, or ``spark-jars.txt`` in the aclstore cache directory."""
    env = os.environ if environ is None else environ
    if env.get(JARS_FILE_ENV):
        return Path(env[JARS_FILE_ENV])
    cache = env.get("ACLSTORE_CACHE_DIR") or str(Path.home() / ".cache" / "aclstore")
    return Path(cache) / "spark-jars.txt"


def listed_jars(environ: Mapping[str, str] | None = None) -> list[str]:
    """The jar paths in :func:`jars_file`; a missing file or jar is a one-line error with the fix."""
    path = jars_file(environ)
    if not path.is_file():
        raise SessionSetupError(
            f"no Spark jar list at {path}: run `make jars` (python -m devtools jars) in a "
            f"development checkout, or set {JARS_FILE_ENV} to a file listing the jar paths"
        )
    jars = path.read_text(encoding="utf-8").split()
    missing = [jar for jar in jars if not Path(jar).exists()]
    if missing:
        raise SessionSetupError(
            f"{path} lists jars that are gone ({', '.join(missing[:3])}): run `make jars` again"
        )
    return jars


def _python() -> str:
    import sys

    return sys.executable
