"""``aclstore downgrade-check --to N``: would rolling a replica back to event format N widen access?

KIP-290 warns that a reader older than the PREFIXED pattern type ignores prefixed ACLs: harmless
for an ALLOW, a silent hole for a DENY.  This command reads the live state from the node (ACLs
and settings at one log offset), models the older reader (:func:`store.access_diff.
older_reader_state`) and prints the exact access diff (:func:`store.access_diff.access_diff`):
widened access first, with a witness request each, then narrowed.  Exit 1 when access would
widen (a CI/CD gate), 0 when it would not.
"""

from __future__ import annotations

import argparse
from typing import Any

from cli import acl_command as ac
from cli.access_output import delta_json, print_diff_table
from cli.common import FAILURE_EXIT, add_client_options, store_client
from cli.downgrade_watch import add_watch_options
from cli.output import print_json, print_offset
from replicator.client import StoreClient
from replicator.contract.bindings import binding_json
from store.access_diff import AclState, access_diff, older_reader_state
from store.acl import ANY_FILTER, AclBinding
from store.authorizer import AuthorizerConfig
from store.errors import StoreError

_CONSISTENT_READ_TRIES = 5


class InconsistentReadError(StoreError):
    """The log moved under every attempt to read the ACLs and the settings at one offset."""


def live_state(client: StoreClient) -> tuple[AclState, int]:
    """The node's live bindings and settings, read at one log offset."""
    for _ in range(_CONSISTENT_READ_TRIES):
        configs = client.describe_configs()
        acls = client.describe_acls(ANY_FILTER)
        if configs.offset == acls.offset:
            break
    else:
        raise InconsistentReadError(
            "the log kept moving while reading the ACLs and the settings at one offset "
            f"({_CONSISTENT_READ_TRIES} tries); retry when writes pause"
        )
    properties = {c.name: c.value for c in configs.configs}
    config = AuthorizerConfig.from_properties(properties, ignore_unknown=True)
    state = AclState.of(acls.bindings, config.super_users, config.allow_everyone_if_no_acl_found)
    return state, configs.offset


def downgrade_check(args: argparse.Namespace) -> int:
    if args.to < 1:
        raise ac.AclCommandError(f"--to {args.to}: event formats start at 1")
    if args.watch or args.once:
        from cli.downgrade_watch import run_watch

        return run_watch(args)
    with store_client(args) as client:
        state, offset = live_state(client)
    older, stopping = older_reader_state(state, args.to)
    ignored: list[AclBinding] = sorted(state.bindings - older.bindings)
    diff = access_diff(state, older)
    if args.format == "json":
        print_json({
            "safe": diff.safe,
            "to": args.to,
            "ignored": [binding_json(b) for b in ignored],
            "stopping": stopping,
            "widened": [delta_json(r) for r in diff.widened],
            "narrowed": [delta_json(r) for r in diff.narrowed],
            "offset": offset,
        })  # fmt: skip
    else:
        verdict = "SAFE: no access would widen" if diff.safe else "UNSAFE: access would widen"
        print(f"Downgrade to event format v{args.to}: {verdict}")
        print(
            f"{stopping} binding(s) need a newer format: a replica with too_new_events=stop "
            "stops at the first; with ignore it decides without them"
        )
        for binding in ignored:
            print(f"  {ac.binding_text(binding)}")
        print_diff_table(diff, "now", f"on v{args.to}")
        print_offset(offset)
    return 0 if diff.safe else FAILURE_EXIT


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
    parser.set_defaults(handler=downgrade_check)
