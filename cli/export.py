"""``aclstore export``: the live ACLs, or a scope of them, as a desired-state file.

So that adoption starts from what is there: ``aclstore export --principal User:orders-app
--resource-prefix TOPIC:orders. > orders.yaml`` writes the bindings of that scope with the
scope itself; without options the file owns every binding (``scope: {all: true}``).  Planning
the file right away shows no change.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.common import add_client_options, exit_one_on_option_errors, store_client
from cli.gitops import exit_one_on_errors, list_bindings, log, scope_filters
from store.acl import ResourceType
from store.desired import ResourcePrefix, Scope, export_text
from store.principal import KafkaPrincipal


def _prefix(text: str) -> ResourcePrefix:
    kind, colon, prefix = text.partition(":")
    rt = ResourceType.parse(kind) if colon else ResourceType.UNKNOWN
    if rt in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise argparse.ArgumentTypeError(
            f"{text!r}: write TYPE:PREFIX with a resource type, e.g. TOPIC:orders."
        )
    return ResourcePrefix(rt, prefix)


def _principal(text: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text))
    except Exception as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: write Type:name, e.g. User:alice") from exc


@exit_one_on_errors
def export(args: argparse.Namespace) -> int:
    scope = Scope(
        everything=not (args.principal or args.resource_prefix),
        principals=frozenset(args.principal or ()),
        resource_prefixes=frozenset(args.resource_prefix or ()),
    )
    with store_client(args) as client:
        bindings, offset, _ = list_bindings(client, scope_filters(scope), scope)
    text = export_text(bindings, scope, header=f"exported from {client.config.url} at log offset {offset}")
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    log(f"exported {len(bindings)} binding(s) at log offset {offset}")
    return 0


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "export", help="write the live ACLs (or a scope) as a desired-state file",
        description="Write the live ACLs of a scope (every binding without options) as a "
        "desired-state file (schemas/acls-file.v1.schema.json) that plan reads back unchanged.",
    )  # fmt: skip
    exit_one_on_option_errors(parser)
    a = parser.add_argument
    a("--principal", action="append", type=_principal, help="own this principal's bindings; repeatable")
    a("--resource-prefix", action="append", type=_prefix, metavar="TYPE:PREFIX",
      help="own the bindings of TYPE whose pattern name starts with PREFIX; repeatable")  # fmt: skip
    a("-o", "--output", type=Path, metavar="FILE", help="write the file here (default: stdout)")
    add_client_options(parser, prints=False)
    parser.set_defaults(handler=export)
