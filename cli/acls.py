"""``aclstore acls``: kafka-acls.sh's ``--add``, ``--remove`` and ``--list`` against a store.

The option rules, the bindings and filters they stand for and Kafka's texts live in
:mod:`cli.acl_command`; this module reads the command line and talks to the store.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

from cli import acl_command as ac
from cli import dry_run
from cli.acl_listing import write_bindings_json, write_resource_acls
from cli.common import (
    FAILURE_EXIT,
    Parser,
    add_client_options,
    add_resource_options,
    store_client,
)
from cli.output import failed_results, first_failure, print_json, print_offset
from replicator.client import StoreClient
from replicator.contract.answers import CreateResult, DeleteResult
from replicator.properties import read_properties
from store.acl import AclBinding, AclBindingFilter
from store.errors import StoreError

if TYPE_CHECKING:  # confluent_kafka is imported only by a command that talks to a broker
    from replicator.client.kafka_acls import KafkaAclClient


def _acl_options(args: argparse.Namespace) -> ac.AclOptions:
    action = "add" if args.add else "remove" if args.remove else "list" if args.list else None
    if [args.add, args.remove, args.list].count(True) != 1 or action is None:
        raise ac.AclCommandError(
            "Command must include exactly one action: --list, --add, --remove. "
        )
    presence = {
        "producer": args.producer, "consumer": args.consumer,
        "allow-host": args.allow_host, "allow-principal": args.allow_principal,
        "deny-host": args.deny_host, "deny-principal": args.deny_principal,
        "operation": args.operation, "principal": args.principal,
    }  # fmt: skip
    return ac.AclOptions(
        action=action,
        topics=args.topic or (),
        groups=args.group or (),
        cluster=args.cluster,
        transactional_ids=args.transactional_id or (),
        delegation_tokens=args.delegation_token or (),
        user_principals=args.user_principal or (),
        resource_pattern_type=args.resource_pattern_type,
        operations=args.operation or (),
        allow_principals=args.allow_principal or (),
        deny_principals=args.deny_principal or (),
        allow_hosts=args.allow_host or (),
        deny_hosts=args.deny_host or (),
        list_principals=[p for p in args.principal or () if p is not None],  # value optional
        producer=args.producer,
        consumer=args.consumer,
        idempotent=args.idempotent,
        explicit=frozenset(name for name, given in presence.items() if given),
    )


EXECUTION_ERROR = "Error while executing ACL command: "
OPTION_EXIT = 1
"""kafka-acls.sh exits 1 on every error: bad options and failed runs alike."""


def acls(args: argparse.Namespace) -> int:
    """kafka-acls.sh's streams and exit codes: option errors on stderr followed by the usage,
    failures as ``Error while executing ACL command: ...`` on stdout; both exit 1."""
    try:
        if args.bootstrap_controller is not None:
            print(
                "--bootstrap-controller is not supported: aclstore's plugin answers ACL requests "
                "on the brokers; pass --bootstrap-server HOST:PORT (a broker running the plugin) "
                "or --store URL (the node)",
                file=sys.stderr,
            )
            return OPTION_EXIT
        options = _acl_options(args)
        ac.check_args(options)
        if args.dry_run:
            if args.bootstrap_server is not None:
                raise ac.AclCommandError(
                    "--dry-run reads the node's ACLs and settings: pass --store URL, not "
                    "--bootstrap-server"
                )
            with store_client(args) as node:
                return dry_run.acls_dry_run(node, options, args.format)
        with _client(args) as client:
            if options.action == "add":
                return _acls_add(client, options, args.format)
            if options.action == "remove":
                return _acls_remove(client, options, args.format, force=args.force)
            return _acls_list(client, options, args.format)
    except ac.AclCommandError as exc:
        _print_usage_error(args.acls_parser, exc.message)
        return OPTION_EXIT
    except ac.AclExecutionError as exc:
        print(f"{EXECUTION_ERROR}{exc.message}")
        if exc.cause:
            print(f"Caused by: {exc.cause}")
    except StoreError as exc:
        print(f"{EXECUTION_ERROR}{' '.join(exc.message.split())}")
    return FAILURE_EXIT


def _print_usage_error(parser: argparse.ArgumentParser, message: str) -> None:
    """``CommandLineUtils.printUsageAndExit``: the message, then the usage, on stderr."""
    print(message, file=sys.stderr)
    parser.print_help(sys.stderr)


def _option_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """An option error as kafka-acls.sh prints one: the message, the usage; exit 1."""
    _print_usage_error(parser, message)
    raise SystemExit(OPTION_EXIT)


AclClient: TypeAlias = "StoreClient | KafkaAclClient"
"""The node's API, or a broker running aclstore's plugin (``--bootstrap-server``): the same
requests and answer shapes, except that a broker's answers carry no log offset (None)."""


def _client(args: argparse.Namespace) -> AclClient:
    if args.bootstrap_server is None:
        return store_client(args)
    from replicator.client.kafka_acls import KafkaAclClient

    properties = {} if args.command_config is None else read_properties(args.command_config)
    return KafkaAclClient(args.bootstrap_server, properties)


def _describe(client: AclClient, acl_filter: AclBindingFilter) -> tuple[list[AclBinding], int | None]:
    answer = client.describe_acls(acl_filter)
    return answer.bindings, answer.offset


def _failure(results: Sequence[CreateResult] | Sequence[DeleteResult]) -> str | None:
    """The first refused item of a batch write, as AclCommand prints it (it stops there)."""
    refused = first_failure(results)
    if refused is None:
        return None
    error = refused[1]
    return ac.item_error_text(error.kafka_error_code, " ".join(error.message.split()))


def _acls_add(client: AclClient, options: ac.AclOptions, fmt: str) -> int:
    """Per resource, as AclCommand: the existing bindings said, the new ones listed, then
    created; the first refusal ends the run (resources after it are not tried)."""
    plans = ac.bindings_to_add(options)
    if fmt == "json":
        answer = client.create_acls([b for _, bindings in plans for b in bindings])
        print_json(answer.to_json())
        return FAILURE_EXIT if failed_results(answer.results) else 0
    offset = None
    for pattern, bindings in plans:
        existing, _ = _describe(client, AclBindingFilter(pattern_filter=pattern.to_filter()))
        fresh = [b for b in bindings if b not in existing]
        for b in bindings:
            if b in existing:
                print(f"Acl {ac.binding_text(b)} already exists.")
        if not fresh:
            continue
        listed = "\n".join(f"\t{ac.entry_text(b.entry)}" for b in fresh)
        print(f"Adding ACLs for resource `{ac.pattern_text(pattern)}`: \n {listed}\n")
        answer = client.create_acls(fresh)
        failure = _failure(answer.results)
        if failure is not None:
            raise ac.AclExecutionError(failure)
        offset = answer.offset
    if offset is not None:
        print_offset(offset, stderr=True)
    return 0


def _confirm(question: str) -> bool:
    """kafka-acls.sh's question on stdout and a y/n answer; without a terminal it refuses
    (where Kafka fails reading a console that is not there)."""
    print(question)
    if not sys.stdin.isatty():
        raise ac.AclExecutionError(
            "refusing to remove ACLs without confirmation: stdin is not a terminal; pass --force"
        )
    return input().lower() == "y"


def _acls_remove(client: AclClient, options: ac.AclOptions, fmt: str, *, force: bool) -> int:
    """Removes, per resource filter, after the question (unless ``--force``); prints nothing on
    stdout, as kafka-acls.sh (``--format json`` prints the store's answer)."""
    filters = []
    for plan in ac.remove_plans(options):
        if force or _confirm(plan.confirmation()):
            filters.extend(plan.filters)
    if not filters:
        return 0
    answer = client.delete_acls(filters)
    if fmt == "json":
        print_json(answer.to_json())
        return FAILURE_EXIT if failed_results(answer.results) else 0
    failure = _failure(answer.results)
    if failure is not None:
        raise ac.AclExecutionError(failure)
    print_offset(answer.offset, stderr=True)
    return 0


def _acls_list(client: AclClient, options: ac.AclOptions, fmt: str) -> int:
    """``listAcls``: the ACLs the filters match, printed as the listing arrives (the node
    streams it in DescribeAcls order); with ``--principal``, a section per principal, each
    its own listing narrowed to that principal on the node (Kafka's filters them itself)."""
    acl_filters = ac.list_filters(options)
    principals = ac.list_principals(options)
    out = sys.stdout
    if fmt == "json":
        wanted = acl_filters if not principals else [
            ac.with_principal(f, p) for p in principals for f in acl_filters
        ]  # fmt: skip
        listing = client.list_acls(wanted)
        write_bindings_json(listing, out, lambda: listing.offset)
        return 0
    if not principals:
        listing = client.list_acls(acl_filters)
        write_resource_acls(listing, out)
        print_offset(listing.offset, stderr=True)
        return 0
    offset: int | None = None
    for principal in principals:
        print(f"ACLs for principal `{principal}`")
        listing = client.list_acls([ac.with_principal(f, principal) for f in acl_filters])
        write_resource_acls(listing, out)
        if listing.offset is not None:
            offset = listing.offset if offset is None else max(offset, listing.offset)
    print_offset(offset, stderr=True)
    return 0


def add_parser(commands: Any) -> None:
    parser: Parser = commands.add_parser(
        "acls", help="add, remove and list ACLs (kafka-acls.sh options)",
        description="Manage ACLs with kafka-acls.sh's options: one of --add, --remove, --list.",
        add_help=False,  # -h is no option of kafka-acls.sh (joptsimple reads it as the letter h)
    )  # fmt: skip
    parser.on_error = _option_error
    parser.kafka_syntax = True  # -list, --topic -dash, -- ending the options, as kafka-acls.sh
    parser.add_argument("--help", action="help", help="show this help message and exit")
    add_client_options(parser)
    b = parser.add_argument_group("kafka-acls.sh's broker options").add_argument
    b(
        "--bootstrap-server", metavar="HOST:PORT",
        help="a broker whose authorizer is aclstore's plugin, instead of --store; "
        "--command-config is then a Kafka client properties file, as for kafka-acls.sh",
    )  # fmt: skip
    b("--bootstrap-controller", metavar="HOST:PORT", help="refused: pass --bootstrap-server")
    a = parser.add_argument_group("action").add_argument
    a("--add", action="store_true", help="add ACLs")
    a("--remove", action="store_true", help="remove ACLs")
    a("--list", action="store_true", help="list ACLs")
    add_resource_options(parser)
    e = parser.add_argument_group("entries").add_argument
    e(
        "--resource-pattern-type",
        default="literal",
        metavar="literal|prefixed|any|match",
        help="pattern type, or for --list/--remove the filters any and match (default: literal)",
    )
    e("--operation", action="append", help="operation (Read, Write, ... default All); repeatable")
    e("--allow-principal", action="append", metavar="PRINCIPAL", help="Type:name; repeatable")
    e("--deny-principal", action="append", metavar="PRINCIPAL", help="Type:name; repeatable")
    e(
        "--allow-host",
        action="append",
        metavar="HOST",
        help="IP address (default * with a principal)",
    )
    e(
        "--deny-host",
        action="append",
        metavar="HOST",
        help="IP address (default * with a principal)",
    )
    e(
        "--principal", action="append", nargs="?",
        help="with --list: only this principal's ACLs; repeatable (no value: every principal)",
    )  # fmt: skip
    e("--producer", action="store_true", help="producer role: WRITE, DESCRIBE, CREATE on topics")
    e(
        "--consumer",
        action="store_true",
        help="consumer role: READ, DESCRIBE on topics, READ on group",
    )
    e("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    e("--force", action="store_true", help="do not ask before removing")
    e(
        "--dry-run",
        action="store_true",
        help="with --add/--remove: print the access the change would widen and narrow; write nothing",
    )
    parser.set_defaults(handler=acls, acls_parser=parser)
