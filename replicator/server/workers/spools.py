"""Where each decision worker spools its audit events, and the spools a worker left.

Worker 0 writes the node's own spool directory (``audit-spool``), so a node that changes
between answering in its own process and answering in workers keeps one spool; worker ``n``
writes ``audit-spool-n``.  A node started with fewer workers than before ships what the
others left: each such spool with events not yet shipped gets a sender until it is empty.
"""

from __future__ import annotations

import logging
from collections.abc import Set
from pathlib import Path

from replicator.server.audit import SPOOL_DIR, AuditEmitter, AuditSettings, AuditSinkOpener, Spool

_log = logging.getLogger("aclstore.workers")


def worker_spool(number: int) -> str:
    """The spool directory (under the data directory) of worker ``number``."""
    return SPOOL_DIR if number == 0 else f"{SPOOL_DIR}-{number}"


def drain_left_spools(
    data_dir: Path, used: Set[Path], sink: AuditSinkOpener, settings: AuditSettings
) -> list[AuditEmitter]:
    """A sender for every worker spool under ``data_dir`` that no worker of this start uses
    and that holds events not yet shipped; the node closes them when it stops."""
    drains = []
    for directory in sorted(data_dir.glob(f"{SPOOL_DIR}-*")):
        if directory in used or not directory.is_dir() or not directory.name[len(SPOOL_DIR) + 1 :].isdigit():
            continue
        spool = Spool(directory, capacity=settings.buffer_max_events, segment_bytes=settings.segment_bytes)
        backlog = spool.backlog
        spool.close()
        if backlog:
            _log.info("shipping %d audit events a former decision worker left in %s", backlog, directory)
            drains.append(AuditEmitter(sink, directory, settings))
    return drains
