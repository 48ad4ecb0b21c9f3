"""``aclstore authorize``: ask a node for decisions as a broker would.

Three questions, as Kafka's ``Authorizer`` answers them (KIP-50, KIP-679): each (resource,
``--operation``) pair, a whole Kafka request (``--api-key``), or an operation on some resource of
a type (``--resource-type``).
"""

from __future__ import annotations

import argparse
from typing import Any, Final, NamedTuple

from cli import acl_command as ac
from cli.common import add_client_options, add_resource_options, store_client
from cli.output import print_json, print_offset
from replicator.client import StoreClient
from replicator.contract.answers import Reason
from replicator.contract.bindings import RESOURCE_NAME
from replicator.contract.fields import SPECIFIC_OPS, SPECIFIC_TYPES
from replicator.contract.kinds import KafkaEnum
from replicator.contract.requests import (
    API_KEY,
    AuthorizeAction,
    AuthorizeRequest,
    ByResourceTypeRequest,
    RequestCheckRequest,
)
from store.acl import AclOperation, ResourceType

_OPERATION: Final = KafkaEnum(AclOperation, SPECIFIC_OPS)
_RESOURCE_TYPE: Final = KafkaEnum(ResourceType, SPECIFIC_TYPES)


class _Identity(NamedTuple):
    principal: str | None
    ssl_distinguished_name: str | None
    kerberos_principal: str | None


def _identity(args: argparse.Namespace) -> _Identity:
    identity = _Identity(args.principal, args.ssl_dn, args.kerberos_principal)
    if sum(value is not None for value in identity) != 1:
        raise ac.AclCommandError("give exactly one of --principal, --ssl-dn, --kerberos-principal")
    return identity


def authorize(args: argparse.Namespace) -> int:
    """The names given are checked here, by the contract's own readers (the messages the node
    would answer with), before anything is sent."""
    identity = _identity(args)
    with store_client(args) as client:
        if args.api_key is not None:
            return _authorize_request(client, args, identity)
        if args.resource_type is not None:
            return _authorize_by_resource_type(client, args, identity)
        actions = _actions(args)
        answer = client.authorize(AuthorizeRequest(
            **identity._asdict(), host=args.host, explain=args.explain, min_offset=args.min_offset,
            actions=[AuthorizeAction(_OPERATION.read(op, "", "--operation"), ResourceType[rt], name)
                     for op, rt, name in actions],
        ))  # fmt: skip
    if args.format == "json":
        shown = [{"operation": op, "resourceType": rt, RESOURCE_NAME: name} for op, rt, name in actions]
        print_json({**answer.to_json(), "actions": shown})
        return 0
    reasons: list[Reason | None] = [*answer.reasons] if answer.reasons else [None] * len(actions)
    for (op, rt, name), result, reason in zip(actions, answer.results, reasons, strict=True):
        why = f"  {_reason_text(reason)}" if reason else ""
        print(f"{result.value:<8} {op:<16} {rt:<16} {name}{why}")
    print_offset(answer.offset)
    return 0


_RESOURCE_OPTIONS = (
    ("topic", "TOPIC"),
    ("group", "GROUP"),
    ("transactional_id", "TRANSACTIONAL_ID"),
    ("delegation_token", "DELEGATION_TOKEN"),
    ("user_principal", "USER"),
)


def _actions(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(operation as given, resource type, name) for each resource and ``--operation``."""
    resources: list[tuple[str, str]] = []
    for option, rt in _RESOURCE_OPTIONS:
        resources.extend((rt, name) for name in getattr(args, option) or ())
    if args.cluster:
        resources.append(("CLUSTER", "kafka-cluster"))
    if not resources or not args.operation:
        raise ac.AclCommandError(
            "name at least one resource (--topic, --group, --cluster, ...) and one --operation, "
            "or use --api-key or --resource-type"
        )
    return [(op, rt, name) for rt, name in resources for op in args.operation]


def _authorize_by_resource_type(
    client: StoreClient, args: argparse.Namespace, identity: _Identity
) -> int:
    if not args.operation or len(args.operation) != 1:
        raise ac.AclCommandError("--resource-type needs exactly one --operation")
    answer = client.authorize_by_resource_type(ByResourceTypeRequest(
        **identity._asdict(), host=args.host, explain=args.explain, min_offset=args.min_offset,
        operation=_OPERATION.read(args.operation[0], "", "--operation"),
        resource_type=_RESOURCE_TYPE.read(args.resource_type, "", "--resource-type"),
    ))  # fmt: skip
    if args.format == "json":
        print_json(answer.to_json())
    else:
        why = f"  {_reason_text(answer.reason)}" if answer.reason is not None else ""
        print(f"{answer.result.value}  {args.operation[0].upper()} on some "
              f"{args.resource_type.upper()}{why}")  # fmt: skip
        print_offset(answer.offset)
    return 0


def _authorize_request(client: StoreClient, args: argparse.Namespace, identity: _Identity) -> int:
    groups = args.group or []
    answer = client.authorize_request(RequestCheckRequest(
        **identity._asdict(), host=args.host, explain=args.explain, min_offset=args.min_offset,
        api_key=API_KEY.read(args.api_key, "", "--api-key"), topics=args.topic or [],
        groups=groups, group=groups[0] if len(groups) == 1 else None,
        transactional_id=args.transactional_id[0] if args.transactional_id else None,
        idempotent=args.idempotent, follower=args.follower, auto_create=args.auto_create,
        broker_configs=args.broker_configs,
    ))  # fmt: skip
    if args.format == "json":
        print_json(answer.to_json())
        return 0
    print(f"{answer.result.value}  {answer.api_name} ({answer.api_key})")
    for step in answer.steps:
        checks = " or ".join(
            f"{c.operation.name} {c.resource_type.name}:{c.resource_name}={c.result.value}"
            for c in step.any_of
        )
        print(f"  {step.result.value:<8} {checks}")
    print_offset(answer.offset)
    return 0


def _reason_text(reason: Reason) -> str:
    if reason.binding is not None:
        return f"by {ac.binding_text(reason.binding)}"
    return f"({reason.rule.name}: {reason.description})"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "authorize", help="ask a node for decisions, as a broker would",
        description="Authorize each (resource, --operation) pair, a whole Kafka request "
        "(--api-key), or an operation on some resource of a type (--resource-type).",
    )  # fmt: skip
    add_client_options(parser)
    a = parser.add_argument
    a("--principal", help="Type:name (or give --ssl-dn or --kerberos-principal)")
    a("--ssl-dn", help="a TLS client subject, mapped by the node's ssl.principal.mapping.rules")
    a("--kerberos-principal", help="a Kerberos name, mapped by the node's to-local rules")
    a("--host", default="127.0.0.1", help="client address (default: %(default)s)")
    a("--operation", action="append", help="operation; repeatable")
    add_resource_options(parser)
    a("--api-key", help="a Kafka API (PRODUCE, FETCH, JOIN_GROUP, ... or its number)")
    a("--idempotent", action="store_true", help="with --api-key: an idempotent producer")
    a("--follower", action="store_true", help="with --api-key FETCH: from a follower replica")
    a("--auto-create", action="store_true", help="with --api-key METADATA: topic auto-creation")
    a("--broker-configs", action="store_true", help="with --api-key *_CONFIGS: broker configs")
    a("--resource-type", help="authorize-by-resource-type: some resource of this type")
    a("--min-offset", type=int, help="answer from a state at least this fresh (a log offset)")
    a("--explain", action="store_true", help="show why (the deciding ACL or rule)")
    parser.set_defaults(handler=authorize)  # fmt: skip
