"""Audit emission: decisions as CloudEvents on an audit log, on local disk before the answer.

* :mod:`~replicator.server.audit.settings`: what to emit, how much to keep, how to send;
* :mod:`~replicator.server.audit.spool`: the append-only segment files and the shipped position;
* :mod:`~replicator.server.audit.lines`: what a spool line holds, and the CloudEvents it becomes;
* :mod:`~replicator.server.audit.progress`: the figures the writer and the sender share;
* :mod:`~replicator.server.audit.emitter`: the request path (sampling, one write per request);
* :mod:`~replicator.server.audit.sender`: the sender that ships the spool to the audit log, a
  process of its own in a node (a thread when given a sink object);
* :mod:`~replicator.server.audit.sinks`: the audit log, and how the sender process opens it.
"""

from replicator.server.audit.emitter import LEGACY_BUFFER_FILE, SPOOL_DIR, AuditEmitter
from replicator.server.audit.lines import cloud_events
from replicator.server.audit.settings import AuditSettings
from replicator.server.audit.sinks import AuditSink, AuditSinkOpener
from replicator.server.audit.spool import AuditSpoolError, Position, Spool

__all__ = [
    "LEGACY_BUFFER_FILE",
    "SPOOL_DIR",
    "AuditEmitter",
    "AuditSettings",
    "AuditSink",
    "AuditSinkOpener",
    "AuditSpoolError",
    "Position",
    "Spool",
    "cloud_events",
]
