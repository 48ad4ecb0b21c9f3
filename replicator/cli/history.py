"""``aclstore history``: the archive of every change, and questions about the past.

* ``history archive [--once]``: the Spark job that copies the change log into the history
  tables (runs until stopped; ``--once`` drains what is there and exits).
* ``history events``, ``snapshot``, ``who``, ``when``, ``diff``, ``restore``: answers read from
  the archive plus the tail of the log not archived yet; each says the log offset it reflects.

The log is chosen as ``aclstore serve`` chooses it: the embedded log under ``--data-dir``, or
``--bootstrap-servers`` (and ``--topic``).  The archive lives under ``--archive`` (any
Hadoop-compatible URI; default ``<data-dir>/history``).  Spark runs on ``--master``
(default ``local[2]``).  Times are ISO-8601 or epoch milliseconds (:mod:`jobs.history.timeparse`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replicator.cli.common import add_client_options
from replicator.cli.output import failed_results
from replicator.client import StoreClient
from replicator.http.wire import binding_json, filter_json
from store.acl import AclBinding, AclOperation, ResourceType
from store.errors import InvalidConfigError, StoreError
from store.principal import KafkaPrincipal, PrincipalFormatError

DEFAULT_MASTER = "local[2]"
DEFAULT_TOPIC = "aclstore-acls"
FORMATS = ("table", "json", "csv")


# --- argument types: a bad value is one line naming it, exit 2 (argparse's error path) ---------


def time_arg(text: str) -> int:
    """``--at``/``--from``/``--to``: epoch milliseconds from ISO-8601 or epoch ms."""
    from jobs.history.timeparse import TimeParseError, parse_time

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


def resource_type_arg(text: str) -> ResourceType:
    value = ResourceType.parse(text)
    if value.is_unknown or value is ResourceType.ANY:
        known = ", ".join(t.name for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY))
        raise argparse.ArgumentTypeError(f"unknown resource type {text!r}; use one of {known}")
    return value


def operation_arg(text: str) -> AclOperation:
    value = AclOperation.parse(text)
    if value.is_unknown or value is AclOperation.ANY:
        known = ", ".join(o.name for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY))
        raise argparse.ArgumentTypeError(f"unknown operation {text!r}; use one of {known}")
    return value


def principal_arg(text: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text))
    except PrincipalFormatError as exc:
        raise argparse.ArgumentTypeError(f"principal {text!r}: {exc.message}") from exc


# --- the parser ---------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, *, formats: bool = True) -> None:
    log = parser.add_argument_group("log and archive")
    a = log.add_argument
    a("--data-dir", default="aclstore-data", help="the node's data dir (embedded log; default: %(default)s)")
    a("--bootstrap-servers", help="read a Kafka topic as the log instead of the embedded one")
    a("--topic", help=f"the change-log topic (default: {DEFAULT_TOPIC}; needs --bootstrap-servers)")
    a("--archive", metavar="URI", help="the history tables' location, any Hadoop-compatible URI "
      "(default: <data-dir>/history)")  # fmt: skip
    a("--master", default=DEFAULT_MASTER, help="the Spark master (default: %(default)s)")
    if formats:
        parser.add_argument("--format", choices=FORMATS, default="table")


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
    _common(archive, formats=False)
    archive.add_argument("--once", action="store_true", help="drain what the log holds and exit")
    archive.add_argument("--checkpoint", metavar="URI", help="the streaming checkpoint "
                         "(default: under the archive)")  # fmt: skip
    archive.set_defaults(handler=_handler("archive"))

    events = sub.add_parser("events", help="the changes between two times")
    _common(events)
    events.add_argument("--from", dest="from_ms", type=time_arg, metavar="T")
    events.add_argument("--to", dest="to_ms", type=time_arg, metavar="T")
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
        check_log_args(args)
        run: Callable[[argparse.Namespace], int] = _RUNS[name]
        return run(args)

    return handle


@dataclass(frozen=True, slots=True)
class Applied:
    """What ``restore --apply`` wrote: the offset after each write request, and how many."""

    offsets: tuple[int, ...]
    deleted: int
    created: int


def apply_plan(
    client: StoreClient, *, creates: Sequence[AclBinding], deletes: Sequence[AclBinding]
) -> Applied:
    """Write a restore plan through the node's admin API: the deletes, then the creates.

    Each side is one request (one batch, so one write to the log); the admin API has no request
    that both deletes and creates, so a plan with both takes two.  A refused item stops with
    :class:`RestoreError` naming it, after what was already written.
    """
    offsets: list[int] = []
    deleted = created = 0
    if deletes:
        filters = [filter_json(b.to_filter()) for b in deletes]
        answer = client.call("POST", "/v1/acls/delete", {"filters": filters})
        failed = failed_results(answer)
        if failed:
            raise RestoreError(f"restore: deleting ACLs failed: {failed[0]['error']['message']}")
        deleted = sum(len(r["deleted"]) for r in answer["results"])
        offsets.append(int(answer["offset"]))
    if creates:
        answer = client.call("POST", "/v1/acls", {"bindings": [binding_json(b) for b in creates]})
        failed = failed_results(answer)
        if failed:
            raise RestoreError(
                f"restore: creating {failed[0]['binding']} failed: {failed[0]['error']['message']}"
            )
        created = len(creates)
        offsets.append(int(answer["offset"]))
    return Applied(tuple(offsets), deleted, created)


class RestoreError(StoreError):
    """The node refused part of a restore plan."""


def _not_wired(args: argparse.Namespace) -> int:
    raise InvalidConfigError(f"aclstore history {args.history_command}: not available in this build yet")


_RUNS: dict[str, Callable[[argparse.Namespace], int]] = {
    name: _not_wired for name in ("archive", "events", "snapshot", "who", "when", "diff", "restore")
}
