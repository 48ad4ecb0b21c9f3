"""``aclstore authorize``: ask a node for decisions as a broker would.

Three questions, as Kafka's ``Authorizer`` answers them (KIP-50, KIP-679): each (resource,
``--operation``) pair, a whole Kafka request (``--api-key``), or an operation on some resource of
a type (``--resource-type``).
"""

from __future__ import annotations

import argparse
from typing import Any

from cli import acl_command as ac
from cli.common import add_client_options, add_resource_options, store_client
from cli.output import print_json, print_offset
from replicator.client import StoreClient
from replicator.contract.bindings import RESOURCE_NAME, binding_from_json
from replicator.contract.requests import IdentityKind


def _identity(args: argparse.Namespace) -> dict[str, str]:
    given = {
        IdentityKind.PRINCIPAL.value: args.principal,
        IdentityKind.SSL_DISTINGUISHED_NAME.value: args.ssl_dn,
        IdentityKind.KERBEROS_PRINCIPAL.value: args.kerberos_principal,
    }
    chosen = {k: v for k, v in given.items() if v is not None}
    if len(chosen) != 1:
        raise ac.AclCommandError("give exactly one of --principal, --ssl-dn, --kerberos-principal")
    return chosen


def authorize(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {**_identity(args), "host": args.host, "explain": args.explain}
    if args.min_offset is not None:
        body["minOffset"] = args.min_offset
    with store_client(args) as client:
        if args.api_key is not None:
            return _authorize_request(client, args, body)
        if args.resource_type is not None:
            return _authorize_by_resource_type(client, args, body)
        actions = _actions(args)
        body["actions"] = actions
        answer = client.send("authorize", body)
    if args.format == "json":
        print_json({**answer, "actions": actions})
        return 0
    reasons = answer.get("reasons") or [None] * len(actions)
    for action, result, reason in zip(actions, answer["results"], reasons, strict=True):
        why = f"  {_reason_text(reason)}" if reason else ""
        print(f"{result:<8} {action['operation']:<16} {action['resourceType']:<16} "
              f"{action[RESOURCE_NAME]}{why}")  # fmt: skip
    print_offset(answer["offset"])
    return 0


_RESOURCE_OPTIONS = (
    ("topic", "TOPIC"),
    ("group", "GROUP"),
    ("transactional_id", "TRANSACTIONAL_ID"),
    ("delegation_token", "DELEGATION_TOKEN"),
    ("user_principal", "USER"),
)


def _actions(args: argparse.Namespace) -> list[dict[str, str]]:
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
    return [
        {"operation": op, "resourceType": rt, RESOURCE_NAME: name}
        for rt, name in resources
        for op in args.operation
    ]


def _authorize_by_resource_type(
    client: StoreClient, args: argparse.Namespace, body: dict[str, Any]
) -> int:
    if not args.operation or len(args.operation) != 1:
        raise ac.AclCommandError("--resource-type needs exactly one --operation")
    body.update(operation=args.operation[0], resourceType=args.resource_type)
    answer = client.send("authorize_by_resource_type", body)
    if args.format == "json":
        print_json(answer)
    else:
        why = f"  {_reason_text(answer['reason'])}" if "reason" in answer else ""
        print(f"{answer['result']}  {args.operation[0].upper()} on some "
              f"{args.resource_type.upper()}{why}")  # fmt: skip
        print_offset(answer["offset"])
    return 0


def _authorize_request(client: StoreClient, args: argparse.Namespace, body: dict[str, Any]) -> int:
    body.update(
        apiKey=args.api_key, topics=args.topic or [], groups=args.group or [],
        idempotent=args.idempotent, follower=args.follower, autoCreate=args.auto_create,
        brokerConfigs=args.broker_configs,
    )  # fmt: skip
    if args.group and len(args.group) == 1:
        body["group"] = args.group[0]
    if args.transactional_id:
        body["transactionalId"] = args.transactional_id[0]
    answer = client.send("authorize_request", body)
    if args.format == "json":
        print_json(answer)
        return 0
    print(f"{answer['result']}  {answer['apiName']} ({answer['apiKey']})")
    for step in answer["steps"]:
        checks = " or ".join(
            f"{c['operation']} {c['resourceType']}:{c[RESOURCE_NAME]}={c['result']}"
            for c in step["anyOf"]
        )
        print(f"  {step['result']:<8} {checks}")
    print_offset(answer["offset"])
    return 0


def _reason_text(reason: dict[str, Any]) -> str:
    if "binding" in reason:
        return f"by {ac.binding_text(binding_from_json(reason['binding']))}"
    return f"({reason['rule']}: {reason['description']})"


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
