"""The ``aclstore`` command line.

* ``aclstore serve``: run a node (admin API + replica + sidecar API), by default on the embedded
  log under ``./aclstore-data``, listening on ``127.0.0.1:9096``.
* ``aclstore acls``: ``kafka-acls.sh`` against a store (``--add``, ``--remove``, ``--list``
  with the same options and habits, :mod:`cli.acl_command`).
* ``aclstore authorize``: ask a node for decisions as a broker would.
* ``aclstore configs``: ``kafka-configs.sh``-style describe/alter of the store's settings.
* ``aclstore status``, ``aclstore credentials create``.
* ``aclstore export``, ``plan``, ``apply``, ``drift``: ACLs as code (desired-state files,
  :mod:`cli.gitops`).
* ``aclstore import``: a bulk load of the bindings ``acls --list --format json`` prints.
* ``aclstore history``, ``aclstore audit``, ``aclstore downgrade-check``: the Spark side;
  ``aclstore spark-connect``: a local Spark Connect server their questions can ask (``--remote``).

A local KRaft broker for trying aclstore on Kafka is dev tooling, not product:
``python -m devtools kafka``.

Errors are one line on stderr and a non-zero exit code: 2 for a command line or configuration
that cannot work, 1 when the store refused or failed; ``acls`` follows kafka-acls.sh instead
(exit 1, option errors on stderr with the usage, failures on stdout).  ``--format json`` prints
one JSON document that includes the log offset the answer reflects.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from cli.common import (
    DETAILED_EXIT_COMMANDS,
    FAILURE_EXIT,
    USAGE_EXIT,
    Parser,
    __version__,
    exit_one_on_option_errors,
)
from store.errors import InvalidConfigError, InvalidRequestError, StoreError

__all__ = ["FAILURE_EXIT", "USAGE_EXIT", "__version__", "build_parser", "main", "parse_add_config"]

# The command names and the modules that declare them, in the order ``aclstore --help`` lists
# them.  A command line that names one imports that module alone: a command pays for its own
# imports (pyarrow, confluent_kafka, Spark) and no other's.
_COMMANDS: dict[str, str] = {
    "serve": "serve", "acls": "acls", "authorize": "authorize", "configs": "configs",
    "status": "status", "credentials": "credentials", "history": "history", "audit": "audit",
    "downgrade-check": "downgrade", "spark-connect": "spark_connect",
    "export": "export", "plan": "plan", "apply": "apply", "drift": "drift", "import": "load",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """``cli.parse_add_config``, imported when asked for."""
    if name == "parse_add_config":
        from cli.configs import parse_add_config

        return parse_add_config
    raise AttributeError(f"module 'cli' has no attribute {name!r}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only`` (a command's name) that command alone."""
    parser = Parser(
        prog="aclstore",
        description="An event-sourced Apache Kafka ACL store with replicas.",
        # Every word after the command is the command's, but argparse first sorts them here,
        # and with abbreviations on, `aclstore acls --list --=x` was "ambiguous" (--help,
        # --version) before kafka-acls.sh's reading could refuse it.
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"aclstore {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, module in _COMMANDS.items():
        if only is None or only == name:
            importlib.import_module(f"cli.{module}").add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and words[0] in _COMMANDS else None)
    if words and words[0] in DETAILED_EXIT_COMMANDS:
        exit_one_on_option_errors(parser)  # `plan -f x --nope`: the root parser refuses it
    args = parser.parse_args(words)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        return int(handler(args))
    except (InvalidRequestError, InvalidConfigError) as exc:
        print(f"error: {_one_line(exc.message)}", file=sys.stderr)
        return USAGE_EXIT
    except StoreError as exc:
        print(f"error: {_one_line(exc.message)}", file=sys.stderr)
        return FAILURE_EXIT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `aclstore acls --list | head`: the reader left; not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _one_line(message: str) -> str:
    return " ".join(message.split())
