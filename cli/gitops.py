"""What ``aclstore export``, ``plan``, ``apply`` and ``drift`` share: reading the desired-state
files, the live bindings of a scope, and a plan computed at one log offset.

A plan lists the live bindings in the scope (``/v1/acls/list``, one index snapshot at one
offset), reconciles them with the files (:func:`store.desired.reconcile`) and sends the
change to the node's dry run (``/v1/acls/dry-run``), which answers with the exact access it
would widen and narrow, each with a witness, judged where the state is.  The plan's offset is
the listing's: ``apply`` sends it as ``ifScopeUnchangedSince`` and the node refuses the write
if anything in the scope changed after it.

These commands exit as Terraform's ``-detailed-exitcode``: 0 no change, 2 changes (``plan``),
1 for every error, option errors included; logs and errors go to stderr only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cli.common import FAILURE_EXIT
from replicator.client import StoreClient
from replicator.contract.fields import MAX_ITEMS
from store.access_diff import AccessDelta
from store.acl import (
    ANY_FILTER,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)
from store.desired import AclsFileError, DesiredState, Reconciliation, Scope, load_acls_text, reconcile
from store.desired.document import scope_ahead
from store.desired.errors import DesiredStateError
from store.errors import StoreError

CHANGES_EXIT: Final = 2
"""``plan``: the files differ from the live state (Terraform's -detailed-exitcode 2)."""


class PlanError(DesiredStateError):
    """A plan that cannot be made or applied as asked (the message says why and the fix)."""


def exit_one_on_errors(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``handler`` with every store error as one line on stderr and exit 1 (never 2, which
    means "changes" to a CI reading the exit code)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except StoreError as exc:
            log(f"error: {' '.join(exc.message.split())}")
            return FAILURE_EXIT

    return run


def log(message: str) -> None:
    """A log line: stderr, so that stdout stays the document a CI reads."""
    print(message, file=sys.stderr, flush=True)


def add_files_option(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "-f", "--file", dest="files", action="extend", nargs="+", type=Path, required=required,
        metavar="FILE", help="desired-state ACL files (schemas/acls-file.v1.schema.json): -f a.yaml "
        "b.yaml or -f a.yaml -f b.yaml",
    )  # fmt: skip


def read_texts(paths: Sequence[Path]) -> list[tuple[str, str]]:
    """Each file's name and text (an unreadable file is an error naming it)."""
    texts = []
    for path in paths:
        try:
            texts.append((str(path), path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise AclsFileError(str(path), 0, f"cannot be read ({exc}); check the path") from exc
    return texts


def read_desired(paths: Sequence[Path]) -> DesiredState:
    """The files read and checked, as one desired state (errors name the file and line)."""
    return DesiredState.of([load_acls_text(text, source) for source, text in read_texts(paths)])


def scope_filters(scope: Scope) -> list[AclBindingFilter]:
    """DescribeAcls filters whose union holds every binding of ``scope`` (and maybe more)."""
    if scope.everything:
        return [ANY_FILTER]
    filters = [
        AclBindingFilter(entry_filter=AccessControlEntryFilter(principal=p)) for p in sorted(scope.principals)
    ]
    for rt in sorted({p.resource_type for p in scope.resource_prefixes}):
        filters.append(AclBindingFilter(pattern_filter=ResourcePatternFilter(resource_type=rt)))
    return filters


_TYPES: Final = {t.name: t for t in ResourceType}
_PATTERNS: Final = {t.name: t for t in PatternType}
_OPS: Final = {t.name: t for t in AclOperation}
_PERMS: Final = {t.name: t for t in AclPermissionType}


def list_bindings(
    client: StoreClient, filters: Sequence[AclBindingFilter], scope: Scope | None = None
) -> tuple[list[AclBinding], int, int]:
    """The live bindings the filters match (with ``scope``: those in it), streamed from one
    index snapshot; the offset of that snapshot, and how many listed bindings the scope left
    out.  Bindings are built only for what is kept: a plan over a tenth of a large store
    reads every ACL of the listed resource types, and building each is its main cost."""
    listing = client.list_acls(filters, scope=scope)  # the node leaves out the rest
    out: list[AclBinding] = []
    left_out = 0
    for r in listing:
        rt, pt = _TYPES[r.resource_type], _PATTERNS[r.pattern_type]
        rows = r.acls
        if scope is not None and not scope.owns_pattern(rt, r.name):
            kept = [row for row in rows if row[0] in scope.principals]
            left_out += len(rows) - len(kept)
            rows = kept
        for principal, host, op, perm in rows:
            out.append(AclBinding.of(rt, r.name, pt, principal, host, _OPS[op], _PERMS[perm]))
    if listing.offset is None:
        raise PlanError("the node's listing ended without its offset; retry")
    return out, listing.offset, left_out


@dataclass(frozen=True, slots=True)
class Plan:
    """What applying the files changes, at which offset, and the access it widens and narrows."""

    desired: DesiredState
    reconciliation: Reconciliation
    offset: int
    """The offset of the live state reconciled: ``apply`` refuses if the scope changed after it."""
    judged_at: int | None
    """The offset of the state the node's dry run judged the access diff at (None: no change)."""
    widened: tuple[AccessDelta, ...]
    narrowed: tuple[AccessDelta, ...]


_ATTEMPTS: Final = 3


Listing = tuple[list[AclBinding], int, int]


def plan_files(client: StoreClient, paths: Sequence[Path]) -> Plan:
    """:func:`compute_plan` of the files, the scope's listing started as soon as the scopes are
    read (:func:`store.desired.document.scope_ahead`), while the rest of the files is: the
    node works on the listing meanwhile.  A guess that the whole files contradict is dropped."""
    texts = read_texts(paths)
    guesses = [scope_ahead(text, source) for source, text in texts]
    if any(g is None for g in guesses):
        return compute_plan(client, DesiredState.of([load_acls_text(t, s) for s, t in texts]))
    guess = Scope.of_all(g for g in guesses if g is not None)
    with ThreadPoolExecutor(max_workers=1) as pool:  # the client is the thread's until joined
        early = pool.submit(list_bindings, client, scope_filters(guess), guess)
        desired = DesiredState.of([load_acls_text(t, s) for s, t in texts])
    first = early.result() if desired.scope == guess else None
    return compute_plan(client, desired, first=first)


def compute_plan(client: StoreClient, desired: DesiredState, *, first: Listing | None = None) -> Plan:
    """List the scope (``first``: a listing of it already made), reconcile, and ask the node's
    dry run for the access diff.

    The dry run reads the state again (maybe later); if the bindings it would add and remove
    are not the plan's, the scope changed in between and the plan is made again (three
    attempts)."""
    for _ in range(_ATTEMPTS):
        listed, first = first or list_bindings(client, scope_filters(desired.scope), desired.scope), None
        live, offset, _ = listed
        r = reconcile(desired.bindings, desired.scope, live)
        if not r.changes:
            return Plan(desired, r, offset, None, (), ())
        if len(r.to_add) > MAX_ITEMS or len(r.to_remove) > MAX_ITEMS:
            raise PlanError(
                f"{len(r.to_add)} to add and {len(r.to_remove)} to remove: one request (the dry run, "
                f"the apply) takes at most {MAX_ITEMS} of each; split the change over files with "
                "narrower scopes, or apply it in steps"
            )
        answer = client.dry_run_acls(
            creates=r.to_add, deletes=[b.to_filter() for b in r.to_remove], min_offset=offset
        )
        if set(answer.added) == set(r.to_add) and set(answer.removed) == set(r.to_remove):
            return Plan(desired, r, offset, answer.offset, tuple(answer.widened), tuple(answer.narrowed))
        log(f"the scope changed between offsets {offset} and {answer.offset}; planning again")
    raise PlanError(
        f"the scope ({desired.scope.describe()}) kept changing while planning ({_ATTEMPTS} attempts); "
        "retry when writes to it have settled"
    )


def removal_filters(bindings: Iterable[AclBinding]) -> list[AclBindingFilter]:
    """DeleteAcls filters that match exactly these bindings (every field specific)."""
    return [b.to_filter() for b in bindings]
