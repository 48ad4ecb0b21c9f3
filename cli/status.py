"""``aclstore status``: a node's replica figures (offset, lag, ...)."""

from __future__ import annotations

import argparse
from typing import Any

from cli.common import add_client_options, store_client
from cli.output import print_json


def status(args: argparse.Namespace) -> int:
    with store_client(args) as client:
        figures = client.status().to_json()
    if args.format == "json":
        print_json(figures)
        return 0
    for key, value in figures.items():
        print(f"{key:<16} {value}")
    return 0


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("status", help="a node's replica figures (offset, lag, ...)")
    add_client_options(parser)
    parser.set_defaults(handler=status)
