"""``python -m devtools jars|kafka``: the developer tools' command line.

* ``jars`` (the default): resolve every jar the tests, benchmarks and jobs need, or say in one
  line what is missing (``make jars`` runs it);
* ``plugin``: build the broker's authorizer plugin (``plugin/``) with Maven (``make plugin``);
* ``kafka [--dir DIR]``: a real single-node KRaft broker on loopback, for trying aclstore on
  Kafka without Docker; it prints its bootstrap address and runs until Ctrl-C or SIGTERM;
* ``module-seconds LOG``: write ``tests/module_seconds.json`` from a test run's log with
  ``--durations=0`` (``make test PYTEST_ARGS=--durations=0``), so that the scheduler hands out
  the longest test modules first.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from devtools.durations import MODULE_SECONDS, write_module_seconds
from devtools.errors import RuntimeSetupError
from devtools.kafka_process import LocalKafka
from devtools.maven import KAFKA_VERSION, kafka_classpath, require_java, write_spark_jars_file
from devtools.plugin import plugin_jar


def jars(_: argparse.Namespace) -> int:
    try:
        require_java()
        kafka = kafka_classpath()
        spark = write_spark_jars_file()
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    count = len(spark.read_text(encoding="utf-8").split())
    print(f"Kafka {KAFKA_VERSION}: {len(kafka)} jars; Spark connectors: {count} jars (listed in {spark})")
    return 0


def plugin(args: argparse.Namespace) -> int:
    try:
        jar = plugin_jar(rebuild=args.rebuild)
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"authorizer plugin for Kafka {KAFKA_VERSION}: {jar}")
    return 0


def kafka(args: argparse.Namespace) -> int:
    broker = LocalKafka(Path(args.dir))
    try:
        bootstrap = broker.start()
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"Kafka {bootstrap} ready (data in {args.dir}, log {broker.log_path}); Ctrl-C stops it")
    sys.stdout.flush()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    return 0


def module_seconds(args: argparse.Namespace) -> int:
    try:
        found = write_module_seconds(Path(args.log))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(found)} modules, {sum(found.values()):.0f} s in all: {MODULE_SECONDS}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools", description=__doc__.splitlines()[0])
    tools = parser.add_subparsers(dest="tool", metavar="TOOL")
    tools.add_parser("jars", help="resolve every jar, or say what is missing").set_defaults(
        handler=jars
    )
    build = tools.add_parser("plugin", help="build the broker's authorizer plugin with Maven")
    build.add_argument("--rebuild", action="store_true", help="even when the jar is up to date")
    build.set_defaults(handler=plugin)
    broker = tools.add_parser("kafka", help="run a local KRaft Kafka broker on loopback")
    broker.add_argument("--dir", default="aclstore-data/kafka", help="broker data directory")
    broker.set_defaults(handler=kafka)
    seconds = tools.add_parser("module-seconds", help="write tests/module_seconds.json from a test log")
    seconds.add_argument("log", help="the output of a test run with --durations=0")
    seconds.set_defaults(handler=module_seconds)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", jars)
    code: int = handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
