"""``aclstore dev kafka``: a real local KRaft broker on loopback, for trying aclstore without Docker.

The broker runs from Kafka's jars on Maven Central (:mod:`store.runtime.kafka_process`).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any


def kafka(args: argparse.Namespace) -> int:
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


def add_parser(commands: Any) -> None:
    dev = commands.add_parser("dev", help="developer tools")
    tools = dev.add_subparsers(dest="dev_command", metavar="TOOL", required=True)
    parser = tools.add_parser("kafka", help="run a local KRaft Kafka broker on loopback")
    parser.add_argument("--dir", default="aclstore-data/kafka", help="broker data directory")
    parser.set_defaults(handler=kafka)
