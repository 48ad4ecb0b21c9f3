"""``aclstore status``: a node's replica figures (offset, lag, ...)."""

from __future__ import annotations

import argparse
from typing import Any

from cli.common import add_client_options, store_client
from cli.output import print_json


def status(args: argparse.Namespace) -> int:
    with store_client(args) as client:
        answer = client.send("status")
    if args.format == "json":
        print_json(answer)
        return 0
    for key, value in answer.items():
        print(f"{key:<16} {value}")
    return 0


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("status", help="a node's replica figures (offset, lag, ...)")
    add_client_options(parser)
    parser.set_defaults(handler=status)
