"""The SparkSession every job and test uses: local, quiet, with Spark's Kafka source.

Spark's own ``--packages`` resolver does not honour this machine's Maven settings, so the
Kafka and Avro connectors are resolved with Maven (:mod:`store.runtime.maven`) and handed to
Spark as jar paths.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from store.runtime.maven import spark_connector_jars


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
    jars = ",".join(str(j) for j in spark_connector_jars())
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


def _python() -> str:
    import sys

    return sys.executable
