"""``aclstore drift -f FILE...``: where the live ACLs differ from the desired-state files, and
who made them differ.

Reads the change log itself (the embedded log under ``--data-dir``, or ``--bootstrap-servers``
and ``--topic``), folded through the store's one fold into
:class:`store.desired.attribution.Attribution`: each live binding with the change that created
it, each deleted one with the change that deleted it.  It reports, with actor, offset and time:

* ``undeclared``: live bindings in a file's scope that no file declares;
* ``missing``: declared bindings that are not live (with the delete that removed them, while
  the compacted log still holds it, or with ``--history`` from the history archive, which
  keeps it; never-created ones have none);
* ``outside``: live bindings outside every scope, reported apart (no file owns them).

Exit 0 no drift in scope, 2 drift, 1 error.  ``--watch`` keeps following the log: each new
drift (and each one resolved) is an alert row on stdout (a JSON line with ``--format json``)
and in ``--alerts FILE``, and ``--metrics-file`` is rewritten in Prometheus' text format for
node_exporter's textfile collector.  ``--revert`` (with ``--store`` and a credential) writes the
revert of each drift in scope through the node, guarded by the offset the drift was seen at, so
the revert is an event of its own with this command's credential as the actor; every revert is
printed and alerted: nothing is reverted silently.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from cli import acl_command as ac
from cli.common import (
    add_client_options,
    add_log_config_option,
    exit_one_on_option_errors,
    log_client,
    store_client,
)
from cli.gitops import (
    CHANGES_EXIT,
    add_files_option,
    exit_one_on_errors,
    log,
    read_desired,
    removal_filters,
)
from cli.present.timeparse import format_time
from cli.spark_connect import add_remote_option
from replicator.contract.bindings import binding_json
from store.acl import AclBinding
from store.desired import DesiredState, reconcile
from store.desired.attribution import Attribution, Origin
from store.errors import InvalidConfigError
from store.events import ACL_DELETED
from store.fold import fold_records
from store.log.base import ChangeLog

DEFAULT_TOPIC: Final = "aclstore-acls"
KINDS: Final = ("undeclared", "missing", "outside")


@dataclass(frozen=True, slots=True)
class Drift:
    kind: str
    binding: AclBinding
    origin: Origin | None
    declared_at: str | None
    reference: str | None = None
    """The ``apply --reference`` of the batch that made it so, if it named one."""

    def json(self) -> dict[str, Any]:
        o = self.origin
        return {
            "kind": self.kind, "binding": binding_json(self.binding),
            "offset": None if o is None else o.offset, "actor": None if o is None else o.actor,
            "time": None if o is None else format_time(o.when_ms), "reference": self.reference,
            "declaredAt": self.declared_at,
        }  # fmt: skip

    def text(self) -> str:
        o = self.origin
        if o is None:
            why = "never in the log's history" if self.kind == "missing" else "origin unknown"
        else:
            verb = "deleted" if self.kind == "missing" else "created"
            who = o.actor or "an unknown actor (a tombstone)"
            why = f"{verb} by {who} at offset {o.offset} ({format_time(o.when_ms)})"
            if self.reference:
                why += f", reference {self.reference}"
        at = f"  [{self.declared_at}]" if self.declared_at else ""
        return f"{self.kind.upper():<10} {ac.binding_text(self.binding)}  {why}{at}"


def drifts(desired: DesiredState, state: Attribution) -> list[Drift]:
    """Every drift of the state from the files: in scope first (undeclared, missing), then outside."""
    r = reconcile(desired.bindings, desired.scope, state.live)
    live, deleted, ref = state.live, state.deleted, state.reference_of
    out = [Drift("undeclared", b, live[b], None, ref(live[b])) for b in r.to_remove]
    out += [
        Drift("missing", b, deleted.get(b), desired.declared_at(b), ref(deleted.get(b))) for b in r.to_add
    ]
    out += [Drift("outside", b, live[b], None, ref(live[b])) for b in r.outside]
    return out


def drift_of(desired: DesiredState, state: Attribution, b: AclBinding) -> Drift | None:
    """The drift of one binding now (None: none): what a watch recomputes for each change."""
    live = state.live.get(b)
    if not desired.scope.contains(b):
        return None if live is None else Drift("outside", b, live, None, state.reference_of(live))
    declared = b in desired.bindings
    if live is not None and not declared:
        return Drift("undeclared", b, live, None, state.reference_of(live))
    if live is None and declared:
        gone = state.deleted.get(b)
        return Drift("missing", b, gone, desired.declared_at(b), state.reference_of(gone))
    return None


def from_history(args: argparse.Namespace, found: list[Drift]) -> list[Drift]:
    """The missing bindings whose delete the compacted log no longer names (or names only by
    its tombstone), with the delete the history archive kept: actor, offset, time."""
    unknown = {
        d.binding for d in found if d.kind == "missing" and (d.origin is None or d.origin.actor is None)
    }
    if not unknown:
        return found
    from cli.history import history_archive

    last: dict[AclBinding, Origin] = {}
    for e in history_archive(args).events().events:
        if e.type == ACL_DELETED and e.binding in unknown and e.actor is not None:
            last[e.binding] = Origin(e.offset, e.time_ms, e.actor, e.time_ms, e.request_id)
    return [
        replace(d, origin=last[d.binding]) if d.kind == "missing" and d.binding in last else d for d in found
    ]


def open_change_log(args: argparse.Namespace) -> ChangeLog:
    from store.log import EmbeddedChangeLog, KafkaChangeLog

    if args.topic and not args.bootstrap_servers:
        raise InvalidConfigError("--topic needs --bootstrap-servers (the embedded log has no topics)")
    if args.bootstrap_servers:
        return KafkaChangeLog(
            args.bootstrap_servers, args.topic or DEFAULT_TOPIC, create_topic=False, client=log_client(args)
        )
    path = Path(args.data_dir).resolve() / "log"
    if not path.exists():
        raise InvalidConfigError(
            f"no embedded log at {path}: give the node's --data-dir, or --bootstrap-servers"
        )
    return EmbeddedChangeLog(path)


def catch_up(log_: ChangeLog, state: Attribution, *, timeout: float = 30.0) -> list[AclBinding]:
    """Fold the log up to its current end into ``state``; the bindings changed."""
    high = log_.watermarks(timeout=timeout)[1]
    touched: list[AclBinding] = []
    deadline = time.monotonic() + timeout
    while state.next_offset < high:
        if time.monotonic() > deadline:
            raise InvalidConfigError(
                f"could not read {log_} up to offset {high - 1} within {timeout} s; retry"
            )
        records = log_.read(state.next_offset, timeout=1.0)
        touched += state.apply(fold_records(r for r in records if r.offset < high))
        if records and records[-1].offset + 1 > state.next_offset:
            state.next_offset = min(records[-1].offset + 1, high)
    return touched


@exit_one_on_errors
def drift(args: argparse.Namespace) -> int:
    if args.revert and not args.watch:
        raise InvalidConfigError("--revert goes with --watch (a one-off revert is `aclstore apply`)")
    desired = read_desired(args.files)
    change_log = open_change_log(args)
    try:
        state = Attribution()
        catch_up(change_log, state)
        found = drifts(desired, state)
        if args.history:
            found = from_history(args, found)
        if not args.watch:
            _print_report(args, found, state.offset)
            return CHANGES_EXIT if any(d.kind != "outside" for d in found) else 0
        return _watch(args, desired, change_log, state, found)
    finally:
        change_log.close()


def _print_report(args: argparse.Namespace, found: list[Drift], offset: int) -> None:
    if args.format == "json":
        doc: dict[str, Any] = {k: [d.json() for d in found if d.kind == k] for k in KINDS}
        print(json.dumps({**doc, "offset": offset}, indent=2, ensure_ascii=False))
        return
    in_scope = [d for d in found if d.kind != "outside"]
    print(
        f"Drift in scope: {len(in_scope)}"
        + ("" if in_scope else " (the live ACLs in scope are the declared ones)")
    )
    for d in in_scope:
        print(f"  {d.text()}")
    outside = [d for d in found if d.kind == "outside"]
    print(f"Outside every scope (no file owns them): {len(outside)}")
    for d in outside:
        print(f"  {d.text()}")
    print(f"(log offset {offset})")


# --- watching ---------------------------------------------------------------------------------


def _watch(
    args: argparse.Namespace, desired: DesiredState, change_log: ChangeLog, state: Attribution,
    found: list[Drift],
) -> int:  # fmt: skip
    """Alert on the drift there now, then follow the log: each change is judged for the
    bindings it touched alone (:func:`drift_of`), so an alert's delay does not grow with the
    store."""
    alerts = 0
    every: dict[AclBinding, Drift] = {d.binding: d for d in found}
    counts = Counter(d.kind for d in found)
    client = store_client(args) if args.revert else None
    log(f"watching {change_log} from offset {state.offset} for drift from {len(desired.files)} file(s)")
    try:
        changed: list[tuple[Drift | None, Drift | None]] = [(None, d) for d in found]
        while True:
            for old, new in changed:
                if old is not None and (new is None or new.kind != old.kind) and _alerted(args, old):
                    _alert(args, "resolved", old, state.offset)
                if new is not None and (old is None or old.kind != new.kind) and _alerted(args, new):
                    alerts += 1
                    _alert(args, "drift", new, state.offset)
            _write_metrics(args, counts, state.offset, alerts)
            in_scope = (
                [d for d in every.values() if d.kind != "outside"] if client is not None or args.once else []
            )
            if client is not None and in_scope:
                _revert(args, client, desired, in_scope, state.offset)
            if args.once:
                return CHANGES_EXIT if in_scope else 0
            touched: list[AclBinding] = []
            while not touched:
                time.sleep(args.interval)
                touched = catch_up(change_log, state)
            changed = []
            for b in dict.fromkeys(touched):
                old, new = every.pop(b, None), drift_of(desired, state, b)
                if new is not None:
                    every[b] = new
                    counts[new.kind] += 1
                if old is not None:
                    counts[old.kind] -= 1
                changed.append((old, new))
    finally:
        if client is not None:
            client.close()


def _alerted(args: argparse.Namespace, d: Drift) -> bool:
    return d.kind != "outside" or bool(args.alert_outside)


def _alert(args: argparse.Namespace, event: str, d: Drift, offset: int) -> None:
    row = {"alert": event, "seenAtOffset": offset, "seenAt": format_time(int(time.time() * 1000)), **d.json()}
    _record(args, row)
    if args.format == "json":
        print(json.dumps(row, ensure_ascii=False), flush=True)
    else:
        print(f"{event.upper():<9} {d.text()}  (seen at offset {offset})", flush=True)


def _record(args: argparse.Namespace, row: dict[str, Any]) -> None:
    """Append an alert row to ``--alerts`` (before it is printed: once seen, it is recorded)."""
    if args.alerts is not None:
        with args.alerts.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def _revert(
    args: argparse.Namespace, client: Any, desired: DesiredState, in_scope: list[Drift], offset: int
) -> None:
    if not in_scope:
        return
    remove = [d.binding for d in in_scope if d.kind == "undeclared"]
    add = [d.binding for d in in_scope if d.kind == "missing"]
    try:
        answer = client.alter_acls(
            creates=add, deletes=removal_filters(remove), scope=desired.scope,
            if_scope_unchanged_since=offset, reference=args.reference or f"drift revert at offset {offset}",
        )  # fmt: skip
    except Exception as exc:  # the node refused (the scope moved on, or no right): say so, go on
        log(f"revert refused: {getattr(exc, 'message', exc)}; the drift stays reported")
        return
    for d in in_scope:
        row = {"alert": "reverted", "seenAtOffset": offset, "revertOffset": answer.offset, **d.json()}
        _record(args, row)
        if args.format == "json":
            print(json.dumps(row, ensure_ascii=False), flush=True)
        else:
            print(f"REVERTED  {d.text()}  (revert written at offset {answer.offset})", flush=True)


def _metric_lines(counts: Counter[str], offset: int, alerts: int) -> Iterator[str]:
    yield "# HELP aclstore_drift_bindings Bindings that differ from the desired-state files, by kind."
    yield "# TYPE aclstore_drift_bindings gauge"
    for kind in KINDS:
        yield f'aclstore_drift_bindings{{kind="{kind}"}} {counts[kind]}'
    yield "# HELP aclstore_drift_offset The log offset the drift was computed at."
    yield "# TYPE aclstore_drift_offset gauge"
    yield f"aclstore_drift_offset {offset}"
    yield "# HELP aclstore_drift_alerts_total Drift alerts raised since the watch started."
    yield "# TYPE aclstore_drift_alerts_total counter"
    yield f"aclstore_drift_alerts_total {alerts}"


def _write_metrics(args: argparse.Namespace, counts: Counter[str], offset: int, alerts: int) -> None:
    if args.metrics_file is None:
        return
    target: Path = args.metrics_file
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text("\n".join(_metric_lines(counts, offset, alerts)) + "\n", encoding="utf-8")
    os.replace(tmp, target)  # node_exporter never reads half a file


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "drift", help="live ACLs that differ from desired-state files, with who changed them",
        description="Compare the change log's live ACLs with desired-state files: undeclared and "
        "missing bindings in scope and bindings outside every scope, each with the change (actor, "
        "offset, time) that made it so. Exit 0: no drift in scope; 2: drift; 1: error.",
    )  # fmt: skip
    exit_one_on_option_errors(parser)
    add_files_option(parser)
    a = parser.add_argument
    a("--data-dir", default="aclstore-data", help="the node's data dir (embedded log; default: %(default)s)")
    a("--bootstrap-servers", help="read a Kafka topic as the log instead of the embedded one")
    a("--topic", help=f"the change-log topic (default: {DEFAULT_TOPIC}; needs --bootstrap-servers)")
    add_log_config_option(parser)
    h = parser.add_argument_group("the history archive").add_argument
    h("--history", action="store_true",
      help="a missing binding's delete from the history archive when the log lost it")  # fmt: skip
    h("--archive", metavar="URI", help="the history tables' location (default: <data-dir>/history)")
    h("--master", default="local[2]", help="the Spark master (default: %(default)s)")
    add_remote_option(parser)
    w = parser.add_argument_group("watching").add_argument
    w("--watch", action="store_true", help="keep following the log; alert on each new drift")
    w("--once", action="store_true", help="with --watch: alert on the drift now, then exit")
    w("--interval", type=float, default=0.1, metavar="S", help="seconds between polls (default: %(default)s)")
    w("--alerts", type=Path, metavar="FILE", help="append each alert as a JSON line")
    w("--metrics-file", type=Path, metavar="FILE", help="rewrite Prometheus text metrics here")
    w("--alert-outside", action="store_true", help="alert on bindings outside every scope too")
    w("--reference", metavar="REF", help="the reference a revert records (default: drift revert at offset N)")
    w("--revert", action="store_true",
      help="write the revert of each drift in scope through the node (--store, credential)")  # fmt: skip
    add_client_options(parser)
    parser.set_defaults(handler=drift)
