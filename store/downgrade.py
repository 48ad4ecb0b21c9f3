"""Format downgrade gating: what lowering ``acl.format.version`` would do to access.

Lowering the finalized format announces that readers of the older format may read the log.
Such a reader ignores (or, by default, stops at) every binding whose event needs a newer
format (:func:`store.events.binding_min_reader_version`, the write path's own rule), and a
reader below format 3 sees no settings from the log at all.  KIP-290 names the hazard: an
ignored PREFIXED DENY is a silent security hole.  :func:`downgrade_refusal` runs the exact
access diff (:mod:`store.access_diff`) between what the store decides now and what such a
reader would decide, and refuses the change when any binding would be lost, naming the
access that would widen with a witness request.  Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from store.access_diff import AccessDelta, AccessDiff, AclState, access_diff, older_reader_state
from store.acl import AclBinding
from store.errors import InvalidConfigError
from store.settings import FORMAT_VERSION_CONFIG, StoreSettings, check_format_downgrade

SHOWN = 5
"""Widened rows a refusal names at most (the rest are counted)."""


class UnsafeFormatDowngradeError(InvalidConfigError):
    """Lowering ``acl.format.version`` would let an older reader allow what is denied now."""


@dataclass(frozen=True, slots=True)
class DowngradeAnalysis:
    """An older reader's view of the live state: the bindings it cannot read, and the diff."""

    version: int
    ignored: tuple[AclBinding, ...]
    diff: AccessDiff


@dataclass(frozen=True, slots=True)
class DowngradeVerdict:
    """What the format gate needs of an analysis: the refusal (None: allowed), and how many
    bindings an older reader ignores and access sets widen (for a forced downgrade's record).
    Small, so that it crosses a process boundary in a few bytes whatever the state's size."""

    refusal: InvalidConfigError | None
    ignored: int
    widened: int

    @classmethod
    def of(cls, analysis: DowngradeAnalysis) -> DowngradeVerdict:
        return cls(downgrade_refusal(analysis), len(analysis.ignored), len(analysis.diff.widened))


DowngradeAnalyst = Callable[[int, int], DowngradeVerdict]
"""``(version, offset) -> verdict``: :meth:`DowngradeVerdict.of` :func:`analyse_downgrade` of
the live state at ``offset`` (at least), done elsewhere with the same local super users: a
node asks a process of its own over its index, so that the gate's walk takes nothing from its
decisions."""


def analyse_downgrade(
    live: Iterable[AclBinding],
    settings: StoreSettings,
    version: int,
    *,
    local_super_users: Iterable[str] = (),
) -> DowngradeAnalysis:
    """What a reader of ``version`` with the ``ignore`` policy would decide differently.

    ``local_super_users`` (a node's static ``super.users``) are the same for every reader, so
    they count on both sides.
    """
    config = settings.authorizer_config()
    state = AclState.of(live, config.super_users, config.allow_everyone_if_no_acl_found)
    older, _ = older_reader_state(state, version)
    local = frozenset(local_super_users)
    now = AclState(state.bindings, state.super_users | local, state.allow_everyone_if_no_acl_found)
    then = AclState(older.bindings, older.super_users | local, older.allow_everyone_if_no_acl_found)
    ignored = tuple(sorted(state.bindings - older.bindings))
    diff = AccessDiff(widened=(), narrowed=()) if now == then else access_diff(now, then)
    return DowngradeAnalysis(version, ignored, diff)


def downgrade_refusal(analysis: DowngradeAnalysis) -> InvalidConfigError | None:
    """The error that refuses the downgrade, or None when an older reader loses nothing.

    Widened access is named first (:class:`UnsafeFormatDowngradeError`); with none, a binding
    an older reader cannot read is still refused (such a reader would stop at it, or narrow
    access), with the store's existing message.
    """
    widened = analysis.diff.widened
    return refusal_for(
        analysis.version, len(analysis.ignored), analysis.ignored[:1], len(widened), widened[:SHOWN]
    )


def refusal_for(
    version: int, ignored: int, first_ignored: Sequence[AclBinding], widened: int,
    shown: Sequence[AccessDelta],
) -> InvalidConfigError | None:  # fmt: skip
    """:func:`downgrade_refusal` from what it reads of an analysis: how many bindings are
    ignored and the first of them (DescribeAcls order), how many rows widen and the first
    ones (up to five are named), as a walk in parts collects them."""
    if widened:
        shown_text = "; ".join(
            f"{row.operation.name} on {row.resource_type.name} {row.names} for "
            f"{row.principal if row.principal != '*' else 'any principal'} "
            f"(e.g. {row.witness.principal} from {row.witness.host} on "
            f"{row.witness.resource_name!r})"
            for row in shown[:SHOWN]
        )
        more = f" and {widened - SHOWN} more" if widened > SHOWN else ""
        return UnsafeFormatDowngradeError(
            f"cannot lower {FORMAT_VERSION_CONFIG} to {version}: a reader of format {version} "
            f"ignores {ignored} live binding(s) and would allow what is denied "
            f"now: {shown_text}{more}; delete or rewrite those bindings first, or force the "
            "downgrade with a reason (aclstore downgrade-check shows the full diff)"
        )
    try:
        check_format_downgrade(first_ignored, version)
    except InvalidConfigError as exc:
        return exc
    return None
