"""``aclstore downgrade-check --to N``: would rolling a replica back to event format N widen access?

KIP-290 warns that a reader older than the PREFIXED pattern type ignores prefixed ACLs: harmless
for an ALLOW, a silent hole for a DENY.  This command asks the node (``/v1/format/downgrade-check``),
which models the older reader over its own index at one log offset (the streamed access diff,
:mod:`store.access_stream`, in processes of its own: one per core) and answers with the exact
access diff: widened access first, with a witness request each, then narrowed.  With
``--format json`` the node's answer is printed as it arrives (one item of each list per line),
never parsed here.  Exit 1 when access would widen (a CI/CD gate), 0 when it would not.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from typing import Any, TextIO

from cli import acl_command as ac
from cli.access_output import print_diff_table
from cli.common import FAILURE_EXIT, add_client_options, store_client
from cli.downgrade_watch import add_watch_options
from cli.output import print_offset
from replicator.access.parallel import DowngradeDocument
from replicator.contract.access import DowngradeCheckAnswer
from store.access_diff import AccessDiff
from store.acl import AclBinding, parse_fields


def downgrade_check(args: argparse.Namespace) -> int:
    if args.to < 1:
        raise ac.AclCommandError(f"--to {args.to}: event formats start at 1")
    if args.watch or args.once:
        from cli.downgrade_watch import run_watch

        return run_watch(args)
    if args.spark or not args.master.startswith("local"):
        answer = spark_downgrade_check(args)
        if args.format == "json":
            DowngradeDocument.of_answer(answer).write(sys.stdout.buffer)
            sys.stdout.buffer.write(b"\n")
            sys.stdout.flush()
            return 0 if answer.safe else FAILURE_EXIT
        return _print_answer(args, answer)
    if args.format == "json":
        # the node's answer, copied as it comes: one item of each list per line
        with store_client(args) as client, WalkFollower(args):
            body = client.downgrade_check_body(args.to)
            out = sys.stdout.buffer
            for chunk in body.chunks():
                out.write(chunk)
            out.write(b"\n")
            out.flush()
        return 0 if body.safe else FAILURE_EXIT
    with store_client(args) as client, WalkFollower(args):
        answer = client.downgrade_check(args.to)
    return _print_answer(args, answer)


def _print_answer(args: argparse.Namespace, answer: DowngradeCheckAnswer) -> int:
    diff = AccessDiff(tuple(answer.widened), tuple(answer.narrowed))
    verdict = "SAFE: no access would widen" if answer.safe else "UNSAFE: access would widen"
    print(f"Downgrade to event format v{args.to}: {verdict}")
    print(
        f"{answer.stopping} binding(s) need a newer format: a replica with too_new_events=stop "
        "stops at the first; with ignore it decides without them"
    )
    for binding in answer.ignored:
        print(f"  {ac.binding_text(binding)}")
    print_diff_table(diff, "now", f"on v{args.to}")
    print_offset(answer.offset)
    return 0 if answer.safe else FAILURE_EXIT


def spark_downgrade_check(args: argparse.Namespace) -> DowngradeCheckAnswer:
    """The downgrade check on Spark (``--spark``, or a ``--master`` that is not local): the
    node's ACLs, streamed from ``/v1/acls/list``, and its settings, read at one offset, then
    the access diff distributed over ``--master`` (:func:`jobs.access_diff.distributed_access_diff`,
    folded as the node folds it); the same answer as the node's walk."""
    from cli.history import spark_session
    from jobs.access_diff import distributed_access_diff
    from replicator.access.analysis import log_settings
    from store.access_diff import AclState, older_reader_state

    with store_client(args) as client:
        for _ in range(3):  # the settings of the listing's offset: read again if they moved
            configs = client.describe_configs()
            listing = client.list_acls(min_offset=configs.offset)
            bindings = [
                AclBinding.of(*parse_fields((r.resource_type, r.name, r.pattern_type, *acl)))
                for r in listing for acl in r.acls
            ]  # fmt: skip
            assert listing.offset is not None  # set by the listing's end
            if listing.offset == configs.offset:
                break
            again = client.describe_configs()
            if again.configs == configs.configs:
                break
        else:
            raise ac.AclCommandError("the settings kept changing while the ACLs were listed: retry")
    settings = log_settings({e.name: e.value for e in configs.configs if not e.is_default})
    now = AclState.of(bindings, settings.super_users, settings.allow_everyone_if_no_acl_found)
    then, stopping = older_reader_state(now, args.to)
    diff = distributed_access_diff(spark_session(args), now, then, folded=True, partitions=args.partitions)
    return DowngradeCheckAnswer(
        safe=not diff.widened, to=args.to, ignored=sorted(now.bindings - then.bindings),
        stopping=stopping, widened=list(diff.widened), narrowed=list(diff.narrowed),
        offset=listing.offset,
    )  # fmt: skip


class WalkFollower:
    """The node's walk shown on stderr while the check runs, when stderr is a terminal
    (bindings read, rate, what is left, ETA: :class:`cli.present.progress.TerminalProgress`),
    asked of ``/v1/analysis`` twice a second on a connection of its own; nothing otherwise.
    The last line shows the walk as it ended."""

    INTERVAL_S = 0.5

    def __init__(self, args: argparse.Namespace, stream: TextIO | None = None) -> None:
        self.args = args
        self.stream = stream if stream is not None else sys.stderr
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> WalkFollower:
        if self.stream.isatty():
            from cli.present.progress import TerminalProgress

            self.view = TerminalProgress("downgrade-check: the node's walk", self.stream)
            self.thread = threading.Thread(target=self._follow, name="walk-follower", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread is None:
            return
        self.stop.set()
        self.thread.join()
        self.view.close()

    def _follow(self) -> None:
        from jobs.common.streaming import StreamProgress

        with contextlib.suppress(Exception), store_client(self.args) as client:  # a view only
            last = False
            while not last:
                last = self.stop.wait(self.INTERVAL_S)
                walk = client.analysis_progress()
                if walk.running or (last and walk.question is not None):  # then: as it ended
                    self.view(StreamProgress(records=walk.read, position=walk.read, end=walk.total))


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "downgrade-check", help="would a replica of an older event format widen access?",
        description="Read the live ACLs and settings, model a replica of event format --to "
        "that ignores what it cannot read, and print the access that would widen (exit 1) "
        "or narrow.",
    )  # fmt: skip
    add_client_options(parser)
    parser.add_argument("--to", type=int, required=True, metavar="N", help="the event format")
    add_watch_options(parser)
    spark = parser.add_argument_group("on Spark (the state read from the node, the diff on --master)")
    spark.add_argument("--spark", action="store_true",
                       help="run the check on Spark (also when --master is not local)")
    spark.add_argument("--partitions", type=int, default=8, metavar="N",
                       help="Spark partitions of the state (default: %(default)s)")
    parser.set_defaults(handler=downgrade_check)
