"""Audit emission: decisions as CloudEvents on an audit log, on local disk before the answer.

* :mod:`~replicator.server.audit.spool`: the append-only segment files and the shipped position;
* :mod:`~replicator.server.audit.emitter`: the request path (sampling, one write per request)
  and the sender thread that ships the spool to the audit log.
"""

from replicator.server.audit.emitter import (
    LEGACY_BUFFER_FILE,
    SPOOL_DIR,
    AuditEmitter,
    AuditSettings,
    AuditSink,
    cloud_events,
)
from replicator.server.audit.spool import AuditSpoolError, Position, Spool

__all__ = [
    "LEGACY_BUFFER_FILE",
    "SPOOL_DIR",
    "AuditEmitter",
    "AuditSettings",
    "AuditSink",
    "AuditSpoolError",
    "Position",
    "Spool",
    "cloud_events",
]
