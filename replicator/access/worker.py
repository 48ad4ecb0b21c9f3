"""``python -m replicator.access.worker INDEX_DIR QUESTION [--catch-up-to N] [--local-super-user P]...``:
one access-diff question answered from a RocksDB secondary instance of a node's index.

The node runs a question that walks the whole state (a downgrade check, the format gate, a dry
run of ``*``) here, in a process of its own at a lower CPU priority, so that its decisions keep
their latency: the walk holds no lock and no GIL of the node.  The secondary instance follows
the node's index (:func:`replicator.index.tables.open_secondary`): it catches up once, to at
least ``--catch-up-to`` (the offset the node asks about), and then every iterator reads that
one state.

QUESTION is ``dry_run``, ``downgrade_check`` or ``format_gate``; the request body (the
contract's :class:`~replicator.contract.access.DryRunRequest` or
:class:`~replicator.contract.access.DowngradeCheckRequest`) comes on stdin, and the answer
body goes to stdout, as the node sends it on; a ``downgrade_check``'s body comes after a
line of its summary (:meth:`DowngradeDocument.summary`: the node's headers), and
``format_gate`` answers with the gate's verdict alone
(:func:`replicator.access.analysis.verdict_json`), so that the node reads a few bytes instead
of every row.  ``--processes`` above 1 walks a downgrade in parts
(:mod:`replicator.access.parallel`).  ``--local-super-user`` (the node's static
``super.users``) count on both sides of a downgrade, as the format gate counts them.  A
failure is a message on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from replicator.access.analysis import (
    IndexRead,
    answer_verdict,
    downgrade_answer,
    dry_run_answer,
    log_settings,
    planned_change,
    verdict_json,
)
from replicator.access.parallel import PART_SIZE, DowngradeDocument, downgrade_in_parts
from replicator.contract.access import (
    DowngradeCheckAnswer,
    DryRunRequest,
    downgrade_check_request,
    dry_run_request,
)
from replicator.contract.declare import Message
from replicator.errors import ReplicaError
from replicator.index import meta
from replicator.index.patterns import IndexPatterns
from replicator.index.tables import Tables, open_secondary
from replicator.index.view import IndexView
from store.access_stream import StateChange, WalkFigures
from store.acl import AclBinding

QUESTIONS = ("dry_run", "downgrade_check", "format_gate")
CATCH_UP_TIMEOUT_S = 30.0
NICENESS = 10
"""How much lower the worker's CPU priority is than the node's (the node starts it so,
:func:`replicator.priority.spawn_lowered`; the format gate's walk in the idle class)."""


class AnalysisError(ReplicaError):
    """The worker could not answer from the index (behind, incomplete, or unreadable)."""


class _NoCache:
    """An :class:`~replicator.index.view.AnswerCache` that keeps nothing (one walk, no repeats)."""

    def cached_match(self, generation: int, key: tuple[int, str]) -> None:
        return None

    def remember_match(self, generation: int, key: Any, value: Any, patterns: Any) -> None:
        return None

    def cached_patterns(self, generation: int, keys: Any) -> dict[Any, Any]:
        return {}


def secondary_read(tables: Tables, stored: meta.StoredMeta) -> IndexRead:
    """The secondary instance read pattern by pattern (an iterator per run: nothing writes to
    it meanwhile) and by DeleteAcls filters."""
    lengths = meta.freeze_lengths(stored.lengths)
    view = IndexView(
        _NoCache(), iterator=tables.acl.iter(), position=stored.position, config=stored.config,
        generation=0, prefix_lengths=lengths,
    )  # fmt: skip
    return IndexRead(IndexPatterns(tables.acl.iter, lengths, lazy=True), view)


PROGRESS = "progress"
"""The first word of the worker's progress lines on stderr: ``progress READ TOTAL``."""


class WalkProgress:
    """What the worker says while it walks: ``progress READ TOTAL`` lines on ``stream``
    (stderr, which the node reads: ``/v1/analysis``), bindings read of the index's total; and
    a stop when the node that asked (``parent``) is gone, as nobody would read the answer."""

    def __init__(self, total: int, stream: TextIO, parent: int) -> None:
        self.total, self.stream, self.parent = total, stream, parent
        self.read = 0

    def __call__(self, read: int) -> None:
        if os.getppid() != self.parent:
            raise AnalysisError(f"the node (pid {self.parent}) that asked stopped; the analysis stops too")
        self.read = read
        self.stream.write(f"{PROGRESS} {read} {self.total}\n")
        self.stream.flush()


def _caught_up(db: Any, tables: Tables, offset: int, timeout_s: float) -> meta.StoredMeta:
    deadline = time.monotonic() + timeout_s
    while True:
        db.try_catch_up_with_primary()
        stored = meta.decode_meta(cast(dict[bytes, bytes], dict(tables.meta.items())))
        if stored.position.offset >= offset:
            return stored
        if time.monotonic() >= deadline:
            raise AnalysisError(
                f"the index reached offset {stored.position.offset}, not {offset}, within "
                f"{timeout_s:g} s; retry when the replica has caught up"
            )
        time.sleep(0.05)


def answer(
    index_dir: Path, question: str, body: Any, *, catch_up_to: int = -1,
    local_super_users: Sequence[str] = (), processes: int = 1, part_size: int = PART_SIZE,
) -> Message | DowngradeDocument:  # fmt: skip
    """The answer to ``question`` (``dry_run``, or ``downgrade_check`` and ``format_gate``,
    whose bodies are the same) about the index in ``index_dir``, at an offset of at least
    ``catch_up_to``; a downgrade's walk by ``processes`` processes (more than one:
    :mod:`replicator.access.parallel`)."""
    if question not in QUESTIONS:
        raise AnalysisError(f"no question {question!r}; ask one of {', '.join(QUESTIONS)}")
    request = dry_run_request(body) if question == "dry_run" else downgrade_check_request(body)
    secondary = Path(tempfile.mkdtemp(prefix="secondary-", dir=index_dir.parent))
    db = None
    try:
        db, tables = open_secondary(index_dir, secondary)
        stored = _caught_up(db, tables, max(catch_up_to, request.min_offset or -1), CATCH_UP_TIMEOUT_S)
        if stored.counters.ignored_events:
            raise AnalysisError(
                f"the index in {index_dir} ignored {stored.counters.ignored_events} event(s) "
                "of a newer format, so it lacks bindings the analysis needs; run the node's "
                "replica with the newest reader_version"
            )
        source = secondary_read(tables, stored)
        settings = log_settings(stored.config)
        offset = stored.position.offset
        progress = WalkProgress(stored.counters.bindings, sys.stderr, os.getppid())
        progress(0)
        if isinstance(request, DryRunRequest):
            creates = [b for b in request.creates if isinstance(b, AclBinding)]
            plan = planned_change(source, creates, request.deletes)
            return dry_run_answer(source, settings, plan, offset)
        if processes > 1:
            change = StateChange.downgrade(settings, request.to, local_super_users)
            return downgrade_in_parts(
                source.index_patterns, source, change, request.to, offset, processes=processes,
                encode=question == "downgrade_check", part_size=part_size, on_part=progress,
            )  # fmt: skip
        figures = WalkFigures()
        result = downgrade_answer(
            source, settings, request.to, offset, local_super_users=local_super_users,
            on_read=progress, figures=figures,
        )  # fmt: skip
        progress(figures.read)
        return result
    finally:
        if db is not None:
            db.close()
        shutil.rmtree(secondary, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicator.access.worker")
    parser.add_argument("index_dir", type=Path)
    parser.add_argument("question", choices=QUESTIONS)
    parser.add_argument("--catch-up-to", type=int, default=-1)
    parser.add_argument("--local-super-user", action="append", default=[])
    parser.add_argument("--processes", type=int, default=1,
                        help="processes that walk a downgrade check's parts (1: this one)")
    parser.add_argument("--part-size", type=int, default=PART_SIZE,
                        help="bindings per part, at least (with --processes above 1)")
    args = parser.parse_args(argv)
    try:
        body = json.loads(sys.stdin.buffer.read() or b"{}")
        result = answer(args.index_dir, args.question, body, catch_up_to=args.catch_up_to,
                        local_super_users=args.local_super_user, processes=args.processes,
                        part_size=args.part_size)  # fmt: skip
    except Exception as exc:
        print(f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}", file=sys.stderr)
        return 1
    out = sys.stdout.buffer
    if args.question == "format_gate":
        if isinstance(result, DowngradeDocument):
            verdict = result.verdict()
        else:
            assert isinstance(result, DowngradeCheckAnswer)
            verdict = answer_verdict(result)
        out.write(json.dumps(verdict_json(verdict)).encode("utf-8"))
    elif args.question == "downgrade_check":
        if isinstance(result, DowngradeCheckAnswer):
            result = DowngradeDocument.of_answer(result)
        assert isinstance(result, DowngradeDocument)
        out.write(json.dumps(result.summary()).encode("utf-8") + b"\n")  # for the node's headers
        result.write(out)
    else:
        assert isinstance(result, Message)
        out.write(json.dumps(result.to_json(), separators=(",", ":")).encode("utf-8"))
    out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
