"""``aclstore acls --add|--remove ... --dry-run``: the access a change would widen and narrow.

Sends the change to the node (the bindings ``--add`` would create, the filters ``--remove``
would delete with), which judges it against its own state at one log offset
(``/v1/acls/dry-run``: the bindings already there are left out, the filters matched as
DeleteAcls matches them against the state before) and answers with the exact access diff
and a witness for each set: widened first, then narrowed.  Nothing is written, and the
state never leaves the node.  Kept apart from :mod:`cli.acls` so that command's output stays
where it is.
"""

from __future__ import annotations

from cli import acl_command as ac
from cli.access_output import delta_json, print_diff_table
from cli.output import print_json, print_offset
from replicator.client import StoreClient
from replicator.contract.bindings import binding_json
from store.access_diff import AccessDiff


def acls_dry_run(client: StoreClient, options: ac.AclOptions, fmt: str) -> int:
    if options.action not in ("add", "remove"):
        raise ac.AclCommandError("--dry-run goes with --add or --remove")
    if options.action == "add":
        creates = [b for _, bindings in ac.bindings_to_add(options) for b in bindings]
        answer = client.dry_run_acls(creates=creates)
    else:
        filters = [f for plan in ac.remove_plans(options) for f in plan.filters]
        answer = client.dry_run_acls(deletes=filters)
    added, removed = answer.added, answer.removed
    if fmt == "json":
        print_json({
            "dryRun": True,
            "added": [binding_json(b) for b in added],
            "removed": [binding_json(b) for b in removed],
            "widened": [delta_json(r) for r in answer.widened],
            "narrowed": [delta_json(r) for r in answer.narrowed],
            "offset": answer.offset,
        })  # fmt: skip
        return 0
    print(f"Dry run (nothing written): {len(added)} ACL(s) to add, {len(removed)} to remove")
    for sign, bindings in (("+", added), ("-", removed)):
        for b in bindings:
            print(f"  {sign} {ac.binding_text(b)}")
    print_diff_table(AccessDiff(tuple(answer.widened), tuple(answer.narrowed)), "now", "after")
    print_offset(answer.offset)
    return 0
