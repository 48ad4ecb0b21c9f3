"""``aclstore credentials create``: a bearer token bound to a principal, in a properties file.

It writes into the node's data directory directly (no API call), so it runs where the node's
files are.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from store.errors import InvalidConfigError


def create(args: argparse.Namespace) -> int:
    from replicator.cli.serve import write_credential

    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        raise InvalidConfigError(f"--data-dir {data_dir} is not a directory of a node")
    output = Path(args.output)
    write_credential(data_dir, args.principal, output, args.url)
    print(f"credential for {args.principal} written to {output}")
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
    parser.set_defaults(handler=create)
