"""What every Spark job shares: the session, the log it reads, the decoding of that log, and
the micro-batch runner.

* :mod:`jobs.common.session`: the SparkSession (Delta Lake, the jars from the cluster);
* :mod:`jobs.common.source`: which log a job reads (:class:`~jobs.common.source.LogSource`: a
  Kafka topic, or the embedded log through :mod:`jobs.common.sqlite_source`);
* :mod:`jobs.common.events`, :mod:`jobs.common.rows`: a change of the log as a value and as
  a row; :mod:`jobs.common.decode`, :mod:`jobs.common.worker`, :mod:`jobs.common.spark_decode`:
  records to events through the one fold of the log (in Python, over Arrow batches, and by
  Spark's Avro reader for the common event);
* :mod:`jobs.common.streaming`: one micro-batch query until stopped, and Delta's idempotent
  writes.

The history, the audit and the downgrade watch import these; nothing here imports them
(``tests/test_architecture.py``).
"""

from jobs.common.session import build_session
from jobs.common.source import LogSource

__all__ = ["LogSource", "build_session"]
