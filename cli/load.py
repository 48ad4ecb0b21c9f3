"""``aclstore import FILE``: a bulk load, the bindings of a file created in requests of up to
10,000 (CreateAcls), read as the file streams.

The file is what ``aclstore acls --list --format json`` prints (so that the ACLs of one node
move to another), a JSON array of bindings, or one binding per line; ``-`` reads stdin
(:mod:`cli.present.binding_stream`).  Creating a binding that exists changes nothing
(KIP-140), so a load that stopped (a bad binding, a refusal, a lost connection) is resumed by
running the same command again: the error says how far it got, at which log offset.

Nothing is reported as loaded that the log did not acknowledge: each request's answer names
the offset it reached, and the totals printed at the end are those of acknowledged requests.
Progress (bindings, rate, ETA by the bytes read) goes to stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from cli.common import add_client_options, store_client
from cli.output import print_json
from cli.present.binding_stream import Item, binding_items
from cli.present.progress import TerminalLine, duration_text
from replicator.client import StoreClient
from replicator.contract.bindings import InvalidItem, binding
from replicator.contract.fields import MAX_ITEMS, BadRequestError
from store.acl import AclBinding
from store.errors import InvalidRequestError, StoreError

CHUNK_CHARS = 1 << 16


class LoadError(StoreError):
    """The load stopped; the message says how far it got and how to resume."""


@dataclass
class LoadTotals:
    """What the acknowledged requests did."""

    bindings: int = 0
    records: int = 0
    requests: int = 0
    offset: int | None = None
    started: float = field(default_factory=time.monotonic)

    def resume_hint(self) -> str:
        if not self.bindings:
            return "nothing was written; run the same command again once it is fixed"
        return (
            f"the {self.bindings:,} binding(s) before it are in the store (log offset "
            f"{self.offset}); run the same command again once it is fixed: bindings that exist "
            "are not created twice"
        )


def _chunks(stream: TextIO) -> Iterator[str]:
    while True:
        chunk = stream.read(CHUNK_CHARS)
        if not chunk:
            return
        yield chunk


def read_bindings(items: Iterator[Item], source: str) -> Iterator[tuple[Item, AclBinding]]:
    """Each item as a binding to create; the first that is not one stops the load."""
    for item in items:
        where = f"{source}, line {item.line} (binding #{item.number})"
        try:
            value = binding(item.value, f"binding #{item.number}")
        except (BadRequestError, InvalidRequestError) as exc:
            raise InvalidRequestError(f"{where}: {exc.message}") from exc
        if isinstance(value, InvalidItem):
            raise InvalidRequestError(f"{where}: {value.message}")
        yield item, value


class _Progress(TerminalLine):
    """``import: 120,000 bindings, 24,100/s, 38 % of the file, ETA 21s`` on a terminal."""

    def __init__(self, stream: TextIO, size: int | None) -> None:
        super().__init__(stream)
        self.size = size

    def __call__(self, totals: LoadTotals, read_bytes: int | None) -> None:
        if not self.shown:
            return
        elapsed = time.monotonic() - totals.started
        rate = totals.bindings / elapsed if elapsed > 0 else 0.0
        parts = [f"import: {totals.bindings:,} bindings", f"{rate:,.0f}/s"]
        if self.size and read_bytes is not None and read_bytes > 0:
            share = min(1.0, read_bytes / self.size)
            parts.append(f"{share * 100:.0f} % of the file")
            if 0 < share < 1:
                parts.append(f"ETA {duration_text(elapsed * (1 - share) / share)}")
        self.show(", ".join(parts))


def load(
    client: StoreClient,
    items: Iterator[Item],
    source: str,
    *,
    batch: int,
    on_batch: Any = None,
) -> LoadTotals:
    """Create the file's bindings ``batch`` at a time; raise :class:`LoadError` or the item's
    :class:`InvalidRequestError` with the resume hint when a request is refused or fails."""
    totals = LoadTotals()
    pending: list[tuple[Item, AclBinding]] = []

    def send() -> None:
        try:
            answer = client.create_acls([b for _, b in pending])
        except StoreError as exc:
            raise LoadError(
                f"{exc.message} (while loading binding(s) #{pending[0][0].number} to "
                f"#{pending[-1][0].number} of {source}); {totals.resume_hint()}"
            ) from exc
        failed = [(item, r.error) for (item, _), r in zip(pending, answer.results, strict=True)
                  if r.error is not None]  # fmt: skip
        if failed:
            item, error = failed[0]
            more = f" (and {len(failed) - 1} more in that request)" if len(failed) > 1 else ""
            # KIP-140: the others of the request were created; count them as written.
            totals.bindings += len(pending) - len(failed)
            totals.offset = answer.offset
            raise LoadError(
                f"{source}, line {item.line} (binding #{item.number}): {error.error}: "
                f"{error.message}{more}; {totals.resume_hint()}"
            )
        totals.bindings += len(pending)
        totals.records += answer.records_written or 0
        totals.requests += 1
        totals.offset = answer.offset
        pending.clear()
        if on_batch is not None:
            on_batch(totals)

    try:
        for item, value in read_bindings(items, source):
            pending.append((item, value))
            if len(pending) >= batch:
                send()
    except InvalidRequestError as exc:
        if isinstance(exc, LoadError):
            raise
        raise InvalidRequestError(f"{exc.message}; {totals.resume_hint()}") from exc
    if pending:
        send()
    return totals


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.batch <= MAX_ITEMS:
        raise InvalidRequestError(f"--batch {args.batch}: write a number of bindings in [1, {MAX_ITEMS}]")
    path: Path | None = None if args.file == "-" else Path(args.file)
    source = "stdin" if path is None else str(path)
    try:
        stream: TextIO = (
            io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8") if path is None
            else path.open(encoding="utf-8")
        )  # fmt: skip
    except OSError as exc:
        raise InvalidRequestError(
            f"{source}: cannot be read ({exc.strerror}); name a file of bindings"
        ) from exc
    size = None if path is None else os.fstat(stream.fileno()).st_size
    raw = stream.buffer if isinstance(stream, io.TextIOWrapper) else None
    progress = _Progress(sys.stderr, size)
    try:
        with stream, store_client(args) as client:
            try:
                totals = load(
                    client, binding_items(_chunks(stream), source), source, batch=args.batch,
                    on_batch=lambda t: progress(t, raw.tell() if raw is not None and path else None),
                )  # fmt: skip
            except UnicodeDecodeError as exc:
                raise InvalidRequestError(
                    f"{source}: not UTF-8 text ({exc.reason}); save it as UTF-8"
                ) from exc
    finally:
        progress.close()
    seconds = time.monotonic() - totals.started
    if args.format == "json":
        print_json({
            "bindings": totals.bindings, "recordsWritten": totals.records,
            "requests": totals.requests, "offset": totals.offset,
        })  # fmt: skip
    else:
        print(
            f"imported {totals.bindings:,} binding(s) from {source} in {totals.requests} "
            f"request(s), {duration_text(seconds)}: {totals.records:,} new, "
            f"{totals.bindings - totals.records:,} already there"
        )
        if totals.offset is not None:
            print(f"(log offset {totals.offset})")
    return 0


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "import", help="bulk load: create the bindings of a file (as acls --list --format json prints)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )  # fmt: skip
    parser.add_argument("file", metavar="FILE", help="the bindings; - reads stdin")
    parser.add_argument("--batch", type=int, default=MAX_ITEMS, metavar="N",
                        help="bindings per request (default and most: %(default)s)")  # fmt: skip
    add_client_options(parser)
    parser.set_defaults(handler=run)
