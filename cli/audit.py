"""``aclstore audit``: the audit log's decisions in a table, and what they say.

* ``audit run [--once]``: the Spark job that copies the audit log (``<data-dir>/audit``, or the
  ``<topic>-audit`` topic) into the decisions table, each event once (runs until stopped;
  ``--once`` drains what is there and exits);
* ``audit report --since T``: totals by result and the new denials since ``T``, from the table;
  each new denial with its cause (the change after which the request, allowed before, was
  denied: from the history archive under ``--archive`` and the change log), the unused
  grants (live ALLOW bindings no audited decision named since ``T``), and the most denied
  principals and resources; ``--plot FILE.png`` draws the denials over time.

The log is chosen as ``aclstore serve`` chooses it; the table lives under ``--table`` (any
Hadoop-compatible URI; default ``<data-dir>/audit-table``); Spark runs on ``--master``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.common import add_log_config_option, log_client
from cli.history import DEFAULT_MASTER, DEFAULT_TOPIC, FORMATS, time_arg
from cli.spark_connect import add_remote_option, command_session
from jobs.audit.report import DEFAULT_TOP
from jobs.audit.transform import DEFAULT_WINDOW_DAYS
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
    _window_days(run)
    run.set_defaults(handler=run_job)

    report = sub.add_parser("report", help="totals and new denials since a time")
    _common(report)
    report.add_argument("--since", required=True, type=time_arg, metavar="T",
                        help="ISO-8601 or epoch ms")  # fmt: skip
    report.add_argument("--format", choices=FORMATS, default="table")
    report.add_argument("--archive", metavar="URI", help="the history archive that names the "
                        "causes (default: <data-dir>/history)")  # fmt: skip
    report.add_argument("--plot", type=Path, metavar="FILE.png", help="draw the denials over time")
    add_remote_option(report)
    report.add_argument("--top", type=int, default=DEFAULT_TOP,
                        help="how many principals and resources (default: %(default)s)")  # fmt: skip
    _window_days(report)
    report.set_defaults(handler=run_report)


def _window_days(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--window-days", type=int, default=DEFAULT_WINDOW_DAYS, metavar="N",
                        help="a denial is new without one of the principal on the resource in "
                        "the N days before (default: %(default)s)")  # fmt: skip


def _common(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--data-dir", default="aclstore-data", help="the node's data dir (default: %(default)s)")
    a("--bootstrap-servers", help="read the audit topic on Kafka instead of the embedded log")
    a("--topic", help=f"the change-log topic (default: {DEFAULT_TOPIC}; needs --bootstrap-servers)")
    a("--audit-topic", help="the audit topic (default: <topic>-audit)")
    add_log_config_option(parser)
    a("--table", metavar="URI", help="the decisions table's location (default: "
      "<data-dir>/audit-table)")  # fmt: skip
    a("--master", default=DEFAULT_MASTER, help="the Spark master (default: %(default)s)")


def audit_table_location(args: argparse.Namespace) -> str:
    """The decisions table's location: ``--table``, else ``<data-dir>/audit-table``."""
    return _location(args)


def _location(args: argparse.Namespace) -> str:
    return str(args.table) if args.table else str(Path(args.data_dir).resolve() / "audit-table")


def _session(args: argparse.Namespace, *, streaming: bool = False) -> Any:
    return command_session(args, "aclstore-audit", default_master=DEFAULT_MASTER, streaming=streaming)


def run_job(args: argparse.Namespace) -> int:
    from jobs.audit.job import run_audit
    from jobs.common import LogSource

    if (args.topic or args.audit_topic) and not args.bootstrap_servers:
        raise InvalidConfigError("--topic and --audit-topic need --bootstrap-servers")
    client = log_client(args)
    if args.bootstrap_servers:
        topic = args.audit_topic or f"{args.topic or DEFAULT_TOPIC}-audit"
        source = LogSource.kafka(args.bootstrap_servers, topic, client=client)
    else:
        source = LogSource.embedded(Path(args.data_dir).resolve() / "audit")
    location = _location(args)
    checkpoint = args.checkpoint or f"{location.rstrip('/')}/_checkpoint"
    if args.window_days < 1:
        raise InvalidConfigError(f"--window-days must be at least 1, got {args.window_days}")
    from cli.present.progress import TerminalProgress

    progress = TerminalProgress("audit run")
    try:
        run_audit(_session(args, streaming=True), source, location, checkpoint, once=args.once,
                  window_days=args.window_days, on_progress=progress)  # fmt: skip
    finally:
        progress.close()
    return 0


def run_report(args: argparse.Namespace) -> int:
    from cli.present.audit import report_text
    from jobs.audit.cause import explain
    from jobs.audit.job import decisions_path
    from jobs.audit.report import audit_report
    from jobs.audit.unused import report_unused
    from jobs.history import HistoryArchive

    if args.plot is not None and args.plot.suffix.lower() != ".png":
        raise InvalidConfigError(f"--plot {args.plot}: the picture is a PNG; name the file *.png")
    location, changes = _history(args)
    spark = _session(args)
    history = HistoryArchive.for_path(spark, location, source=changes)
    table = spark.read.format("delta").load(decisions_path(_location(args)))
    unused = report_unused(history, table, args.since)
    report = audit_report(table, args.since, window_days=args.window_days, top=args.top,
                          unused_grants=unused)  # fmt: skip
    denied = (d.event_id for d in report.new_denials)
    report = report.with_causes(explain(history, table, denied))
    sys.stdout.write(report_text(args.format, report))
    sys.stdout.flush()
    if args.plot is not None:
        from cli.present.audit_plot import save_png
        from jobs.audit.chart import report_chart

        save_png(report_chart(table, args.since, report.new_denials), args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def _history(args: argparse.Namespace) -> tuple[str, Any]:
    """The history archive's location and the change log (None: an embedded log not there)."""
    from jobs.common import LogSource

    location = str(args.archive) if args.archive else str(Path(args.data_dir).resolve() / "history")
    if args.topic and not args.bootstrap_servers:
        raise InvalidConfigError("--topic needs --bootstrap-servers (the embedded log has no topics)")
    if args.bootstrap_servers:
        topic = args.topic or DEFAULT_TOPIC
        return location, LogSource.kafka(args.bootstrap_servers, topic, client=log_client(args))
    log_dir = Path(args.data_dir).resolve() / "log"
    return location, LogSource.embedded(log_dir) if log_dir.exists() else None
