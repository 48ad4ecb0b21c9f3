"""``aclstore configs``: kafka-configs.sh-style ``--describe`` and ``--alter`` of the store's settings.

The settings (``super.users``, ``allow.everyone.if.no.acl.found``, ``acl.format.version``) are
events in the log, so every replica sees a change at the same offset.
"""

from __future__ import annotations

import argparse
from typing import Any

from replicator.cli import acl_command as ac
from replicator.cli.common import add_client_options, store_client
from replicator.cli.output import print_json, print_offset
from replicator.client import StoreClient


def parse_add_config(text: str) -> dict[str, str]:
    """kafka-configs.sh's ``--add-config 'k1=v1,k2=[v2,v3]'``: brackets keep commas in values."""
    items, depth, current = [], 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    configs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ac.AclCommandError(f"--add-config {text!r}: {item!r} is not key=value")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[key.strip()] = value
    return configs


def configs(args: argparse.Namespace) -> int:
    if args.describe == args.alter:
        raise ac.AclCommandError("Command must include exactly one action: --describe, --alter.")
    with store_client(args) as client:
        if args.describe:
            return _describe(client, args)
        return _alter(client, args)


def _describe(client: StoreClient, args: argparse.Namespace) -> int:
    if args.add_config or args.delete_config or args.validate_only:
        raise ac.AclCommandError("--add-config, --delete-config and --validate-only need --alter")
    answer = client.send("describe_configs", {"names": args.name or []})
    if args.format == "json":
        print_json(answer)
        return 0
    print("Configs of the store are:")
    for entry in answer["configs"]:
        origin = "default" if entry["isDefault"] else "set"
        print(f"  {entry['name']}={entry['value']} ({origin})")
    print_offset(answer["offset"])
    return 0


def _alter(client: StoreClient, args: argparse.Namespace) -> int:
    changes: dict[str, str | None] = {}
    for text in args.add_config or ():
        changes.update(parse_add_config(text))
    for name in args.delete_config or ():
        changes[name.strip()] = None
    if not changes:
        raise ac.AclCommandError("--alter needs --add-config k=v or --delete-config k")
    answer = client.send(
        "alter_configs", {"configs": changes, "validateOnly": args.validate_only}
    )
    if args.format == "json":
        print_json(answer)
    elif args.validate_only:
        print(f"Validated (nothing changed): {', '.join(sorted(changes))}")
    elif answer["changed"]:
        print(f"Completed updating config(s): {', '.join(answer['changed'])} "
              f"(log offset {answer['offset']})")  # fmt: skip
    else:
        print(f"Nothing to change: the settings have these values (log offset {answer['offset']})")
    return 0


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "configs", help="describe or alter the store's settings (kafka-configs.sh style)",
        description="The store's settings (super.users, allow.everyone.if.no.acl.found, "
        "acl.format.version) are events in the log, so every replica sees them in order.",
    )  # fmt: skip
    add_client_options(parser)
    a = parser.add_argument
    a("--describe", action="store_true")
    a("--alter", action="store_true")
    a("--name", action="append", help="with --describe: only this setting; repeatable")
    a("--add-config", action="append", metavar="'k1=v1,k2=[v2,v3]'", help="settings to set")
    a("--delete-config", action="append", metavar="KEY", help="setting to reset to its default")
    a("--validate-only", action="store_true", help="check the change, write nothing")
    parser.set_defaults(handler=configs)  # fmt: skip
