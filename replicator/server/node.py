"""One aclstore node: the admin API writing to the log, a replica tailing it, the sidecar API.

The **embedded default** keeps everything under ``--data-dir`` (``./aclstore-data``): the change
log in SQLite (``log/``), the replica's RocksDB index (``index/``), the audit log (``audit/``)
and the spool of audit events not yet shipped to it (``audit-spool/``), the bearer credentials
and ``admin.properties``.  With
``bootstrap_servers`` the change log is partition 0 of a compacted Kafka topic and the audit
events go to a second topic next to it; every node started on the same topic is one more
replica of one store (each keeps its own data directory).

A node catches up on the log twice, on purpose: the admin API (:class:`store.admin.AclAdmin`)
keeps its own in-memory state, which it syncs to the log's end before each write and which
holds its own appends at once, so writes are validated against exactly what the log holds;
the replica serves reads from RocksDB, may lag or stop at a refused record, and may read
with an older format under ``too_new_events=IGNORE``.  Both read records through the same
fold (:mod:`store.fold`), so they cannot disagree on what a record means.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import secrets
import socket
import ssl
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from replicator.access.analyst import AccessAnalyst
from replicator.contract.openapi import openapi_bytes
from replicator.replica import Replica, ReplicaSettings
from replicator.server.audit import SPOOL_DIR, AuditEmitter, AuditSettings, AuditSinkOpener
from replicator.server.audit.sinks import EmbeddedAuditLog, KafkaAuditTopic
from replicator.server.callers import LOOPBACK_NETWORKS, CallerPolicy
from replicator.server.console import Console
from replicator.server.console.questions import HistorySource
from replicator.server.console.runner import QuestionRunner
from replicator.server.decisions import IdentityMapper
from replicator.server.http import HttpLimits, Route, SidecarHTTPServer
from replicator.server.metrics import SidecarMetrics
from replicator.server.service import SidecarService
from replicator.server.tls import TlsSettings, check_listener_security
from replicator.server.tokens import (
    CREDENTIALS_FILE,
    AdminCredential,
    CredentialStore,
    ensure_admin_credential,
)
from replicator.server.workers.figures import MergedRegistry
from replicator.server.workers.pool import DecisionWorkers, ReplicaPublisher
from replicator.server.workers.process import WorkerConfig, state_path
from replicator.server.workers.spools import drain_left_spools, worker_audit, worker_spool
from replicator.server.workers.state import SharedState
from store.admin import AclAdmin
from store.errors import InvalidConfigError
from store.log import ChangeLog, EmbeddedChangeLog, KafkaChangeLog, KafkaLogSettings
from store.log.base import LogUnavailableError
from store.log.client_properties import KafkaClientProperties
from store.principal import SUPER_USERS_CONFIG, KafkaPrincipal, super_users_text

DEFAULT_DATA_DIR: Final = "aclstore-data"
RUN_DIR: Final = "run"
"""Under the data directory: what the node shares with its decision workers while it runs."""
DEFAULT_LISTEN: Final = "127.0.0.1:9096"
DEFAULT_TOPIC: Final = "aclstore-acls"
DEFAULT_ADMIN_PRINCIPAL: Final = "User:admin"
AUDIT_RETENTION_MS: Final = 7 * 24 * 3600 * 1000
_log = logging.getLogger("aclstore.node")
REPLICA_CACHE_SIZE: Final = 65_536
"""Resources whose applicable bindings the replica keeps in memory (LRU, emptied by every
applied change): a broker asks about the same topics again and again, and a miss costs a few
RocksDB seeks.  A node's default, larger than the replica's own."""


def _default_replica_settings() -> ReplicaSettings:
    return ReplicaSettings(cache_size=REPLICA_CACHE_SIZE)


def parse_listen(text: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port``; port 0 picks a free one."""
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise InvalidConfigError(f"--listen {text!r} is not host:port (e.g. {DEFAULT_LISTEN})")
    return host, int(port_text)


def base_url(host: str, port: int, *, tls: bool) -> str:
    shown = f"[{host}]" if ":" in host else host
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_unspecified:  # 0.0.0.0 is not an address to call
            shown = "127.0.0.1" if ":" not in host else "[::1]"
    return f"{'https' if tls else 'http'}://{shown}:{port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSettings:
    """Everything ``aclstore serve`` can set; validated by :meth:`Node.start`'s parts."""

    data_dir: Path = Path(DEFAULT_DATA_DIR)
    listen: str = DEFAULT_LISTEN
    bootstrap_servers: str | None = None
    topic: str = DEFAULT_TOPIC
    audit_topic: str | None = None
    """Defaults to ``<topic>-audit``."""
    log_settings: KafkaLogSettings = field(default_factory=KafkaLogSettings)
    log_client: KafkaClientProperties | None = None
    """How the log's Kafka clients connect (SASL, TLS): ``--log-config``; none: PLAINTEXT."""
    admin_principal: str = DEFAULT_ADMIN_PRINCIPAL
    super_users: tuple[str, ...] = ()
    authorize_networks: tuple[str, ...] = LOOPBACK_NETWORKS
    tls: TlsSettings | None = None
    insecure_plaintext: bool = False
    """Accept plain HTTP on an address off loopback (refused by default)."""
    http_limits: HttpLimits = field(default_factory=HttpLimits)
    ssl_principal_mapping_rules: str | None = None
    kerberos_rules: tuple[str, ...] | None = None
    kerberos_default_realm: str = ""
    audit: AuditSettings | None = field(default_factory=AuditSettings)
    """None turns audit emission off."""
    replica: ReplicaSettings = field(default_factory=_default_replica_settings)
    decision_workers: int = 0
    """Processes answering decisions beside the node's own (:mod:`replicator.server.workers`);
    0 answers them in the node's process.  ``aclstore serve`` defaults to the cores available."""
    history: HistorySource | None = None
    """Where the history the console's questions ask lives (``--history-archive``,
    ``--history-remote``); None: the console refuses them, naming the options."""
    rebuild_index: bool = False
    """Delete the replica's index before opening it, so it is rebuilt from the log (the fix
    for a damaged index: ``--rebuild-index``)."""

    @property
    def all_super_users(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.admin_principal, *self.super_users)))

    @property
    def backend(self) -> str:
        return "kafka" if self.bootstrap_servers else "embedded"


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What ``aclstore serve`` prints."""

    url: str
    data_dir: Path
    backend: str
    log: str
    credential: AdminCredential


class Node:
    """Build with settings, :meth:`start`, and :meth:`stop` (or use as a context manager)."""

    def __init__(self, settings: NodeSettings) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
        self._closers: list[Any] = []
        self.replica: Replica | None = None
        self.questions: QuestionRunner | None = None
        self.admin: AclAdmin | None = None
        self.audit: AuditEmitter | None = None
        self.server: SidecarHTTPServer | None = None
        self.metrics = SidecarMetrics()
        self.info: NodeInfo | None = None
        self.workers: DecisionWorkers | None = None
        self.internal: SidecarHTTPServer | None = None
        self._publisher: ReplicaPublisher | None = None
        self._drains: list[AuditEmitter] = []

    # --- logs ---------------------------------------------------------------------------------

    def _open_log(self, *, create: bool) -> ChangeLog:
        s = self.settings
        if s.bootstrap_servers:
            log: ChangeLog = KafkaChangeLog(
                s.bootstrap_servers, s.topic, s.log_settings, create_topic=create,
                client=s.log_client,
            )
        else:
            log = EmbeddedChangeLog(self.data_dir / "log")
        self._closers.append(log)
        return log

    def _audit_sink(self) -> AuditSinkOpener:
        """The audit log as the audit sender process opens it."""
        s = self.settings
        if s.bootstrap_servers:
            topic = s.audit_topic or f"{s.topic}-audit"
            _ensure_audit_topic(s.bootstrap_servers, topic, s.log_settings, s.log_client)
            return KafkaAuditTopic(
                bootstrap_servers=s.bootstrap_servers, topic=topic, log_settings=s.log_settings,
                client=s.log_client,
            )  # fmt: skip
        return EmbeddedAuditLog(data_dir=self.data_dir / "audit")

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> NodeInfo:
        s = self.settings
        try:
            return self._start(s)
        except BaseException:
            self.stop()
            raise

    def _start(self, s: NodeSettings) -> NodeInfo:
        for principal in s.all_super_users:
            KafkaPrincipal.parse(principal)
        host, port = parse_listen(s.listen)
        check_listener_security(
            s.listen, host, tls=s.tls, insecure_plaintext=s.insecure_plaintext
        )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        admin_log = self._open_log(create=True)
        if isinstance(admin_log, KafkaChangeLog):
            # Before the node serves (and so before a broker waiting on it opens its client
            # listeners): see KafkaChangeLog.acquire_producer_id.
            admin_log.acquire_producer_id()
        replica_log = admin_log if not s.bootstrap_servers else self._open_log(create=False)
        super_users = super_users_text(s.all_super_users)
        local = {**s.replica.local_config, SUPER_USERS_CONFIG: super_users}
        replica_settings = replace(
            s.replica,
            local_config=local,
            max_resume_age_ms=_resume_age_bound(s.replica, replica_log),
        )
        if s.rebuild_index:
            _discard_index(self.data_dir / "index")
        self.replica = Replica.open(self.data_dir / "index", replica_log, replica_settings)
        # The access-diff questions run where the state is (the replica's index); the admin
        # catches up with the log for them, and asks them for its format gate.
        analyst = AccessAnalyst(self.replica.index, lambda: admin.sync())
        local_super_users = s.all_super_users
        admin = self.admin = AclAdmin(
            admin_log, super_users=s.all_super_users,
            downgrade_analyst=lambda to, offset: analyst.format_gate(to, offset, local_super_users),
        )  # fmt: skip
        audit_sink = self._audit_sink() if s.audit is not None else None
        if s.audit is not None and audit_sink is not None and not s.decision_workers:
            self.audit = AuditEmitter(audit_sink, self.data_dir / SPOOL_DIR, s.audit)
        credentials = CredentialStore(self.data_dir / CREDENTIALS_FILE)
        policy = CallerPolicy(
            credentials=credentials,
            authorize_networks=s.authorize_networks,
            ssl_principal_mapping_rules=s.ssl_principal_mapping_rules,
        )
        identities = IdentityMapper(
            ssl_principal_mapping_rules=s.ssl_principal_mapping_rules,
            kerberos_rules=s.kerberos_rules,
            kerberos_default_realm=s.kerberos_default_realm,
        )
        service = SidecarService(
            replica=self.replica, admin=self.admin, policy=policy, identities=identities,
            metrics=self.metrics, audit=self.audit, openapi=openapi_bytes(), analyst=analyst,
        )  # fmt: skip
        tls_context = s.tls.server_context() if s.tls is not None else None
        api = service.routes()
        self.questions = QuestionRunner(s.history)  # the console's history questions
        console = Console(
            api, policy, secure=tls_context is not None, questions=self.questions,
            may_read_history=lambda principal, host: admin.check_describe([], actor=principal, host=host),
        )  # the web console, /ui/; fmt: skip
        routes = [*api, *console.routes()]
        if s.decision_workers:
            listen_port = self._start_workers(s, host, port, service, routes, tls_context, audit_sink)
        else:
            try:
                self.server = SidecarHTTPServer(
                    (host, port), routes, tls=tls_context,
                    on_response=self._count_response, limits=s.http_limits,
                )  # fmt: skip
            except OSError as exc:
                raise InvalidConfigError(
                    f"cannot listen on {s.listen}: {exc.strerror}; pick another --listen"
                ) from exc
            listen_port = self.server.port
        url = base_url(host, listen_port, tls=tls_context is not None)
        credential = ensure_admin_credential(
            self.data_dir, credentials, s.admin_principal, url, tls=tls_context is not None
        )
        if self.server is not None:
            self.server.start()
        if self.workers is not None:
            self.workers.start()
        log_text = (
            f"Kafka topic {s.topic} at {s.bootstrap_servers}"
            if s.bootstrap_servers
            else f"embedded {self.data_dir / 'log'}"
        )
        self.info = NodeInfo(url, self.data_dir, s.backend, log_text, credential)
        return self.info

    def _start_workers(
        self,
        s: NodeSettings,
        host: str,
        port: int,
        service: SidecarService,
        routes: list[Route],
        tls_context: ssl.SSLContext | None,
        audit_sink: AuditSinkOpener | None,
    ) -> int:
        """The node's address served by decision workers; the node's own routes on an internal
        loopback listener only they may call.  Returns the port of the node's address."""
        assert self.replica is not None
        run_dir = self.data_dir / RUN_DIR
        run_dir.mkdir(parents=True, exist_ok=True)
        self._publisher = ReplicaPublisher(self.replica, SharedState.create(state_path(run_dir)))
        secret = secrets.token_urlsafe(32)
        internal = self.internal = SidecarHTTPServer(
            ("127.0.0.1", 0), routes, on_response=self._count_response,
            limits=s.http_limits, forwarded_by=secret,
        ).start()  # fmt: skip
        fallback = SidecarHTTPServer(
            (host, 0), routes, on_response=self._count_response, limits=s.http_limits,
            bind=False,
        )  # fmt: skip
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listener = socket.create_server((host, port), family=family, backlog=128)
        except OSError as exc:
            raise InvalidConfigError(
                f"cannot listen on {s.listen}: {exc.strerror}; pick another --listen"
            ) from exc
        spools = [self.data_dir / worker_spool(n) for n in range(s.decision_workers)]
        if s.audit is not None and audit_sink is not None:
            self._drains = drain_left_spools(self.data_dir, set(spools), audit_sink, s.audit)

        def config(number: int) -> WorkerConfig:
            assert self.replica is not None
            return WorkerConfig(
                number=number, index_dir=self.data_dir / "index", run_dir=run_dir,
                upstream=("127.0.0.1", internal.port), secret=secret,
                replica=self.replica.settings, limits=s.http_limits, tls=s.tls,
                credentials_path=self.data_dir / CREDENTIALS_FILE,
                authorize_networks=tuple(s.authorize_networks),
                ssl_principal_mapping_rules=s.ssl_principal_mapping_rules,
                kerberos_rules=None if s.kerberos_rules is None else tuple(s.kerberos_rules),
                kerberos_default_realm=s.kerberos_default_realm,
                audit=worker_audit(s.audit, number, s.decision_workers),
                audit_sink=audit_sink if s.audit is not None else None,
                spool_dir=spools[number] if s.audit is not None else None,
                log_level=logging.getLogger().getEffectiveLevel(),
            )  # fmt: skip

        self.workers = DecisionWorkers(
            count=s.decision_workers, listener=listener, config=config, fallback=fallback,
            tls=tls_context, run_dir=run_dir,
        )  # fmt: skip
        self.metrics.exposed = MergedRegistry(self.metrics.registry, self.workers.snapshot_paths)
        service.worker_spools = self.workers.storage_problem
        return self.workers.port

    def _count_response(self, route: str, status: int) -> None:
        self.metrics.http_responses.labels(route, str(status)).inc()

    @property
    def port(self) -> int:
        """The port of the node's address (its own listener's, or its decision workers')."""
        if self.server is not None:
            return self.server.port
        if self.workers is not None:
            return self.workers.port
        raise RuntimeError("the node is not started")

    @property
    def url(self) -> str:
        if self.info is None:
            raise RuntimeError("the node is not started")
        return self.info.url

    def stop(self) -> None:
        """Stop serving, flush the audit events, close the replica and the logs."""
        if self.questions is not None:
            self.questions.close()
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.workers is not None:
            self.workers.close()
            self.workers = None
        if self.internal is not None:
            self.internal.stop()
            self.internal = None
        if self._publisher is not None:
            self._publisher.close()
            self._publisher.shared.close()
            self._publisher = None
        for drain in self._drains:
            drain.close()
        self._drains.clear()
        if self.audit is not None:
            self.audit.close()
            self.audit = None
        if self.replica is not None:
            self.replica.close()
            self.replica = None
        for closer in reversed(self._closers):
            with contextlib.suppress(Exception):
                closer.close()
        self._closers.clear()

    def __enter__(self) -> Node:
        if self.info is None:
            self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _discard_index(index_dir: Path) -> None:
    """``--rebuild-index``: the index goes, and the replica bootstraps from the log."""
    _log.warning("deleting the index in %s to rebuild it from the log (--rebuild-index)", index_dir)
    Replica.discard_index(index_dir)


def _resume_age_bound(settings: ReplicaSettings, log: ChangeLog) -> int | None:
    """How stale an index may be and still resume without missing a DELETE.

    A deleted binding's ``AclDeleted`` event is kept for ``min.compaction.lag.ms`` and its
    tombstone for ``delete.retention.ms`` after that; an index whose last applied record is
    older than both together may have missed a delete, so it must rebuild instead of resuming
    (the tailer says so).  An explicit ``max_resume_age_ms`` wins.
    """
    if settings.max_resume_age_ms is not None:
        return settings.max_resume_age_ms
    log_settings = getattr(log, "settings", None)
    lag = getattr(log_settings, "min_compaction_lag_ms", None)
    retention = getattr(log_settings, "delete_retention_ms", None)
    if isinstance(lag, int) and isinstance(retention, int):
        return lag + retention
    return None


def _ensure_audit_topic(
    bootstrap_servers: str,
    topic: str,
    log_settings: KafkaLogSettings,
    client: KafkaClientProperties | None,
) -> None:
    """The audit topic keeps events for a retention time (``cleanup.policy=delete``)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    # Connected as the change log's clients are; librdkafka's lines go to Python logging.
    admin = AdminClient(log_settings.admin_config(bootstrap_servers, client))
    new = NewTopic(
        topic,
        num_partitions=1,
        replication_factor=log_settings.replication_factor,
        config={"cleanup.policy": "delete", "retention.ms": str(AUDIT_RETENTION_MS)},
    )
    try:
        admin.create_topics([new], request_timeout=30)[topic].result(timeout=30)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if not (isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS):
            raise LogUnavailableError(f"could not create the audit topic {topic!r}: {exc}") from exc
    except Exception as exc:
        raise LogUnavailableError(f"could not create the audit topic {topic!r}: {exc!r}") from exc


def hostname_source(listen: str) -> str:
    """A CloudEvents ``source`` naming this node."""
    return f"aclstore://{socket.gethostname()}/{listen}"
