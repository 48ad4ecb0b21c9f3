"""Spark Connect: questions asked of a Spark server that stays up, instead of a fresh JVM each.

A question of the history or the audit report is a few small queries; in a fresh process most
of its time is the JVM's start, Delta's jars and a new session.  Spark 4.0's Connect server
keeps one warm driver, and pyspark's own client speaks to it over gRPC: the jobs' DataFrame
code runs unchanged on either session (:func:`remote_session` or
:func:`jobs.common.session.build_session`).

The server is Spark's own class, started with pyspark's ``spark-submit`` and the settings a
local session of :mod:`jobs.common.session` has (loopback, Delta, the Kafka and Avro jars),
bound to loopback (:func:`server_argv`).  The archive lives where the server reads it: a local
server reads the same paths as the command; a remote one reads the URIs it is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

SERVER_CLASS: Final = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT: Final = 15002
"""Spark Connect's own default port."""
LOOPBACK: Final = "127.0.0.1"


QUESTION_CONF: Final = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
}
"""The settings of a question's session on the server (its own: other clients keep theirs).
A question is a few queries, each planned once, over the rows Delta's statistics leave it:
re-planning each adaptively costs more than it saves."""

SMALL_TABLE_CONF: Final = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
"""Added for a question over a small table (:data:`SMALL_TABLE_BYTES`): compiling each plan's
Java code costs more than running it interpreted over a few thousand rows, and less than it
saves over millions (the trade the test suite's session makes, :mod:`tests.conftest`)."""

SMALL_TABLE_BYTES: Final = 16 * 1024 * 1024


class ConnectError(Exception):
    """A Spark Connect server could not be reached or started."""


def remote_session(url: str) -> Any:
    """A Spark Connect session on the server at ``url`` (``sc://host:port``), set for
    questions (:data:`QUESTION_CONF`; :func:`tune_for_table` for the table asked).

    Built through pyspark's classic builder, which marks this process as a Connect client,
    so that ``pyspark.sql.functions`` and every DataFrame call in the jobs speak to the server.
    """
    from pyspark.sql import SparkSession

    if not url.startswith("sc://"):
        raise ConnectError(f"--remote {url!r} is not a Spark Connect URL: give sc://HOST:PORT")
    session = SparkSession.builder.remote(url).getOrCreate()
    for key, value in QUESTION_CONF.items():
        session.conf.set(key, value)
    return session


def is_remote(spark: Any) -> bool:
    """True when ``spark`` is a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def url_of(host: str, port: int) -> str:
    return f"sc://{host}:{port}"


def spark_home() -> Path:
    """The Spark that pyspark ships (its ``bin/spark-submit`` and ``jars/``), or ``SPARK_HOME``."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).parent


def server_argv(
    *,
    home: Path,
    port: int,
    master: str,
    settings: Mapping[str, str],
    jars: Sequence[str] | None,
) -> list[str]:
    """The ``spark-submit`` command line of a Connect server on ``LOOPBACK:port``.

    ``settings`` are a session's (:func:`jobs.common.session.session_settings`); ``jars`` the
    jars it adds (None: the cluster's own).  The server class is in pyspark's jars already.
    """
    conf = {
        **settings,
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.showConsoleProgress": "false",
    }
    argv = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", master,
            "--name", "aclstore-spark-connect"]  # fmt: skip
    if jars:
        argv += ["--jars", ",".join(jars)]
    for key, value in sorted(conf.items()):
        argv += ["--conf", f"{key}={value}"]
    return [*argv, "spark-internal"]


_NO_TABLE: Final = frozenset({"PATH_NOT_FOUND", "DELTA_TABLE_NOT_FOUND", "DELTA_MISSING_DELTA_TABLE"})
"""The error conditions of reading a Delta table that is not there (yet)."""


def read_delta(spark: Any, path: str) -> Any | None:
    """The Delta table at ``path`` as a DataFrame, or None when there is none, on either kind
    of session: a classic session asks Delta (``DeltaTable.isDeltaTable``), a Connect session
    (which has no Delta Python API without Delta's own Connect plugin) asks the server for
    the table's schema and reads "no such table" from the error's condition."""
    if not is_remote(spark):
        from delta.tables import DeltaTable

        if not DeltaTable.isDeltaTable(spark, path):
            return None
        return spark.read.format("delta").load(path)
    from pyspark.errors import AnalysisException

    frame = spark.read.format("delta").load(path)
    try:
        frame.schema  # noqa: B018 - analysed on the server: this is the question asked
    except AnalysisException as exc:
        if exc.getCondition() in _NO_TABLE:
            return None
        raise
    return frame


def table_bytes(spark: Any, path: str) -> int | None:
    """The size of the Delta table at ``path`` from its log (``DESCRIBE DETAIL``: no scan), or
    None when there is none."""
    from pyspark.errors import AnalysisException

    quoted = path.replace("`", "``")
    try:
        row = spark.sql(f"DESCRIBE DETAIL delta.`{quoted}`").select("sizeInBytes").collect()[0]
    except AnalysisException:
        return None
    return None if row[0] is None else int(row[0])


def tune_for_table(spark: Any, path: str) -> bool:
    """On a Connect session, run interpreted (:data:`SMALL_TABLE_CONF`) when the table at
    ``path`` is small; True when it did.  A classic session is left as it is (it may be the
    caller's own, shared with other work)."""
    if not is_remote(spark):
        return False
    size = table_bytes(spark, path)
    if size is None or size > SMALL_TABLE_BYTES:
        return False
    for key, value in SMALL_TABLE_CONF.items():
        spark.conf.set(key, value)
    return True
