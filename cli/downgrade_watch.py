"""``aclstore downgrade-check --to N --watch [--once]``: the downgrade check, kept over the log.

A Spark Structured Streaming job (:mod:`jobs.downgrade.job`) reads the change log as ``history
archive`` does, keeps the live state and judges it at the end of every micro-batch.  Each time
the state becomes unsafe to downgrade to event format N, or safe again, it appends one alert to
the ``alerts`` Delta table under ``--watch-location`` (default
``<data-dir>/downgrade-watch/to-N``); it rewrites ``--metrics-file`` (Prometheus text format,
for node_exporter's textfile collector) after every batch.  ``--once`` drains the log and
prints the verdict, since when it has held if unsafe, and exits 1 when unsafe, as the check.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.common import FAILURE_EXIT, add_log_config_option
from cli.history import DEFAULT_MASTER, check_log_args, log_source, spark_session
from cli.output import print_json
from store.errors import InvalidConfigError


def add_watch_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("watch (a Spark streaming job over the log)")
    a = group.add_argument
    a("--watch", action="store_true", help="keep checking: alert on every change of the verdict")
    a("--once", action="store_true", help="with --watch: drain the log, print the verdict, exit")
    a("--data-dir", default="aclstore-data", help="the node's data dir (embedded log; default: %(default)s)")
    a("--bootstrap-servers", help="read a Kafka topic as the log instead of the embedded one")
    a("--topic", help="the change-log topic (needs --bootstrap-servers)")
    add_log_config_option(group)
    a("--master", default=DEFAULT_MASTER, help="the Spark master (default: %(default)s)")
    a("--watch-location", metavar="URI", help="the alerts and state tables (any Hadoop-compatible "
      "URI; default: <data-dir>/downgrade-watch/to-N)")  # fmt: skip
    a("--checkpoint", metavar="URI", help="the streaming checkpoint (default: under the location)")
    a("--metrics-file", type=Path, metavar="FILE.prom", help="the Prometheus text file to keep "
      "(default: <data-dir>/aclstore_downgrade_to_N.prom)")  # fmt: skip


def watch_location(args: argparse.Namespace) -> str:
    if args.watch_location:
        return str(args.watch_location)
    return str(Path(args.data_dir).resolve() / "downgrade-watch" / f"to-{args.to}")


def run_watch(args: argparse.Namespace) -> int:
    from jobs.downgrade.job import run_watch as watch

    if args.once and not args.watch:
        raise InvalidConfigError("--once goes with --watch (downgrade-check alone runs once)")
    check_log_args(args)
    location = watch_location(args)
    checkpoint = args.checkpoint or f"{location.rstrip('/')}/_checkpoint"
    metrics = args.metrics_file or Path(args.data_dir).resolve() / f"aclstore_downgrade_to_{args.to}.prom"
    spark = spark_session(args, streaming=args.watch)
    done = watch(spark, log_source(args), location, checkpoint, version=args.to,
                 once=args.once, metrics_file=metrics)  # fmt: skip
    print_verdict(args.format, done)
    return 0 if done.verdict.safe else FAILURE_EXIT


def _alert_json(alert: Any) -> dict[str, Any]:
    from cli.present.timeparse import format_time

    w = alert.witness
    return {
        "offset": alert.offset,
        "time": None if alert.time_ms is None else format_time(alert.time_ms),
        "transition": alert.transition,
        "widened": alert.widened,
        "ignored": alert.ignored,
        "witness": None if w is None else {
            "principal": w.principal, "host": w.host, "operation": w.operation.name,
            "resourceType": w.resource_type.name, "resourceName": w.resource_name,
        },
    }  # fmt: skip


def print_verdict(fmt: str, watch: Any) -> None:
    """The last verdict of a watch, since when it has held if unsafe, and its alerts."""
    verdict, since = watch.verdict, watch.since
    if fmt == "json":
        print_json({
            "safe": verdict.safe, "to": verdict.version, "offset": verdict.offset,
            "widened": verdict.widened, "ignored": verdict.ignored,
            "unsafeSince": None if since is None else _alert_json(since),
            "alerts": [_alert_json(a) for a in watch.alerts],
        })  # fmt: skip
        return
    if verdict.safe:
        print(f"Downgrade to event format v{verdict.version}: SAFE: no access would widen")
    else:
        held = "" if since is None else f" since offset {since.offset} ({_alert_json(since)['time']})"
        w = verdict.witness
        example = "" if w is None else (
            f", e.g. {w.principal} from {w.host}: {w.operation.name} {w.resource_type.name} "
            f"{w.resource_name!r}"
        )  # fmt: skip
        print(f"Downgrade to event format v{verdict.version}: UNSAFE{held}: "
              f"{verdict.widened} widened set(s){example}")  # fmt: skip
    print(f"alerts: {len(watch.alerts)}")
    for alert in watch.alerts:
        row = _alert_json(alert)
        print(f"  {row['offset']}  {row['time']}  {alert.transition}  widened {alert.widened}")
    print(f"(log offset {verdict.offset})")
