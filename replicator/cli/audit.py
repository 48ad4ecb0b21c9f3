"""``aclstore audit``: the audit log's decisions in a table, and what they say.

* ``audit run [--once]``: the Spark job that copies the audit log (``<data-dir>/audit``, or the
  ``<topic>-audit`` topic) into the decisions table, each event once (runs until stopped;
  ``--once`` drains what is there and exits);
* ``audit report --since T``: totals by result and the new denials since ``T``, from the table.

The log is chosen as ``aclstore serve`` chooses it; the table lives under ``--table`` (any
Hadoop-compatible URI; default ``<data-dir>/audit-table``); Spark runs on ``--master``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from replicator.cli.history import DEFAULT_MASTER, DEFAULT_TOPIC, FORMATS, time_arg
from store.errors import InvalidConfigError


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "audit", help="the audit log's decisions: the streaming job and its report",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )  # fmt: skip
    sub = parser.add_subparsers(dest="audit_command", metavar="SUBCOMMAND", required=True)
    parser.set_defaults(handler=lambda args: parser.error("choose a subcommand"))

    run = sub.add_parser("run", help="copy the audit log into the decisions table")
    _common(run)
    run.add_argument("--once", action="store_true", help="drain what the log holds and exit")
    run.add_argument("--checkpoint", metavar="URI", help="the streaming checkpoint "
                     "(default: under the table)")  # fmt: skip
    run.set_defaults(handler=run_job)

    report = sub.add_parser("report", help="totals and new denials since a time")
    _common(report)
    report.add_argument("--since", required=True, type=time_arg, metavar="T",
                        help="ISO-8601 or epoch ms")  # fmt: skip
    report.add_argument("--format", choices=FORMATS, default="table")
    report.set_defaults(handler=run_report)


def _common(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--data-dir", default="aclstore-data", help="the node's data dir (default: %(default)s)")
    a("--bootstrap-servers", help="read the audit topic on Kafka instead of the embedded log")
    a("--topic", help=f"the change-log topic (default: {DEFAULT_TOPIC}; needs --bootstrap-servers)")
    a("--audit-topic", help="the audit topic (default: <topic>-audit)")
    a("--table", metavar="URI", help="the decisions table's location (default: "
      "<data-dir>/audit-table)")  # fmt: skip
    a("--master", default=DEFAULT_MASTER, help="the Spark master (default: %(default)s)")


def _location(args: argparse.Namespace) -> str:
    return str(args.table) if args.table else str(Path(args.data_dir).resolve() / "audit-table")


def _session(args: argparse.Namespace) -> Any:
    from jobs.session import build_session

    return build_session(
        "aclstore-audit", master=args.master, conf={"spark.ui.showConsoleProgress": "false"}
    )


def run_job(args: argparse.Namespace) -> int:
    from jobs.audit.job import run_audit
    from jobs.history.archive import LogSource

    if (args.topic or args.audit_topic) and not args.bootstrap_servers:
        raise InvalidConfigError("--topic and --audit-topic need --bootstrap-servers")
    if args.bootstrap_servers:
        topic = args.audit_topic or f"{args.topic or DEFAULT_TOPIC}-audit"
        source = LogSource.kafka(args.bootstrap_servers, topic)
    else:
        source = LogSource.embedded(Path(args.data_dir).resolve() / "audit")
    location = _location(args)
    checkpoint = args.checkpoint or f"{location.rstrip('/')}/_checkpoint"
    run_audit(_session(args), source, location, checkpoint, once=args.once)
    return 0


def run_report(args: argparse.Namespace) -> int:
    from jobs.audit.job import decisions_path
    from jobs.audit.report import report_json
    from jobs.history.render import cells, grid, render

    spark = _session(args)
    table = spark.read.format("delta").load(decisions_path(_location(args)))
    report = report_json(table, args.since)
    header = ("principal", "resourceType", "resourceName", "operation", "time", "rule",
              "aclOffset")  # fmt: skip
    rows = [cells(*(d[h] for h in header)) for d in report["newDenials"]]
    if args.format == "table":
        totals = report["totals"]
        sys.stdout.write(f"decisions: ALLOWED {totals['ALLOWED']}, DENIED {totals['DENIED']} "
                         "(every denial is recorded; allows are sampled)\nnew denials:\n")  # fmt: skip
    sys.stdout.write(render(args.format, grid(header, rows), report["throughOffset"], report))
    sys.stdout.flush()
    return 0
