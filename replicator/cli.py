"""The ``aclstore`` command line.

* ``aclstore serve``: run a node (admin API + replica + sidecar API), by default on the embedded
  log under ``./aclstore-data``, listening on ``127.0.0.1:9096``.
* ``aclstore acls``: ``kafka-acls.sh`` against a store (``--add``, ``--remove``, ``--list``
  with the same options and habits, :mod:`replicator.acl_command`).
* ``aclstore authorize``: ask a node for decisions as a broker would.
* ``aclstore configs``: ``kafka-configs.sh``-style describe/alter of the store's settings.
* ``aclstore status``, ``aclstore credentials create``, ``aclstore dev kafka`` (a real local
  KRaft broker on loopback from Maven Central jars, for trying aclstore without Docker).

Errors are one line on stderr and a non-zero exit code: 2 for a command line or configuration
that cannot work, 1 when the store refused or failed.  ``--format json`` prints one JSON
document that includes the log offset the answer reflects.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from replicator import acl_command as ac
from replicator.client import URL_ENV, ClientConfig, StoreClient
from replicator.http.wire import binding_from_json, binding_json, filter_json
from store.acl import AclBinding, AclBindingFilter
from store.errors import InvalidConfigError, InvalidRequestError, StoreError


def _version() -> str:
    # Not ``store.__version__``: under pytest the folder tests/store can shadow the package.
    try:
        return importlib.metadata.version("aclstore")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


__version__ = _version()
USAGE_EXIT = 2
FAILURE_EXIT = 1


class _Parser(argparse.ArgumentParser):
    """argparse, with errors as one line (``error: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(USAGE_EXIT)


# --- shared ---------------------------------------------------------------------------------


def _client(args: argparse.Namespace) -> StoreClient:
    config = ClientConfig.resolve(store=args.store, command_config=args.command_config)
    return StoreClient(config)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _add_client_options(parser: argparse.ArgumentParser, *, prints: bool = True) -> None:
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


# --- serve ------------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    from replicator.audit import AuditSettings
    from replicator.auth import LOOPBACK_NETWORKS, TlsSettings
    from replicator.node import Node, NodeSettings, hostname_source
    from replicator.replica import ReplicaSettings
    from replicator.tailer import TooNewEvents
    from store.log import KafkaLogSettings
    from store.principal import parse_super_users

    if args.topic and not args.bootstrap_servers:
        raise InvalidConfigError(
            "--topic needs --bootstrap-servers (the embedded log has no topics)"
        )
    if bool(args.tls_cert) != bool(args.tls_key):
        raise InvalidConfigError("--tls-cert and --tls-key go together")
    if args.tls_client_ca and not args.tls_cert:
        raise InvalidConfigError("--tls-client-ca needs --tls-cert and --tls-key")
    try:
        audit = None if args.no_audit else AuditSettings(
            allow_sample_rate=args.audit_allow_sample_rate,
            buffer_max_events=args.audit_buffer_max_events,
            source=hostname_source(args.listen),
        )  # fmt: skip
        log_settings = KafkaLogSettings(
            replication_factor=args.replication_factor, min_insync_replicas=args.min_insync_replicas
        )
        replica_settings = ReplicaSettings(
            max_wait_s=args.max_wait_ms / 1000.0,
            too_new_events=TooNewEvents(args.too_new_events),
            cache_size=args.replica_cache_size,
        )
    except ValueError as exc:
        raise InvalidConfigError(str(exc)) from exc
    settings = NodeSettings(
        data_dir=Path(args.data_dir),
        listen=args.listen,
        bootstrap_servers=args.bootstrap_servers,
        topic=args.topic or "aclstore-acls",
        audit_topic=args.audit_topic,
        log_settings=log_settings,
        admin_principal=args.admin_principal,
        super_users=tuple(sorted(parse_super_users(args.super_users))),
        authorize_networks=tuple(args.authorize_from or LOOPBACK_NETWORKS),
        tls=None if not args.tls_cert else TlsSettings(
            certificate=Path(args.tls_cert), key=Path(args.tls_key),
            client_ca=Path(args.tls_client_ca) if args.tls_client_ca else None,
        ),
        ssl_principal_mapping_rules=args.ssl_principal_mapping_rules,
        kerberos_rules=None if args.kerberos_principal_to_local_rules is None else tuple(
            r.strip() for r in args.kerberos_principal_to_local_rules.split(",") if r.strip()
        ),
        kerberos_default_realm=args.kerberos_default_realm,
        audit=audit,
        replica=replica_settings,
    )  # fmt: skip
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    node = Node(settings)
    info = node.start()
    # What exists now lives as long as the node: keep it out of the collector's way, so that
    # full collections stay short and do not add to the decision latency tail.
    gc.collect()
    gc.freeze()
    # A request thread waiting for the GIL behind the replica's or the audit sender's thread
    # waits up to the switch interval (5 ms by default): keep that well under the p99 target.
    sys.setswitchinterval(0.0005)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    created = "created now" if info.credential.created else "existing"
    print(f"aclstore {__version__} serving {info.url}")
    print(f"  log:        {info.log}")
    print(f"  data dir:   {info.data_dir}")
    print(f"  admin:      {info.credential.principal} ({created} credential: "
          f"{info.credential.properties_path})")  # fmt: skip
    print(f"  try:        aclstore acls --command-config {info.credential.properties_path} --list")
    sys.stdout.flush()
    assert node.replica is not None
    replica = node.replica
    status = replica.status()
    if status.ready:
        print(f"  ready:      yes, at log offset {status.offset}")
    else:
        print(f"  ready:      not yet: applying the log up to offset {status.ready_offset} "
              f"(at {status.offset}); /readyz answers 503 until then")  # fmt: skip
    sys.stdout.flush()
    announced = status.ready
    try:
        while not stop.wait(0.2):
            if not announced and replica.ready:
                print(f"ready at log offset {replica.status().offset}")
                sys.stdout.flush()
                announced = True
    finally:
        print("stopping")
        sys.stdout.flush()
        node.stop()
    return 0


def _add_serve(commands: Any) -> None:
    from replicator.node import REPLICA_CACHE_SIZE

    serve = commands.add_parser(
        "serve", help="run a node: admin API, replica and sidecar API",
        description="Run one aclstore node. With no options: the embedded log and index under "
        "./aclstore-data, listening on 127.0.0.1:9096.",
    )  # fmt: skip
    a = serve.add_argument
    a(
        "--data-dir",
        default="aclstore-data",
        help="index, embedded log, credentials (default: %(default)s)",
    )
    a("--listen", default="127.0.0.1:9096", help="host:port of the API (default: %(default)s)")
    a("--bootstrap-servers", help="use a Kafka topic as the log instead of the embedded one")
    a("--topic", help="the change-log topic (default: aclstore-acls)")
    a("--audit-topic", help="the audit topic (default: <topic>-audit)")
    a("--replication-factor", type=int, default=1, help="of a topic the node creates")
    a("--min-insync-replicas", type=int, default=1, help="of a topic the node creates")
    a("--admin-principal", default="User:admin", help="super user whose credential is created")
    a("--super-users", default="", metavar="'User:a;User:b'", help="more super users")
    a(
        "--authorize-from",
        action="append",
        metavar="CIDR",
        help="networks that may ask for decisions without credentials (default: loopback)",
    )
    a("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate")
    a("--tls-key", metavar="PEM")
    a("--tls-client-ca", metavar="PEM", help="accept client certificates signed by this CA")
    a("--ssl-principal-mapping-rules", metavar="RULES", help="Kafka's ssl.principal.mapping.rules")
    a(
        "--kerberos-principal-to-local-rules",
        metavar="RULES",
        help="Kafka's sasl.kerberos.principal.to.local.rules (comma-separated)",
    )
    a("--kerberos-default-realm", default="", metavar="REALM")
    a(
        "--audit-allow-sample-rate",
        type=float,
        default=0.01,
        metavar="RATE",
        help="share of ALLOWED decisions audited; denials always are (default: %(default)s)",
    )
    a(
        "--audit-buffer-max-events",
        type=int,
        default=100_000,
        metavar="N",
        help="on-disk audit buffer bound while the sink is down (default: %(default)s)",
    )
    a("--no-audit", action="store_true", help="emit no audit events")
    a("--max-wait-ms", type=float, default=5000.0, help="bound of a minOffset wait")
    a("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    a(
        "--replica-cache-size",
        type=int,
        default=REPLICA_CACHE_SIZE,
        metavar="N",
        help="resources whose bindings the replica keeps in memory (default: %(default)s)",
    )
    a(
        "--too-new-events",
        choices=("stop", "ignore"),
        default="stop",
        help="what the replica does with events that need a newer format",
    )
    serve.set_defaults(handler=_serve)  # fmt: skip


# --- acls -------------------------------------------------------------------------------------


def _acl_options(args: argparse.Namespace) -> ac.AclOptions:
    action = "add" if args.add else "remove" if args.remove else "list" if args.list else None
    if [args.add, args.remove, args.list].count(True) != 1 or action is None:
        raise ac.AclCommandError(
            "Command must include exactly one action: --list, --add, --remove."
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
        list_principals=args.principal or (),
        producer=args.producer,
        consumer=args.consumer,
        idempotent=args.idempotent,
        explicit=frozenset(name for name, given in presence.items() if given),
    )


def _acls(args: argparse.Namespace) -> int:
    options = _acl_options(args)
    ac.check_args(options)
    with _client(args) as client:
        if options.action == "add":
            return _acls_add(client, options, args.format)
        if options.action == "remove":
            return _acls_remove(client, options, args.format, force=args.force)
        return _acls_list(client, options, args.format)


def _describe(client: StoreClient, acl_filter: Any) -> tuple[list[AclBinding], int]:
    answer = client.call("POST", "/v1/acls/describe", {"filter": filter_json(acl_filter)})
    return [binding_from_json(b) for b in answer["bindings"]], int(answer["offset"])


def _acls_add(client: StoreClient, options: ac.AclOptions, fmt: str) -> int:
    plans = ac.bindings_to_add(options)
    if fmt == "json":
        everything = [binding_json(b) for _, bindings in plans for b in bindings]
        answer = client.call("POST", "/v1/acls", {"bindings": everything})
        _print_json(answer)
        return FAILURE_EXIT if any(r["error"] for r in answer["results"]) else 0
    new: list[AclBinding] = []
    for pattern, bindings in plans:
        existing, _ = _describe(client, AclBindingFilter(pattern_filter=pattern.to_filter()))
        fresh = [b for b in bindings if b not in existing]
        for b in bindings:
            if b in existing:
                print(f"Acl {ac.binding_text(b)} already exists.")
        if fresh:
            listed = "\n".join(f"\t{ac.entry_text(b.entry)}" for b in fresh)
            print(f"Adding ACLs for resource `{ac.pattern_text(pattern)}`: \n {listed}\n")
            new.extend(fresh)
    if not new:
        return 0
    answer = client.call("POST", "/v1/acls", {"bindings": [binding_json(b) for b in new]})
    failed = [r for r in answer["results"] if r["error"]]
    for r in failed:
        b = binding_from_json(r["binding"])
        print(
            f"error: could not add {ac.binding_text(b)}: {r['error']['message']}", file=sys.stderr
        )
    print(f"(log offset {answer['offset']})")
    return FAILURE_EXIT if failed else 0


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        raise ac.AclCommandError(
            "refusing to remove ACLs without confirmation: stdin is not a terminal; pass --force"
        )
    print(question)
    return input().strip().lower() == "y"


def _acls_remove(client: StoreClient, options: ac.AclOptions, fmt: str, *, force: bool) -> int:
    filters = []
    for plan in ac.remove_plans(options):
        if force or _confirm(plan.confirmation()):
            filters.extend(plan.filters)
    if not filters:
        return 0
    answer = client.call("POST", "/v1/acls/delete", {"filters": [filter_json(f) for f in filters]})
    if fmt == "json":
        _print_json(answer)
    failed = [r for r in answer["results"] if r["error"]]
    for r in failed:
        print(f"error: {r['error']['message']}", file=sys.stderr)
    if fmt == "table":
        deleted = [binding_from_json(b) for r in answer["results"] for b in r["deleted"]]
        unique = list(dict.fromkeys(deleted))
        print(f"Removed {len(unique)} ACL(s):")
        for b in sorted(unique):
            print(f"\t{ac.binding_text(b)}")
        print(f"(log offset {answer['offset']})")
    return FAILURE_EXIT if failed else 0


def _acls_list(client: StoreClient, options: ac.AclOptions, fmt: str) -> int:
    found: dict[AclBinding, None] = {}
    offset = -1
    for acl_filter in ac.list_filters(options):
        bindings, reached = _describe(client, acl_filter)
        found.update(dict.fromkeys(bindings))
        offset = max(offset, reached)
    principals = ac.list_principals(options)
    bindings = sorted(found)
    if fmt == "json":
        shown = [b for b in bindings if not principals or b.principal in principals]
        _print_json({"bindings": [binding_json(b) for b in shown], "offset": offset})
        return 0
    if not principals:
        text = ac.resource_acls_text(ac.group_by_pattern(bindings))
        if text:
            print(text)
    for principal in principals:
        print(f"ACLs for principal `{principal}`")
        text = ac.resource_acls_text(
            ac.group_by_pattern(b for b in bindings if b.principal == principal)
        )
        if text:
            print(text)
    print(f"(log offset {offset})")
    return 0


def _add_resource_options(parser: argparse.ArgumentParser) -> None:
    r = parser.add_argument_group("resources").add_argument
    r("--topic", action="append", help="topic ('*' for all topics); repeatable")
    r("--group", action="append", help="consumer group ('*' for all); repeatable")
    r("--cluster", action="store_true", help="the cluster resource")
    r("--transactional-id", action="append", help="transactional id ('*' for all); repeatable")
    r("--delegation-token", action="append", help="delegation token id ('*' for all); repeatable")
    r("--user-principal", action="append", help="a user principal as the resource (CreateTokens)")


def _add_acls(commands: Any) -> None:
    acls = commands.add_parser(
        "acls", help="add, remove and list ACLs (kafka-acls.sh options)",
        description="Manage ACLs with kafka-acls.sh's options: one of --add, --remove, --list.",
    )  # fmt: skip
    _add_client_options(acls)
    a = acls.add_argument_group("action").add_argument
    a("--add", action="store_true", help="add ACLs")
    a("--remove", action="store_true", help="remove ACLs")
    a("--list", action="store_true", help="list ACLs")
    _add_resource_options(acls)
    e = acls.add_argument_group("entries").add_argument
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
    e("--principal", action="append", help="with --list: only this principal's ACLs; repeatable")
    e("--producer", action="store_true", help="producer role: WRITE, DESCRIBE, CREATE on topics")
    e(
        "--consumer",
        action="store_true",
        help="consumer role: READ, DESCRIBE on topics, READ on group",
    )
    e("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    e("--force", action="store_true", help="do not ask before removing")
    acls.set_defaults(handler=_acls)  # fmt: skip


# --- authorize --------------------------------------------------------------------------------


def _identity(args: argparse.Namespace) -> dict[str, str]:
    given = {
        "principal": args.principal, "sslDistinguishedName": args.ssl_dn,
        "kerberosPrincipal": args.kerberos_principal,
    }  # fmt: skip
    chosen = {k: v for k, v in given.items() if v is not None}
    if len(chosen) != 1:
        raise ac.AclCommandError("give exactly one of --principal, --ssl-dn, --kerberos-principal")
    return chosen


def _authorize(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {**_identity(args), "host": args.host, "explain": args.explain}
    if args.min_offset is not None:
        body["minOffset"] = args.min_offset
    with _client(args) as client:
        if args.api_key is not None:
            return _authorize_request(client, args, body)
        if args.resource_type is not None:
            if not args.operation or len(args.operation) != 1:
                raise ac.AclCommandError("--resource-type needs exactly one --operation")
            body.update(operation=args.operation[0], resourceType=args.resource_type)
            answer = client.call("POST", "/v1/authorize-by-resource-type", body)
            if args.format == "json":
                _print_json(answer)
            else:
                why = f"  {_reason_text(answer['reason'])}" if "reason" in answer else ""
                print(f"{answer['result']}  {args.operation[0].upper()} on some "
                      f"{args.resource_type.upper()}{why}")  # fmt: skip
                print(f"(log offset {answer['offset']})")
            return 0
        actions = _actions(args)
        body["actions"] = actions
        answer = client.call("POST", "/v1/authorize", body)
    if args.format == "json":
        _print_json({**answer, "actions": actions})
        return 0
    reasons = answer.get("reasons") or [None] * len(actions)
    for action, result, reason in zip(actions, answer["results"], reasons, strict=True):
        why = f"  {_reason_text(reason)}" if reason else ""
        print(f"{result:<8} {action['operation']:<16} {action['resourceType']:<16} "
              f"{action['resourceName']}{why}")  # fmt: skip
    print(f"(log offset {answer['offset']})")
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
        {"operation": op, "resourceType": rt, "resourceName": name}
        for rt, name in resources
        for op in args.operation
    ]


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
    answer = client.call("POST", "/v1/authorize-request", body)
    if args.format == "json":
        _print_json(answer)
        return 0
    print(f"{answer['result']}  {answer['apiName']} ({answer['apiKey']})")
    for step in answer["steps"]:
        checks = " or ".join(
            f"{c['operation']} {c['resourceType']}:{c['resourceName']}={c['result']}"
            for c in step["anyOf"]
        )
        print(f"  {step['result']:<8} {checks}")
    print(f"(log offset {answer['offset']})")
    return 0


def _reason_text(reason: dict[str, Any]) -> str:
    if "binding" in reason:
        return f"by {ac.binding_text(binding_from_json(reason['binding']))}"
    return f"({reason['rule']}: {reason['description']})"


def _add_authorize(commands: Any) -> None:
    authorize = commands.add_parser(
        "authorize", help="ask a node for decisions, as a broker would",
        description="Authorize each (resource, --operation) pair, a whole Kafka request "
        "(--api-key), or an operation on some resource of a type (--resource-type).",
    )  # fmt: skip
    _add_client_options(authorize)
    a = authorize.add_argument
    a("--principal", help="Type:name (or give --ssl-dn or --kerberos-principal)")
    a("--ssl-dn", help="a TLS client subject, mapped by the node's ssl.principal.mapping.rules")
    a("--kerberos-principal", help="a Kerberos name, mapped by the node's to-local rules")
    a("--host", default="127.0.0.1", help="client address (default: %(default)s)")
    a("--operation", action="append", help="operation; repeatable")
    _add_resource_options(authorize)
    a("--api-key", help="a Kafka API (PRODUCE, FETCH, JOIN_GROUP, ... or its number)")
    a("--idempotent", action="store_true", help="with --api-key: an idempotent producer")
    a("--follower", action="store_true", help="with --api-key FETCH: from a follower replica")
    a("--auto-create", action="store_true", help="with --api-key METADATA: topic auto-creation")
    a("--broker-configs", action="store_true", help="with --api-key *_CONFIGS: broker configs")
    a("--resource-type", help="authorize-by-resource-type: some resource of this type")
    a("--min-offset", type=int, help="answer from a state at least this fresh (a log offset)")
    a("--explain", action="store_true", help="show why (the deciding ACL or rule)")
    authorize.set_defaults(handler=_authorize)  # fmt: skip


# --- configs ----------------------------------------------------------------------------------


def parse_add_config(text: str) -> dict[str, str]:
    """kafka-configs.sh's ``--add-config 'k1=v1,k2=[v2,v3]'``: brackets keep commas in values."""
    items, depth, current = [], 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    configs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ac.AclCommandError(f"--add-config {text!r}: {item!r} is not key=value")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[key.strip()] = value
    return configs


def _configs(args: argparse.Namespace) -> int:
    if args.describe == args.alter:
        raise ac.AclCommandError("Command must include exactly one action: --describe, --alter.")
    with _client(args) as client:
        if args.describe:
            if args.add_config or args.delete_config or args.validate_only:
                raise ac.AclCommandError(
                    "--add-config, --delete-config and --validate-only need --alter"
                )
            answer = client.call("POST", "/v1/configs/describe", {"names": args.name or []})
            if args.format == "json":
                _print_json(answer)
                return 0
            print("Configs of the store are:")
            for entry in answer["configs"]:
                origin = "default" if entry["isDefault"] else "set"
                print(f"  {entry['name']}={entry['value']} ({origin})")
            print(f"(log offset {answer['offset']})")
            return 0
        configs: dict[str, str | None] = {}
        for text in args.add_config or ():
            configs.update(parse_add_config(text))
        for name in args.delete_config or ():
            configs[name.strip()] = None
        if not configs:
            raise ac.AclCommandError("--alter needs --add-config k=v or --delete-config k")
        answer = client.call(
            "POST", "/v1/configs/alter", {"configs": configs, "validateOnly": args.validate_only}
        )
    if args.format == "json":
        _print_json(answer)
    elif args.validate_only:
        print(f"Validated (nothing changed): {', '.join(sorted(configs))}")
    elif answer["changed"]:
        print(f"Completed updating config(s): {', '.join(answer['changed'])} "
              f"(log offset {answer['offset']})")  # fmt: skip
    else:
        print(f"Nothing to change: the settings have these values (log offset {answer['offset']})")
    return 0


def _add_configs(commands: Any) -> None:
    configs = commands.add_parser(
        "configs", help="describe or alter the store's settings (kafka-configs.sh style)",
        description="The store's settings (super.users, allow.everyone.if.no.acl.found, "
        "acl.format.version) are events in the log, so every replica sees them in order.",
    )  # fmt: skip
    _add_client_options(configs)
    a = configs.add_argument
    a("--describe", action="store_true")
    a("--alter", action="store_true")
    a("--name", action="append", help="with --describe: only this setting; repeatable")
    a("--add-config", action="append", metavar="'k1=v1,k2=[v2,v3]'", help="settings to set")
    a("--delete-config", action="append", metavar="KEY", help="setting to reset to its default")
    a("--validate-only", action="store_true", help="check the change, write nothing")
    configs.set_defaults(handler=_configs)  # fmt: skip


# --- status, credentials, dev -------------------------------------------------------------------


def _status(args: argparse.Namespace) -> int:
    with _client(args) as client:
        answer = client.call("GET", "/v1/status")
    if args.format == "json":
        _print_json(answer)
        return 0
    for key, value in answer.items():
        print(f"{key:<16} {value}")
    return 0


def _credentials_create(args: argparse.Namespace) -> int:
    from replicator.auth import (
        CREDENTIALS_FILE,
        PRINCIPAL_KEY,
        TOKEN_KEY,
        URL_KEY,
        CredentialStore,
        write_properties,
    )

    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        raise InvalidConfigError(f"--data-dir {data_dir} is not a directory of a node")
    token = CredentialStore(data_dir / CREDENTIALS_FILE).create_token(args.principal)
    values = {PRINCIPAL_KEY: args.principal, TOKEN_KEY: token}
    if args.url:
        values[URL_KEY] = args.url
    output = Path(args.output)
    write_properties(output, values, f"aclstore credential for {args.principal}. Keep it secret.")
    print(f"credential for {args.principal} written to {output}")
    return 0


def _dev_kafka(args: argparse.Namespace) -> int:
    from store.runtime.kafka_process import LocalKafka

    broker = LocalKafka(Path(args.dir))
    bootstrap = broker.start()
    print(f"Kafka {bootstrap} ready (data in {args.dir}, log {broker.log_path}); Ctrl-C stops it")
    sys.stdout.flush()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aclstore", description="An event-sourced Apache Kafka ACL store with replicas."
    )
    parser.add_argument("--version", action="version", version=f"aclstore {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_serve(commands)
    _add_acls(commands)
    _add_authorize(commands)
    _add_configs(commands)
    status = commands.add_parser("status", help="a node's replica figures (offset, lag, ...)")
    _add_client_options(status)
    status.set_defaults(handler=_status)
    credentials = commands.add_parser("credentials", help="bearer credentials of a node")
    cred_commands = credentials.add_subparsers(
        dest="credentials_command", metavar="ACTION", required=True
    )
    create = cred_commands.add_parser("create", help="create a token bound to a principal")
    create.add_argument("--data-dir", default="aclstore-data", help="the node's data directory")
    create.add_argument("--principal", required=True, help="Type:name the token authenticates as")
    create.add_argument(
        "--output", required=True, help="properties file to write (--command-config)"
    )
    create.add_argument("--url", help="the node's URL to record in the file")
    create.set_defaults(handler=_credentials_create)
    dev = commands.add_parser("dev", help="developer tools")
    dev_commands = dev.add_subparsers(dest="dev_command", metavar="TOOL", required=True)
    kafka = dev_commands.add_parser("kafka", help="run a local KRaft Kafka broker on loopback")
    kafka.add_argument("--dir", default="aclstore-data/kafka", help="broker data directory")
    kafka.set_defaults(handler=_dev_kafka)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
