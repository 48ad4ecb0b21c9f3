"""The ``aclstore`` command line.

``aclstore dev kafka`` runs a real single-node KRaft broker on loopback from Maven Central
jars (for trying aclstore against Kafka without a Docker engine).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from store import __version__
from store.errors import StoreError


def _dev_kafka(args: argparse.Namespace) -> int:
    from store.runtime.kafka_process import LocalKafka

    broker = LocalKafka(Path(args.dir))
    bootstrap = broker.start()
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aclstore", description="An event-sourced Apache Kafka ACL store with replicas."
    )
    parser.add_argument("--version", action="version", version=f"aclstore {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    dev = commands.add_parser("dev", help="developer tools")
    dev_commands = dev.add_subparsers(dest="dev_command", metavar="TOOL", required=True)
    kafka = dev_commands.add_parser("kafka", help="run a local KRaft Kafka broker on loopback")
    kafka.add_argument("--dir", default="aclstore-data/kafka", help="broker data directory")
    kafka.set_defaults(handler=_dev_kafka)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        return int(handler(args))
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
