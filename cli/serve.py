"""``aclstore serve``: run one node (admin API, replica and sidecar API) until SIGTERM or Ctrl-C.

It imports the server (:mod:`replicator.server`) lazily, so that the client commands load none
of it; besides it only ``aclstore credentials`` does, for the node's token store.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import __version__, add_log_config_option, log_client
from store.errors import InvalidConfigError

if TYPE_CHECKING:
    from replicator.server.node import NodeSettings


def node_settings(args: argparse.Namespace) -> NodeSettings:
    """The node's settings from ``serve``'s options; a combination that cannot work is refused."""
    from replicator.replica import ReplicaSettings
    from replicator.server.audit import AuditSettings
    from replicator.server.callers import LOOPBACK_NETWORKS
    from replicator.server.console.questions import HistorySource
    from replicator.server.node import NodeSettings, hostname_source
    from replicator.server.tls import TlsSettings
    from store.fold import TooNewEvents
    from store.log import KafkaLogSettings
    from store.principal import parse_super_users

    if args.topic and not args.bootstrap_servers:
        raise InvalidConfigError(
            "--topic needs --bootstrap-servers (the embedded log has no topics)"
        )
    if not args.replica_cache_mb >= 0:  # NaN too
        raise InvalidConfigError(
            "--replica-cache-mb must be a number of MiB >= 0 (0 turns the cache off), "
            f"got {args.replica_cache_mb}"
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
            cache_max_bytes=round(args.replica_cache_mb * (1 << 20)),
        )
    except ValueError as exc:
        raise InvalidConfigError(str(exc)) from exc
    return NodeSettings(
        data_dir=Path(args.data_dir),
        listen=args.listen,
        bootstrap_servers=args.bootstrap_servers,
        topic=args.topic or "aclstore-acls",
        audit_topic=args.audit_topic,
        log_settings=log_settings,
        log_client=log_client(args),
        admin_principal=args.admin_principal,
        super_users=tuple(sorted(parse_super_users(args.super_users))),
        authorize_networks=tuple(args.authorize_from or LOOPBACK_NETWORKS),
        tls=None if not args.tls_cert else TlsSettings(
            certificate=Path(args.tls_cert), key=Path(args.tls_key),
            client_ca=Path(args.tls_client_ca) if args.tls_client_ca else None,
        ),
        insecure_plaintext=args.insecure_plaintext,
        ssl_principal_mapping_rules=args.ssl_principal_mapping_rules,
        kerberos_rules=None if args.kerberos_principal_to_local_rules is None else tuple(
            r.strip() for r in args.kerberos_principal_to_local_rules.split(",") if r.strip()
        ),
        kerberos_default_realm=args.kerberos_default_realm,
        audit=audit,
        replica=replica_settings,
        decision_workers=decision_workers(args.decision_workers),
        rebuild_index=args.rebuild_index,
        history=HistorySource(
            data_dir=Path(args.data_dir), bootstrap_servers=args.bootstrap_servers,
            topic=args.topic, log_config=args.log_config, archive=args.history_archive,
            remote=args.history_remote,
        ),
    )  # fmt: skip


def default_decision_workers() -> int:
    """One decision worker per core this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def decision_workers(given: int | None) -> int:
    if given is None:
        return default_decision_workers()
    if given < 0:
        raise InvalidConfigError(
            f"--decision-workers {given}: give 0 (answer in the node's process) or more"
        )
    return given


def serve(args: argparse.Namespace) -> int:
    from replicator.server.node import Node

    settings = node_settings(args)
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    node = Node(settings)
    info = node.start()
    # What exists now lives as long as the node, and what lives a second mostly does too: the
    # collector walks only what is new, so its pauses stay short (replicator.server.collector).
    from replicator.server.collector import CollectorPolicy

    collector = CollectorPolicy(collect_s=None).start()
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
        collector.close()
    return 0


def add_parser(commands: Any) -> None:
    from replicator.index.cache import DEFAULT_CACHE_MAX_BYTES
    from replicator.server.node import REPLICA_CACHE_SIZE

    parser = commands.add_parser(
        "serve", help="run a node: admin API, replica and sidecar API",
        description="Run one aclstore node. With no options: the embedded log and index under "
        "./aclstore-data, listening on 127.0.0.1:9096.",
    )  # fmt: skip
    a = parser.add_argument
    a(
        "--data-dir",
        default="aclstore-data",
        help="index, embedded log, credentials (default: %(default)s)",
    )
    a("--listen", default="127.0.0.1:9096", help="host:port of the API (default: %(default)s)")
    a("--bootstrap-servers", help="use a Kafka topic as the log instead of the embedded one")
    a("--topic", help="the change-log topic (default: aclstore-acls)")
    a("--audit-topic", help="the audit topic (default: <topic>-audit)")
    add_log_config_option(parser)
    a("--replication-factor", type=int, default=1, help="of a topic the node creates")
    a("--min-insync-replicas", type=int, default=1, help="of a topic the node creates")
    a("--admin-principal", default="User:admin", help="super user whose credential is created")
    a("--super-users", default="", metavar="'User:a;User:b'", help="more super users")
    a(
        "--authorize-from",
        action="append",
        metavar="CIDR",
        help="loopback networks that may ask for decisions without credentials (default: all "
        "of loopback); callers off loopback authenticate as admin callers do",
    )
    a("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate")
    a("--tls-key", metavar="PEM")
    a("--tls-client-ca", metavar="PEM", help="accept client certificates signed by this CA")
    a(
        "--insecure-plaintext",
        action="store_true",
        help="allow plain HTTP on an address off loopback (tokens would cross the network in "
        "clear); without it such a --listen needs --tls-cert and --tls-key",
    )
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
        default=1_000_000,
        metavar="N",
        help="audit events kept on disk and not yet shipped to the audit log, at most; past it "
        "new ones are dropped and counted (default: %(default)s)",
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
        "--replica-cache-mb",
        type=float,
        default=DEFAULT_CACHE_MAX_BYTES / (1 << 20),
        metavar="MIB",
        help="memory budget of the answer cache of each process answering decisions (each "
        "decision worker and the node), in MiB, estimated from what it holds; past it the least "
        "recently used answers go (default: %(default)g)",
    )
    a(
        "--decision-workers",
        type=int,
        default=None,
        metavar="N",
        help="processes answering decisions, each on a core, beside the node's own (which "
        "keeps the admin API, the log and the replica); 0 answers them in the node's process "
        f"(default: the cores this process may use, here {default_decision_workers()})",
    )
    a(
        "--too-new-events",
        choices=("stop", "ignore"),
        default="stop",
        help="what the replica does with events that need a newer format",
    )
    a(
        "--history-archive",
        metavar="URI",
        help="the history archive the console's questions ask (`aclstore history archive` writes "
        "it; default: <data-dir>/history); each question runs `aclstore history ... --format json`",
    )
    a(
        "--history-remote",
        metavar="URL",
        help="the Spark Connect server the console's history questions ask (sc://HOST:PORT, or "
        "'local'); without it each question starts a local Spark of its own (tens of seconds)",
    )
    a(
        "--rebuild-index",
        action="store_true",
        help="delete the replica's index under --data-dir and rebuild it from the log (the fix "
        "for an index the node refuses as damaged); give it once, not on every start",
    )
    parser.set_defaults(handler=serve)  # fmt: skip
