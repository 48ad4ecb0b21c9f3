"""``aclstore history``: the archive of every change, and questions about the past.

* ``history archive [--once]``: the Spark job that copies the change log into the history
  tables (runs until stopped; ``--once`` drains what is there and exits).
* ``history events``, ``snapshot``, ``who``, ``when``, ``diff``, ``restore``: answers read from
  the archive plus the tail of the log not archived yet; each says the log offset it reflects.

The log is chosen as ``aclstore serve`` chooses it: the embedded log under ``--data-dir``, or
``--bootstrap-servers`` (and ``--topic``).  The archive lives under ``--archive`` (any
Hadoop-compatible URI; default ``<data-dir>/history``).  Spark runs on ``--master``
(default ``local[2]``).  Times are ISO-8601 or epoch milliseconds (:mod:`cli.present.timeparse`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cli.common import add_client_options, add_log_config_option, log_client, store_client
from cli.output import first_failure
from cli.spark_connect import add_remote_option, command_session
from replicator.client import StoreClient
from replicator.contract.bindings import BINDING_OR_INVALID
from store.acl import AclBinding, AclOperation, ResourceType
from store.errors import InvalidConfigError, StoreError
from store.principal import KafkaPrincipal, PrincipalFormatError

if TYPE_CHECKING:
    from jobs.history import HistoryArchive, WhenAnswer

DEFAULT_MASTER = "local[2]"
DEFAULT_TOPIC = "aclstore-acls"
FORMATS = ("table", "json", "csv")
E = TypeVar("E", ResourceType, AclOperation)


# --- argument types: a bad value is one line naming it, exit 2 (argparse's error path) ---------


def time_arg(text: str) -> int:
    """``--at``/``--from``/``--to``: epoch milliseconds from ISO-8601 or epoch ms."""
    from cli.present.timeparse import TimeParseError, parse_time

    try:
        return parse_time(text)
    except TimeParseError as exc:
        raise argparse.ArgumentTypeError(exc.message) from exc


def offset_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"offset {text!r} is not a log offset (an integer >= 0)")
    return value


def after_arg(text: str) -> int:
    """``--after``: the cursor of a page, a log offset (the previous page's ``next``)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"--after {text!r} is not a log offset (an integer >= 0): give the previous page's "
            '"next", or leave --after out for the first page'
        )
    return value


def limit_arg(text: str) -> int:
    """``--limit``: a page's size."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"--limit {text!r} is not a page size (an integer >= 1): e.g. --limit 100, or leave "
            "it out for every event"
        )
    return value


def _specific(enum_type: type[E], what: str, text: str) -> E:
    """A named member of a Kafka enum: neither UNKNOWN nor ANY (a question names one value)."""
    value = enum_type.parse(text)
    if value.is_unknown or value.name == "ANY":
        known = ", ".join(m.name for m in enum_type if m.name not in ("UNKNOWN", "ANY"))
        raise argparse.ArgumentTypeError(f"unknown {what} {text!r}; use one of {known}")
    return value


def resource_type_arg(text: str) -> ResourceType:
    return _specific(ResourceType, "resource type", text)


def operation_arg(text: str) -> AclOperation:
    return _specific(AclOperation, "operation", text)


def principal_arg(text: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text))
    except PrincipalFormatError as exc:
        raise argparse.ArgumentTypeError(f"principal {text!r}: {exc.message}") from exc


# --- the parser ---------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, *, formats: bool = True, remote: bool = True) -> None:
    log = parser.add_argument_group("log and archive")
    a = log.add_argument
    a("--data-dir", default="aclstore-data", help="the node's data dir (embedded log; default: %(default)s)")
    a("--bootstrap-servers", help="read a Kafka topic as the log instead of the embedded one")
    a("--topic", help=f"the change-log topic (default: {DEFAULT_TOPIC}; needs --bootstrap-servers)")
    add_log_config_option(log)
    a("--archive", metavar="URI", help="the history tables' location, any Hadoop-compatible URI "
      "(default: <data-dir>/history)")  # fmt: skip
    a("--master", default=DEFAULT_MASTER, help="the Spark master (default: %(default)s)")
    if remote:
        add_remote_option(log)
    if formats:
        parser.add_argument("--format", choices=FORMATS, default="table")


def add_archive_options(parser: argparse.ArgumentParser) -> None:
    """The options that name the log and its archive (and the Spark that reads it), for a
    command outside ``history`` that asks the archive (``plan --at``)."""
    _common(parser, formats=False)


def _at(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--at", type=time_arg, metavar="T", help="a time: ISO-8601 or epoch ms")
    group.add_argument("--offset", type=offset_arg, metavar="N", help="a log offset")


def _resource(parser: argparse.ArgumentParser, *, repeatable: bool = False) -> None:
    a = parser.add_argument
    a("--resource-type", required=True, type=resource_type_arg, metavar="TYPE",
      help="TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN or USER")  # fmt: skip
    if repeatable:
        a("--resource-name", required=True, action="append", metavar="NAME",
          help="the resource's name; repeatable (one series each)")  # fmt: skip
    else:
        a("--resource-name", required=True, metavar="NAME")
    a("--operation", required=True, type=operation_arg, metavar="OP", help="e.g. READ, WRITE")
    a("--host", required=True, metavar="H", help="the client's host (IP address), as a broker sees it")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "history", help="the archive of every change; who had access to what, when",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )  # fmt: skip
    sub = parser.add_subparsers(dest="history_command", metavar="SUBCOMMAND", required=True)
    parser.set_defaults(handler=lambda args: parser.error("choose a subcommand"))

    archive = sub.add_parser("archive", help="copy the change log into the history tables")
    _common(archive, formats=False, remote=False)
    archive.add_argument("--once", action="store_true", help="drain what the log holds and exit")
    archive.add_argument("--checkpoint", metavar="URI", help="the streaming checkpoint "
                         "(default: under the archive)")  # fmt: skip
    archive.set_defaults(handler=_handler("archive"))

    events = sub.add_parser("events", help="the changes between two times")
    _common(events)
    events.add_argument("--from", dest="from_ms", type=time_arg, metavar="T")
    events.add_argument("--to", dest="to_ms", type=time_arg, metavar="T")
    events.add_argument("--after", type=after_arg, metavar="OFFSET",
                        help="only the events with a log offset above OFFSET (a page's cursor: "
                        'the previous page\'s "next")')  # fmt: skip
    events.add_argument("--limit", type=limit_arg, metavar="N",
                        help="at most N events (a page); the JSON answer is then "
                        '{"events", "next", "offset"} (default: every event, as a plain list)')  # fmt: skip
    events.set_defaults(handler=_handler("events"))

    snapshot = sub.add_parser("snapshot", help="the live bindings and settings at a time or offset")
    _common(snapshot)
    _at(snapshot)
    snapshot.set_defaults(handler=_handler("snapshot"))

    who = sub.add_parser("who", help="the principals allowed an operation on a resource then")
    _common(who)
    _resource(who)
    _at(who)
    who.set_defaults(handler=_handler("who"))

    when = sub.add_parser("when", help="the intervals in which a principal was allowed")
    _common(when)
    when.add_argument("--principal", required=True, action="append", type=principal_arg,
                      metavar="P", help="e.g. User:bob; repeatable (one series each)")  # fmt: skip
    _resource(when, repeatable=True)
    when.add_argument("--from", dest="from_ms", type=time_arg, metavar="T")
    when.add_argument("--to", dest="to_ms", type=time_arg, metavar="T")
    when.add_argument("--plot", type=Path, metavar="FILE.png", help="also draw the intervals")
    when.set_defaults(handler=_handler("when"))

    diff = sub.add_parser("diff", help="the bindings and settings added and removed")
    _common(diff)
    diff.add_argument("--from", dest="from_ms", type=time_arg, metavar="T", required=True)
    diff.add_argument("--to", dest="to_ms", type=time_arg, metavar="T", required=True)
    diff.add_argument("--access", action="store_true",
                      help="print the access that changed: the requests now allowed that were "
                      "denied (widened) and the reverse (narrowed), each with a witness")  # fmt: skip
    diff.set_defaults(handler=_handler("diff"))

    restore = sub.add_parser("restore", help="bring the live set back to a past state")
    _common(restore)
    _at(restore)
    restore.add_argument("--apply", action="store_true",
                         help="write the plan through the node's admin API (default: dry run)")  # fmt: skip
    add_client_options(restore, prints=False)
    restore.set_defaults(handler=_handler("restore"))


def check_log_args(args: argparse.Namespace) -> None:
    """What argparse cannot say: option combinations that cannot work."""
    if args.topic and not args.bootstrap_servers:
        raise InvalidConfigError("--topic needs --bootstrap-servers (the embedded log has no topics)")
    log_client(args)  # a bad --log-config: refused before Spark starts
    start, end = getattr(args, "from_ms", None), getattr(args, "to_ms", None)
    if start is not None and end is not None and start > end:
        raise InvalidConfigError(f"--from ({start} ms) is after --to ({end} ms): swap them")
    plot = getattr(args, "plot", None)
    if plot is not None and plot.suffix.lower() != ".png":
        raise InvalidConfigError(f"--plot {plot}: the picture is a PNG; name the file *.png")


def archive_location(args: argparse.Namespace) -> str:
    return str(args.archive) if args.archive else str(Path(args.data_dir).resolve() / "history")


def _handler(name: str) -> Callable[[argparse.Namespace], int]:
    def handle(args: argparse.Namespace) -> int:
        from jobs.history import BeforeHistoryError

        check_log_args(args)
        run: Callable[[argparse.Namespace], int] = _RUNS[name]
        try:
            return run(args)
        except BeforeHistoryError as exc:  # a question the command line got wrong: exit 2
            raise InvalidConfigError(exc.message) from exc

    return handle


@dataclass(frozen=True, slots=True)
class Applied:
    """What ``restore --apply`` wrote: the offset after each write request, and how many."""

    offsets: tuple[int, ...]
    deleted: int
    created: int


def apply_plan(
    client: StoreClient,
    *,
    creates: Sequence[AclBinding],
    deletes: Sequence[AclBinding],
    settings: Sequence[tuple[str, str | None]] = (),
) -> Applied:
    """Write a restore plan through the node's admin API in ONE request (``/v1/acls/alter``),
    so the deletes, the creates and the settings land as one batch at one offset.

    A refused setting refuses the whole request (nothing written); a refused binding is
    reported by :class:`RestoreError` naming it, after the rest was written.
    """
    if not (creates or deletes or settings):
        return Applied((), 0, 0)
    answer = client.alter_acls(
        deletes=[b.to_filter() for b in deletes], creates=creates, configs=dict(settings)
    )
    refused_delete = first_failure(answer.delete_results)
    if refused_delete is not None:
        raise RestoreError(f"restore: deleting ACLs failed: {refused_delete[1].message}")
    refused_create = first_failure(answer.create_results)
    if refused_create is not None:
        result, error = refused_create
        shown = BINDING_OR_INVALID.write(result.binding)  # the binding as the node answered it
        raise RestoreError(f"restore: creating {shown} failed: {error.message}")
    deleted = sum(len(r.deleted) for r in answer.delete_results)
    return Applied((answer.offset,), deleted, len(creates))


class RestoreError(StoreError):
    """The node refused part of a restore plan."""


# --- running: Spark, the log, the archive ------------------------------------------------------


def spark_session(args: argparse.Namespace, *, streaming: bool = False) -> Any:
    """The session of this command (:func:`cli.spark_connect.command_session`)."""
    return command_session(args, "aclstore-history", default_master=DEFAULT_MASTER, streaming=streaming)


def log_source(args: argparse.Namespace) -> Any:
    from jobs.common import LogSource

    if args.bootstrap_servers:
        return LogSource.kafka(
            args.bootstrap_servers, args.topic or DEFAULT_TOPIC, client=log_client(args)
        )
    return LogSource.embedded(Path(args.data_dir).resolve() / "log")


def _print(args: argparse.Namespace, grid: Any, offset: int | None, as_json: Any) -> None:
    from cli.present.render import render

    sys.stdout.write(render(args.format, grid, offset, as_json))
    sys.stdout.flush()


def history_archive(args: argparse.Namespace, *, streaming: bool = False) -> HistoryArchive:
    """The archive this command asks (or, ``streaming``, writes): ``--archive`` of the log
    ``--data-dir`` or ``--bootstrap-servers`` names, read with this command's session."""
    from jobs.common.connect import tune_for_table
    from jobs.history import HistoryArchive
    from jobs.history.tables import validity_path

    spark = spark_session(args, streaming=streaming)
    location = archive_location(args)
    tune_for_table(spark, validity_path(location))
    return HistoryArchive.for_path(spark, location, source=log_source(args))


def _point(args: argparse.Namespace) -> dict[str, int | None]:
    return {"at_ms": args.at, "offset": args.offset}


def run_archive(args: argparse.Namespace) -> int:
    from cli.present.progress import TerminalProgress

    archive = history_archive(args, streaming=True)
    progress = TerminalProgress("history archive")
    try:
        archive.update(args.checkpoint or f"{archive.location.rstrip('/')}/_checkpoint", once=args.once,
                       on_progress=progress)  # fmt: skip
    finally:
        progress.close()
    return 0


def run_events(args: argparse.Namespace) -> int:
    from cli.present.history import events_grid, events_json, events_page_json

    answer = history_archive(args).events(
        from_ms=args.from_ms, to_ms=args.to_ms, after=args.after, limit=args.limit
    )
    paged = args.after is not None or args.limit is not None
    as_json = events_page_json(answer) if paged else events_json(answer)
    _print(args, events_grid(answer.events), answer.offset, as_json)
    if args.format == "json" and not paged:  # the list has no room for it; the others end with it
        print(f"(log offset {answer.offset})", file=sys.stderr)
    if args.format != "json" and answer.next_after is not None:
        print(f"(more follow: the next page is --after {answer.next_after})", file=sys.stderr)
    return 0


def run_snapshot(args: argparse.Namespace) -> int:
    from cli.present.history import snapshot_grid, snapshot_json

    answer = history_archive(args).snapshot(**_point(args))
    _print(args, snapshot_grid(answer), answer.offset, snapshot_json(answer))
    return 0


def run_who(args: argparse.Namespace) -> int:
    from cli.present.history import who_grid, who_json

    answer = history_archive(args).who(
        resource_type=args.resource_type, resource_name=args.resource_name, operation=args.operation,
        host=args.host, **_point(args),
    )  # fmt: skip
    _print(args, who_grid(answer), answer.offset, who_json(answer))
    return 0


def run_when(args: argparse.Namespace) -> int:
    from cli.present.history import when_grid, when_json
    from cli.present.render import Grid, csv_text, json_text, table_text

    series: list[tuple[str, WhenAnswer]] = []
    archive = history_archive(args)
    for principal in args.principal:
        for name in args.resource_name:
            answer = archive.when(
                principal=principal, host=args.host, operation=args.operation,
                resource_type=args.resource_type, resource_name=name, from_ms=args.from_ms, to_ms=args.to_ms,
            )  # fmt: skip
            label = f"{principal} {args.operation.name} {args.resource_type.name}:{name}"
            series.append((label, answer))
    offset = max(a.offset for _, a in series)
    if len(series) == 1:
        _print(args, when_grid(series[0][1].intervals), offset, when_json(series[0][1]))
    elif args.format == "json":
        sys.stdout.write(json_text([{"series": label, **when_json(a)} for label, a in series]))
    else:
        grids = [when_grid(a.intervals, series=label) for label, a in series]
        merged = Grid(grids[0].header, tuple(r for g in grids for r in g.rows))
        text = table_text if args.format == "table" else csv_text
        sys.stdout.write(text(merged, offset))
    if args.plot is not None:
        from cli.present.history_plot import Series, save_png

        end_ms = args.to_ms if args.to_ms is not None else _latest_ms(series)
        save_png([Series(label=label, intervals=a.intervals) for label, a in series], args.plot,
                 end_ms=end_ms)  # fmt: skip
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def _latest_ms(series: Sequence[tuple[str, WhenAnswer]]) -> int:
    """The right edge for intervals still open: now, or the latest time an answer shows."""
    import time

    times = [t for _, a in series for i in a.intervals for t in (i.from_ms, i.to_ms) if t is not None]
    return max([int(time.time() * 1000), *times])


def run_diff(args: argparse.Namespace) -> int:
    from cli.present.history import access_change_text, diff_grid, diff_json

    archive = history_archive(args)
    if args.access:
        change = archive.access_change(from_ms=args.from_ms, to_ms=args.to_ms)
        sys.stdout.write(access_change_text(args.format, change))
        sys.stdout.flush()
        return 0
    answer = archive.diff(from_ms=args.from_ms, to_ms=args.to_ms)
    _print(args, diff_grid(answer), answer.to_offset, diff_json(answer))
    return 0


def run_restore(args: argparse.Namespace) -> int:
    from cli.present.history import restore_grid, restore_json

    plan = history_archive(args).restore(**_point(args))
    if not args.apply:
        _print(args, restore_grid(plan), plan.offset, restore_json(plan))
        return 0
    with store_client(args) as client:
        applied = apply_plan(
            client, creates=plan.creates, deletes=plan.deletes, settings=plan.settings
        )
    print(f"restored to offset {plan.at_offset}: {applied.deleted} deleted, {applied.created} created "
          f"(log offset {applied.offsets[-1] if applied.offsets else plan.offset})")  # fmt: skip
    return 0


_RUNS: dict[str, Callable[[argparse.Namespace], int]] = {
    "archive": run_archive, "events": run_events, "snapshot": run_snapshot, "who": run_who,
    "when": run_when, "diff": run_diff, "restore": run_restore,
}  # fmt: skip
