"""``aclstore apply -f FILE...`` or ``aclstore apply --plan PLANFILE``: make the live ACLs in
the scope exactly the declared ones.

One ``/v1/acls/alter`` request (so the change lands at one offset), guarded by the plan's
offset: the node refuses it (409) if a binding in the scope was created or deleted after that
offset, naming what changed, who changed it and when, and writes nothing.  A plan with no
change sends nothing, so applying twice is a no-op the second time.  The node records the
caller (the ``--command-config`` credential) as the actor of every event, and ``--reference``
(a commit id) as the read-only setting ``acl.change.reference`` written in the same batch, with
the same request id and actor.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cli import acl_command as ac
from cli.common import FAILURE_EXIT, add_client_options, exit_one_on_option_errors, store_client
from cli.gitops import (
    PlanError,
    add_files_option,
    exit_one_on_errors,
    log,
    plan_files,
    removal_filters,
)
from cli.output import print_json
from cli.present.gitops import PLAN_FORMAT, PLAN_KIND
from replicator.contract.bindings import binding_from_json, binding_json
from replicator.contract.fields import MAX_ITEMS
from replicator.contract.scope import scope_of_json
from store.acl import AclBinding
from store.desired import Scope


def _saved_plan(path: Path, store: str) -> tuple[Scope, int, list[AclBinding], list[AclBinding]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PlanError(f"{path}: cannot be read as a saved plan ({exc}); save one with plan --out") from exc
    if not isinstance(doc, dict) or doc.get("kind") != PLAN_KIND or doc.get("formatVersion") != PLAN_FORMAT:
        raise PlanError(f"{path}: not a saved plan of format {PLAN_FORMAT}; save one with plan --out")
    if doc.get("store") != store:
        raise PlanError(
            f"{path} was planned against {doc.get('store')}, not {store}: apply it there "
            f"(--store {doc.get('store')}), or plan against {store}"
        )
    try:
        scope = scope_of_json(doc["scope"])
        add = [binding_from_json(b) for b in doc["add"]]
        remove = [binding_from_json(b) for b in doc["remove"]]
        offset = int(doc["offset"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanError(f"{path}: a saved plan without a valid {exc}; plan again with --out") from exc
    return scope, offset, add, remove


@exit_one_on_errors
def apply(args: argparse.Namespace) -> int:
    if bool(args.files) == bool(args.plan):
        raise PlanError(
            "give the desired-state files (-f FILE...) or a saved plan (--plan FILE), one of them"
        )
    with store_client(args) as client:
        if args.plan:
            scope, offset, add, remove = _saved_plan(args.plan, client.config.url)
        else:
            computed = plan_files(client, args.files)
            scope, offset = computed.desired.scope, computed.offset
            add, remove = list(computed.reconciliation.to_add), list(computed.reconciliation.to_remove)
        if not (add or remove):
            _report(args, add, remove, offset, None, written=0)
            return 0
        if len(add) > MAX_ITEMS or len(remove) > MAX_ITEMS:  # a saved plan edited by hand
            raise PlanError(
                f"{len(add)} to add and {len(remove)} to remove: one request takes at most {MAX_ITEMS} "
                "of each; split the change over files with narrower scopes"
            )
        answer = client.alter_acls(
            creates=add, deletes=removal_filters(remove), scope=scope, if_scope_unchanged_since=offset,
            reference=args.reference,
        )  # fmt: skip
    failed = [(str(r.binding), r.error) for r in answer.create_results if r.error is not None]
    failed += [(str(r.filter), r.error) for r in answer.delete_results if r.error is not None]
    for item, error in failed:
        log(f"error: {item}: {error.error}: {error.message}")
    _report(args, add, remove, offset, answer.offset, written=answer.records_written or 0)
    return FAILURE_EXIT if failed else 0


def _report(
    args: argparse.Namespace, add: list[AclBinding], remove: list[AclBinding], planned: int,
    offset: int | None, *, written: int,
) -> None:  # fmt: skip
    if args.format == "json":
        print_json({
            "applied": offset is not None, "plannedAt": planned, "offset": offset,
            "recordsWritten": written, "added": [binding_json(b) for b in add],
            "removed": [binding_json(b) for b in remove],
        })  # fmt: skip
        return
    if offset is None:
        print(f"No changes: nothing to apply (planned at log offset {planned}).")
        return
    print(f"Applied: {len(add)} added, {len(remove)} removed, in one batch ending at log offset {offset}.")
    for sign, bindings in (("+", add), ("-", remove)):
        for b in bindings:
            print(f"  {sign} {ac.binding_text(b)}")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "apply", help="make the live ACLs in scope the declared ones (one guarded write)",
        description="Write the plan of desired-state ACL files (or a saved plan) as one request, "
        "refused by the node if anything in the scope changed after the plan's offset.",
    )  # fmt: skip
    exit_one_on_option_errors(parser)
    add_files_option(parser, required=False)
    parser.add_argument("--plan", type=Path, metavar="PLANFILE", help="a plan saved by plan --out")
    parser.add_argument(
        "--reference", metavar="REF",
        help="a commit id or ticket, written with the changes (setting acl.change.reference, same "
        "request id and actor)",
    )  # fmt: skip
    add_client_options(parser)
    parser.set_defaults(handler=apply)
