"""``python -m store.runtime``: resolve every jar the tests and jobs need, or say what is missing."""

from __future__ import annotations

import sys

from store.runtime.errors import RuntimeSetupError
from store.runtime.maven import KAFKA_VERSION, kafka_classpath, require_java, spark_connector_jars


def main() -> int:
    try:
        require_java()
        kafka = kafka_classpath()
        spark = spark_connector_jars()
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"Kafka {KAFKA_VERSION}: {len(kafka)} jars; Spark connectors: {len(spark)} jars")
    return 0


if __name__ == "__main__":
    sys.exit(main())
