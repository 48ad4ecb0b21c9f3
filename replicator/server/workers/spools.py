"""Where each decision worker spools its audit events, and the spools a worker left.

Worker 0 writes the node's own spool directory (``audit-spool``), so a node that changes
between answering in its own process and answering in workers keeps one spool; worker ``n``
writes ``audit-spool-n``; the node's bound of unshipped events is split between them.  A
node started with fewer workers than before ships what the others left: each such spool with
events not yet shipped gets a sender until it is empty.
"""

from __future__ import annotations

import logging
from collections.abc import Set
from dataclasses import replace
from pathlib import Path

from replicator.server.audit import SPOOL_DIR, AuditEmitter, AuditSettings, AuditSinkOpener, Spool

_log = logging.getLogger("aclstore.workers")


def worker_spool(number: int) -> str:
    """The spool directory (under the data directory) of worker ``number``."""
    return SPOOL_DIR if number == 0 else f"{SPOOL_DIR}-{number}"


def worker_audit(settings: AuditSettings | None, number: int, workers: int) -> AuditSettings | None:
    """Worker ``number``'s share of the node's audit settings: the bound of events kept
    unshipped (``--audit-buffer-max-events``) is the node's, split between its workers (the
    first ones take the remainder), so the node as a whole keeps at most that many."""
    if settings is None:
        return None
    share, extra = divmod(settings.buffer_max_events, workers)
    return replace(settings, buffer_max_events=max(1, share + (1 if number < extra else 0)))


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
