"""``aclstore credentials create``: a bearer token bound to a principal, in a properties file.

It writes into the node's data directory directly (no API call), through the node's token
store (:mod:`replicator.server.tokens`), so it runs where the node's files are.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from store.errors import InvalidConfigError


def create(args: argparse.Namespace) -> int:
    from replicator.server.tokens import write_credential

    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        raise InvalidConfigError(f"--data-dir {data_dir} is not a directory of a node")
    output = Path(args.output)
    write_credential(
        data_dir, args.principal, output, args.url, max_lifetime_ms=args.max_lifetime_ms
    )
    print(f"credential for {args.principal} written to {output}")
    return 0


def revoke(args: argparse.Namespace) -> int:
    from replicator.properties import TOKEN_KEY, read_properties
    from replicator.server.tokens import revoke_credentials

    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        raise InvalidConfigError(f"--data-dir {data_dir} is not a directory of a node")
    token = None
    if args.command_config is not None:
        token = read_properties(Path(args.command_config)).get(TOKEN_KEY)
        if not token:
            raise InvalidConfigError(
                f"--command-config {args.command_config} holds no {TOKEN_KEY} to revoke"
            )
    removed = revoke_credentials(data_dir, token=token, principal=args.principal)
    if not removed:
        raise InvalidConfigError(
            f"no such token in {data_dir}: revoked already, or a token of another node"
        )
    print(f"revoked {removed} token(s); the node refuses them from now on")
    return 0


def add_parser(commands: Any) -> None:
    credentials = commands.add_parser("credentials", help="bearer credentials of a node")
    actions = credentials.add_subparsers(
        dest="credentials_command", metavar="ACTION", required=True
    )
    parser = actions.add_parser("create", help="create a token bound to a principal")
    parser.add_argument("--data-dir", default="aclstore-data", help="the node's data directory")
    parser.add_argument("--principal", required=True, help="Type:name the token authenticates as")
    parser.add_argument(
        "--output", required=True, help="properties file to write (--command-config)"
    )
    parser.add_argument("--url", help="the node's URL to record in the file")
    parser.add_argument(
        "--max-lifetime-ms",
        type=int,
        metavar="MS",
        help="the token expires this long after its creation (default: never)",
    )
    parser.set_defaults(handler=create)

    parser = actions.add_parser("revoke", help="revoke a token, or every token of a principal")
    parser.add_argument("--data-dir", default="aclstore-data", help="the node's data directory")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--command-config", metavar="FILE", help="revoke the token in this file")
    which.add_argument("--principal", help="revoke every token of this Type:name")
    parser.set_defaults(handler=revoke)
