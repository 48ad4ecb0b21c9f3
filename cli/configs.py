"""``aclstore configs``: kafka-configs.sh-style ``--describe`` and ``--alter`` of the store's settings.

The settings (``super.users``, ``allow.everyone.if.no.acl.found``, ``acl.format.version``) are
events in the log, so every replica sees a change at the same offset.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from cli import acl_command as ac
from cli.common import add_client_options, store_client
from cli.output import print_json, print_offset
from replicator.client import StoreClient
from store.principal import java_trim

# A comma or ``=`` counts only outside brackets: when, before the next ``]``, a ``[`` opens or the
# text ends (the lookahead of ``ConfigCommand.parseConfigsToBeAdded``).
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_ITEM_SEPARATOR = re.compile("," + _OUTSIDE_BRACKETS)
_KEY_VALUE_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*=[ \t\n\x0b\f\r]*" + _OUTSIDE_BRACKETS)
_KEY = re.compile(r"[$a-zA-Z0-9._-]*")
INVALID_ADD_CONFIG = (
    'Invalid entity config: all configs to be added must be in the format "key=val" or  '
    '"key=[val1,val2]" to group values which contain commas.'
)


def _java_split(pattern: re.Pattern[str], text: str) -> list[str]:
    """``String.split(regex)``: no match leaves the text whole, else trailing empties go."""
    parts = pattern.split(text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_add_config(text: str) -> dict[str, str]:
    """kafka-configs.sh's ``--add-config 'k1=v1,k2=[v2,v3]'`` (``ConfigCommand.parseConfigsToBeAdded``).

    Items split at commas outside brackets; each must be exactly ``key=value`` (spaces around
    ``=`` allowed, a second ``=`` outside brackets refused, an empty value allowed); every bracket
    is dropped from the value; keys and values are trimmed; keys may hold only
    ``[$a-zA-Z0-9._-]``; a later item wins."""
    pairs = [_KEY_VALUE_SEPARATOR.split(item) for item in _java_split(_ITEM_SEPARATOR, text)]
    if not all(len(pair) == 2 for pair in pairs):
        raise ac.AclCommandError(f"{INVALID_ADD_CONFIG} (got {text!r})")
    configs: dict[str, str] = {}
    for key, value in pairs:
        configs[java_trim(key)] = java_trim(value.replace("[", "").replace("]", ""))
    for key in configs:
        if not _KEY.fullmatch(key):
            raise ac.AclCommandError(f"Invalid character found for config key: {key}")
    return configs


def _separated_values(text: str) -> list[str]:
    """joptsimple's ``withValuesSeparatedBy(',')``: the non-empty pieces between commas, or the
    whole text when there are none (so ``","`` stays ``","``)."""
    pieces = [piece for piece in text.split(",") if piece]
    return pieces or [text]


def parse_delete_config(texts: list[str]) -> list[str]:
    """kafka-configs.sh's ``--delete-config 'k1,k2'`` (repeatable): comma-separated keys, each
    trimmed (``ConfigCommand.parseConfigsToBeDeleted``)."""
    return [java_trim(key) for text in texts for key in _separated_values(text)]


def configs(args: argparse.Namespace) -> int:
    if args.describe == args.alter:
        raise ac.AclCommandError("Command must include exactly one action: --describe, --alter.")
    with store_client(args) as client:
        if args.describe:
            return _describe(client, args)
        return _alter(client, args)


def _describe(client: StoreClient, args: argparse.Namespace) -> int:
    if args.add_config or args.delete_config or args.validate_only or args.force_reason:
        raise ac.AclCommandError(
            "--add-config, --delete-config, --validate-only and --force-reason need --alter"
        )
    answer = client.describe_configs(args.name or [])
    if args.format == "json":
        print_json(answer.to_json())
        return 0
    print("Configs of the store are:")
    for entry in answer.configs:
        origin = "default" if entry.is_default else "set"
        print(f"  {entry.name}={entry.value} ({origin})")
    print_offset(answer.offset)
    return 0


def _alter(client: StoreClient, args: argparse.Namespace) -> int:
    changes: dict[str, str | None] = {}
    for text in args.add_config or ():
        changes.update(parse_add_config(text))
    for name in parse_delete_config(args.delete_config or []):
        changes[name] = None
    if not changes:
        raise ac.AclCommandError("--alter needs --add-config k=v or --delete-config k")
    answer = client.alter_configs(
        changes, validate_only=args.validate_only, force_reason=args.force_reason
    )
    if args.format == "json":
        print_json(answer.to_json())
    elif args.validate_only:
        print(f"Validated (nothing changed): {', '.join(sorted(changes))}")
    elif answer.changed:
        print(f"Completed updating config(s): {', '.join(answer.changed)} "
              f"(log offset {answer.offset})")  # fmt: skip
    else:
        print(f"Nothing to change: the settings have these values (log offset {answer.offset})")
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
    a("--delete-config", action="append", metavar="'k1,k2'", help="settings to reset to their defaults")
    a("--validate-only", action="store_true", help="check the change, write nothing")
    a(
        "--force-reason",
        metavar="TEXT",
        help="lower acl.format.version although an older reader would widen access or lose "
        "bindings (aclstore downgrade-check shows which); the reason is kept in the log",
    )
    parser.set_defaults(handler=configs)  # fmt: skip
