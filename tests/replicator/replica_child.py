"""The replica that the SIGKILL loops kill: a real process, forked from a server that imported
the replicator once, so that each of the loop's many restarts costs a fork and not a Python
start with every import again.

The server is multiprocessing's ``forkserver``: a single-threaded process started once, which
imports this module (and with it the replica, RocksDB and both logs) before it forks anything.
Each child opens the index and the log itself, as a restarted replica process does; nothing of
the parent's state (threads, open files, a RocksDB handle) is inherited.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import sys
import time
from multiprocessing.process import BaseProcess
from pathlib import Path
from unittest import mock

from replicator.replica import Replica, ReplicaSettings
from store.log import ChangeLog, EmbeddedChangeLog, KafkaChangeLog

_FORKSERVER = multiprocessing.get_context("forkserver")
# Each child runs the parent's main script again as ``__mp_main__`` (pytest's, which imports
# pytest and stops at its ``__main__`` guard): pytest is imported once in the server too.
_FORKSERVER.set_forkserver_preload([__name__, "pytest"])
_HERE = Path(__file__).resolve().parent


def _ensure_server() -> None:
    """Start the fork server (once) with the root and this folder on its import path: Python
    3.11's server imports its preload modules before it takes the parent's ``sys.path``, and
    silently goes without them when they do not import (every child would import them again)."""
    path = os.pathsep.join([str(_HERE.parents[1]), str(_HERE), os.environ.get("PYTHONPATH", "")])
    with mock.patch.dict(os.environ, {"PYTHONPATH": path}):
        multiprocessing.forkserver.ensure_running()


def _open_log(spec: str) -> ChangeLog:
    """``embedded:<folder>`` or ``kafka:<bootstrap>/<topic>``."""
    kind, _, where = spec.partition(":")
    if kind == "embedded":
        return EmbeddedChangeLog(where)
    bootstrap, _, topic = where.rpartition("/")
    return KafkaChangeLog(bootstrap, topic, create_topic=False)


def run_replica(
    log_spec: str, index_dir: str, batch_records: int, started: multiprocessing.connection.Connection
) -> None:
    """Open the replica, say so with its position, and tail the log until killed."""
    replica = Replica.open(index_dir, _open_log(log_spec), ReplicaSettings(batch_records=batch_records))
    started.send(replica.position.offset)
    while True:
        time.sleep(0.05)
        if replica.status().fatal_error:
            print("fatal", replica.status().fatal_error, file=sys.stderr, flush=True)
            sys.exit(3)


def start_replica(log_spec: str, index_dir: Path, batch_records: int) -> BaseProcess:
    """A replica process that has opened its index and started tailing ``log_spec``."""
    _ensure_server()
    receive, send = _FORKSERVER.Pipe(duplex=False)
    process = _FORKSERVER.Process(
        target=run_replica, args=(log_spec, str(index_dir), batch_records, send), daemon=True
    )
    process.start()
    send.close()
    try:
        if not receive.poll(120):
            process.kill()
            raise AssertionError("the replica process did not start within 120 s")
        receive.recv()
    except EOFError:
        process.join(10)
        raise AssertionError(
            f"the replica process ended before it started (exit code {process.exitcode})"
        ) from None
    finally:
        receive.close()
    return process
