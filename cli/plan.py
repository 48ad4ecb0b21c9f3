"""``aclstore plan -f FILE...``: what applying desired-state files would change.

The bindings to add and to remove within the files' scope, the exact access that would widen
and narrow (each with a witness request, from the node's dry run) and the log offset the plan
was computed at (:mod:`cli.gitops`).  Exit 0 no change, 2 changes, 1 error (Terraform's
``-detailed-exitcode``); ``--format json`` prints one stable document (:mod:`cli.present.gitops`)
and nothing else on stdout; ``--out FILE`` saves it for ``aclstore apply --plan FILE``;
``--deny-widen`` exits 1 when access would widen (a review rule: widening needs a second
approver).  ``--store URL2`` plans against another node (promotion from one environment to the
next); ``--at T`` or ``--at-offset N`` against a past point, read from the history archive
(``aclstore history archive``) and the log's tail (disaster recovery: what would these files
change compared with then?).  A plan against a past point cannot be saved or applied.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from cli.access_output import delta_text
from cli.common import FAILURE_EXIT, add_client_options, exit_one_on_option_errors, store_client
from cli.gitops import (
    CHANGES_EXIT,
    Plan,
    PlanError,
    add_files_option,
    exit_one_on_errors,
    list_bindings,
    log,
    plan_files,
    read_desired,
)
from cli.history import add_archive_options, offset_arg, time_arg
from cli.output import print_json
from cli.present.gitops import flip_json, plan_document, plan_lines, replay_lines
from cli.present.timeparse import TimeParseError, since_arg
from replicator.client import StoreClient
from store.access_diff import AclState, change_diff
from store.acl import ANY_FILTER
from store.desired import DesiredState, apply_reconciliation, reconcile
from store.desired.replay import replay
from store.settings import StoreSettings


def write_plan(path: Path, document: dict[str, Any]) -> None:
    """Write the saved plan whole or not at all (a temporary file renamed over it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def plan_at(args: argparse.Namespace, desired: DesiredState) -> tuple[Plan, dict[str, Any]]:
    """The files against the state of a past point (``--at T`` or ``--at-offset N``), read from
    the history archive and the log's tail; the access diff computed here, by the same engine
    the node's dry run runs (:func:`store.access_diff.change_diff`)."""
    from cli.history import archive_location, history_archive

    snapshot = history_archive(args).snapshot(at_ms=args.at, offset=args.at_offset)
    then = set(snapshot.bindings)
    r = reconcile(desired.bindings, desired.scope, then)
    config = StoreSettings(dict(snapshot.settings)).authorizer_config()
    settings = (config.super_users, config.allow_everyone_if_no_acl_found)
    diff = change_diff(AclState.of(then, *settings), AclState.of(apply_reconciliation(then, r), *settings))
    computed = Plan(desired, r, snapshot.offset, snapshot.offset, diff.widened, diff.narrowed)
    document = plan_document(computed, f"history of {archive_location(args)}")
    document["at"] = {"offset": snapshot.offset, "timeMs": snapshot.time_ms}
    return computed, document


REPLAY_COVERAGE = (
    "every denial is audited; allows only by sample (the node's --audit-allow-sample-rate) and "
    "each binding's first ALLOWED decision of every hour, so requests seen only as allowed are "
    "undercounted, and an allowed request never sampled in the window is missing"
)


def _since(text: str) -> int:
    try:
        return since_arg(text)
    except TimeParseError as exc:
        raise argparse.ArgumentTypeError(f"{exc.message}; or a duration: 7d, 24h, 30m, 90s") from exc


def replay_seen(args: argparse.Namespace, client: StoreClient, computed: Plan) -> dict[str, Any]:
    """``--replay-since``: the requests of the audit trail since then, decided over the live
    state and over the planned one; those that flip, with how often they were seen."""
    from pyspark.errors import AnalysisException

    from cli.audit import audit_table_location
    from cli.history import spark_session
    from jobs.audit.job import decisions_path
    from jobs.audit.replay import seen_requests

    spark = spark_session(args)
    table = decisions_path(audit_table_location(args))
    try:
        seen = seen_requests(spark.read.format("delta").load(table), args.replay_since)
    except AnalysisException as exc:
        raise PlanError(
            f"no audit decisions table at {table} ({str(exc).splitlines()[0]}); fill it with "
            "`aclstore audit run --once`, or name it with --table"
        ) from exc
    live, _, _ = list_bindings(client, [ANY_FILTER])
    settings = {e.name: e.value for e in client.describe_configs().configs if not e.is_default}
    config = StoreSettings(settings).authorizer_config()
    flips = replay(seen, live, apply_reconciliation(live, computed.reconciliation), config)
    return {
        "sinceMs": args.replay_since, "requestsSeen": len(seen),
        "auditedDecisions": sum(r.count for r in seen), "coverage": REPLAY_COVERAGE,
        "flips": [flip_json(f) for f in flips],
    }  # fmt: skip


@exit_one_on_errors
def plan(args: argparse.Namespace) -> int:
    if args.against is not None:  # another node: another environment (promotion, DR checks)
        if args.store is not None and args.store != args.against:
            raise PlanError(f"--against {args.against} and --store {args.store}: give the node once")
        args.store = args.against
    if args.at is not None or args.at_offset is not None:
        if args.out is not None:
            raise PlanError("a plan against a past point (--at) cannot be applied: leave out --out")
        computed, document = plan_at(args, read_desired(args.files))
    else:
        with store_client(args) as client:
            computed = plan_files(client, args.files)
            document = plan_document(computed, client.config.url)
            if args.replay_since is not None:
                document["replay"] = replay_seen(args, client, computed)
    if args.out is not None:
        write_plan(args.out, document)
        log(f"plan saved to {args.out}: apply it with `aclstore apply --plan {args.out}`")
    if args.format == "json":
        print_json(document)
    else:
        for line in plan_lines(computed):
            print(line)
        if "replay" in document:
            for line in replay_lines(document["replay"]):
                print(line)
    if args.deny_widen and computed.widened:
        log(
            f"error: the plan widens access ({len(computed.widened)} set(s), e.g. "
            f"{delta_text(computed.widened[0])}) and --deny-widen refuses that; have the widening "
            "approved and plan without --deny-widen"
        )
        return FAILURE_EXIT
    return CHANGES_EXIT if computed.reconciliation.changes else 0


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "plan", help="what applying desired-state ACL files would change (exit 0 none, 2 changes, 1 error)",
        description="Compare desired-state ACL files with the live ACLs in their scope: the bindings "
        "to add and remove, the exact access that would widen and narrow with a witness each, and "
        "the log offset of the plan. Exit 0: no change; 2: changes; 1: error.",
    )  # fmt: skip
    exit_one_on_option_errors(parser)
    add_files_option(parser)
    add_client_options(parser)
    parser.add_argument("--out", type=Path, metavar="PLANFILE", help="save the plan (JSON) for apply --plan")
    parser.add_argument("--deny-widen", action="store_true", help="exit 1 when the plan would widen access")
    when = parser.add_argument_group("another environment or a past point (promotion, disaster recovery)")
    when.add_argument(
        "--against", metavar="URL", help="plan against another node (its own --command-config): "
        "the same as --store URL, said as a promotion check reads",
    )  # fmt: skip
    at = when.add_mutually_exclusive_group()
    at.add_argument(
        "--at", type=time_arg, metavar="T", help="plan against the state at time T (ISO-8601 or epoch ms)"
    )
    at.add_argument("--at-offset", type=offset_arg, metavar="N", help="...at log offset N")
    add_archive_options(parser)
    replayed = parser.add_argument_group("recent traffic")
    replayed.add_argument(
        "--replay-since", metavar="SINCE", type=_since,
        help="replay the audited requests since SINCE (7d, 24h, 30m, or a time) against the plan",
    )  # fmt: skip
    replayed.add_argument(
        "--table", metavar="URI", help="the audit decisions table (default: <data-dir>/audit-table)"
    )
    parser.set_defaults(handler=plan)
