"""What every ``aclstore`` command shares: exit codes, the parser class, the store options."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from cli.kafka_options import Arity, KafkaOptionError, read_options
from replicator.client import URL_ENV, ClientConfig, StoreClient
from replicator.properties import read_properties
from store.errors import InvalidConfigError
from store.log.client_properties import KafkaClientProperties


def _version() -> str:
    # Not ``store.__version__``: under pytest the folder tests/store can shadow the package.
    try:
        return importlib.metadata.version("aclstore")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


__version__ = _version()
USAGE_EXIT = 2
FAILURE_EXIT = 1


class Parser(argparse.ArgumentParser):
    """argparse, with errors as one line (``error: ...``) and exit code 2.

    A command that reports option errors its own way (``acls``, as kafka-acls.sh) sets
    ``on_error``; one whose command line is read as Kafka's tools read theirs (``acls``) sets
    ``kafka_syntax``."""

    on_error: Callable[[argparse.ArgumentParser, str], NoReturn] | None = None
    kafka_syntax = False
    """Read the words with joptsimple's rules (:func:`cli.kafka_options.read_options`)
    and apply the options found to this parser's actions; argparse reads none of the words."""

    def error(self, message: str) -> NoReturn:
        if self.on_error is not None:
            self.on_error(self, message)
        print(f"error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(USAGE_EXIT)

    def parse_known_args(  # one signature for typeshed's overloads, hence Any
        self, args: Iterable[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        if not self.kafka_syntax:
            return super().parse_known_args(args, namespace)
        actions = _long_options(self)
        arities = {name: _ARITIES[action.nargs] for name, action in actions.items()}
        try:
            options = read_options(list(sys.argv[1:] if args is None else args), arities)
        except KafkaOptionError as exc:
            self.error(exc.message)
        namespace, _ = super().parse_known_args([], namespace)  # the defaults
        for name, value in options:
            action = actions[name]
            given = action.const if value is None else self._checked(action, name, value)
            action(self, namespace, given, f"--{name}")
        return namespace, []

    def _checked(self, action: argparse.Action, name: str, value: str) -> Any:
        """``value`` converted by the action's ``type`` and checked against its ``choices``, with
        argparse's messages."""
        converted: Any = value
        if callable(action.type):
            try:
                converted = action.type(value)
            except (TypeError, ValueError, argparse.ArgumentTypeError):
                kind = getattr(action.type, "__name__", repr(action.type))
                self.error(f"argument --{name}: invalid {kind} value: {value!r}")
        if action.choices is not None and converted not in action.choices:
            choices = ", ".join(map(repr, action.choices))
            self.error(f"argument --{name}: invalid choice: {value!r} (choose from {choices})")
        return converted


_ARITIES: dict[object, Arity] = {0: Arity.NONE, None: Arity.REQUIRED, "?": Arity.OPTIONAL}


def _long_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The ``--name`` options of a parser (``-h`` is no Kafka option), by name.

    argparse has no public list of a parser's options; ``_actions`` is where it keeps them."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        names = [option[2:] for option in action.option_strings if option.startswith("--")]
        if names and action.nargs not in _ARITIES:
            raise ValueError(
                f"--{names[0]}: nargs={action.nargs!r} has no joptsimple reading; use 0 (a flag), "
                "None (one value) or '?' (an optional value)"
            )
        found.update(dict.fromkeys(names, action))
    return found


DETAILED_EXIT_COMMANDS = frozenset({"export", "plan", "apply", "drift"})
"""Commands whose exit codes follow Terraform's ``-detailed-exitcode`` (2: changes), so that
an option error exits 1, as every other error of theirs."""


def _exit_one(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    print(f"error: {message} (see `{parser.prog} --help`)", file=sys.stderr)
    raise SystemExit(FAILURE_EXIT)


def exit_one_on_option_errors(parser: argparse.ArgumentParser) -> None:
    """Option errors of ``parser`` exit 1 (not argparse's 2)."""
    parser.on_error = _exit_one  # type: ignore[attr-defined]  # a Parser (cli.common)


def store_client(args: argparse.Namespace) -> StoreClient:
    """The store client the ``--store`` and ``--command-config`` options name."""
    config = ClientConfig.resolve(store=args.store, command_config=args.command_config)
    return StoreClient(config)


def add_client_options(parser: argparse.ArgumentParser, *, prints: bool = True) -> None:
    group = parser.add_argument_group("store")
    group.add_argument(
        "--store", metavar="URL", help=f"the node's URL (default: ${URL_ENV}, then the "
        "command config's aclstore.url, then http://127.0.0.1:9096)",
    )  # fmt: skip
    group.add_argument(
        "--command-config", metavar="FILE", type=Path,
        help="properties file with the caller's credential (e.g. <data-dir>/admin.properties)",
    )  # fmt: skip
    if prints:
        group.add_argument("--format", choices=("table", "json"), default="table")


def add_resource_options(parser: argparse.ArgumentParser) -> None:
    """kafka-acls.sh's resource options, shared by ``acls`` and ``authorize``."""
    r = parser.add_argument_group("resources").add_argument
    r("--topic", action="append", help="topic ('*' for all topics); repeatable")
    r("--group", action="append", help="consumer group ('*' for all); repeatable")
    r("--cluster", action="store_true", help="the cluster resource")
    r("--transactional-id", action="append", help="transactional id ('*' for all); repeatable")
    r("--delegation-token", action="append", help="delegation token id ('*' for all); repeatable")
    r("--user-principal", action="append", help="a user principal as the resource (CreateTokens)")


def add_log_config_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--log-config FILE``: how the commands that read a Kafka log connect to it."""
    parser.add_argument(
        "--log-config", metavar="FILE", type=Path,
        help="Kafka client properties for the log's clients, as a Kafka tool's --command-config "
        "(security.protocol, sasl.mechanism, sasl.jaas.config, ssl.ca.location)",
    )  # fmt: skip


def log_client(args: argparse.Namespace) -> KafkaClientProperties | None:
    """The ``--log-config`` file read and checked (none: PLAINTEXT); it needs a Kafka log."""
    if args.log_config is None:
        return None
    if not args.bootstrap_servers:
        raise InvalidConfigError(
            "--log-config needs --bootstrap-servers (it configures the Kafka log's clients)"
        )
    return KafkaClientProperties.from_java(
        read_properties(args.log_config), source=str(args.log_config)
    )
