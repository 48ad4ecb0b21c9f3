"""``aclstore acls --add|--remove ... --dry-run``: the access a change would widen and narrow.

Reads the live ACLs and settings at one log offset, applies the change to a copy (the
bindings ``--add`` would create; the bindings ``--remove``'s filters match, as DeleteAcls
matches them against the state before the request) and prints the exact access diff
(:func:`store.access_diff.change_diff`) with a witness for each set: widened first, then
narrowed.  Nothing is written.  Kept apart from :mod:`cli.acls` so that command's
output stays where it is.
"""

from __future__ import annotations

from cli import acl_command as ac
from cli.access_output import delta_json, print_diff_table
from cli.downgrade import live_state
from cli.output import print_json, print_offset
from replicator.client import StoreClient
from replicator.contract.bindings import binding_json
from store.access_diff import AclState, change_diff
from store.acl import AclBinding


def planned_change(state: AclState, options: ac.AclOptions) -> tuple[list[AclBinding], list[AclBinding]]:
    """The bindings the command would add and remove, against ``state``."""
    if options.action == "add":
        wanted = [b for _, bindings in ac.bindings_to_add(options) for b in bindings]
        return sorted(b for b in dict.fromkeys(wanted) if b not in state.bindings), []
    filters = [f for plan in ac.remove_plans(options) for f in plan.filters]
    return [], sorted(b for b in state.bindings if any(f.matches(b) for f in filters))


def acls_dry_run(client: StoreClient, options: ac.AclOptions, fmt: str) -> int:
    if options.action not in ("add", "remove"):
        raise ac.AclCommandError("--dry-run goes with --add or --remove")
    state, offset = live_state(client)
    added, removed = planned_change(state, options)
    after = AclState(
        (state.bindings | frozenset(added)) - frozenset(removed),
        state.super_users,
        state.allow_everyone_if_no_acl_found,
    )
    diff = change_diff(state, after)
    if fmt == "json":
        print_json({
            "dryRun": True,
            "added": [binding_json(b) for b in added],
            "removed": [binding_json(b) for b in removed],
            "widened": [delta_json(r) for r in diff.widened],
            "narrowed": [delta_json(r) for r in diff.narrowed],
            "offset": offset,
        })  # fmt: skip
        return 0
    print(f"Dry run (nothing written): {len(added)} ACL(s) to add, {len(removed)} to remove")
    for sign, bindings in (("+", added), ("-", removed)):
        for b in bindings:
            print(f"  {sign} {ac.binding_text(b)}")
    print_diff_table(diff, "now", "after")
    print_offset(offset)
    return 0
