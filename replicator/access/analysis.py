"""A dry run and a downgrade check over one read of the index, answered as the contract's bodies.

The change is judged as a :class:`store.access_stream.StateChange` of the live state: a dry
run's bindings added and removed (``creates`` not there already; the live bindings the
``deletes`` filters match, as DeleteAcls matches them), or an older reader's rule.  The
settings are the log's (``super.users``, ``allow.everyone.if.no.acl.found`` as the index
applied them), as ``describe-configs`` shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from replicator.contract.access import DowngradeCheckAnswer, DryRunAnswer
from replicator.index.patterns import IndexPatterns
from replicator.index.view import IndexView
from store.access_diff import AccessDelta, AccessDiff, AclState, Change
from store.access_stream import (
    Listed,
    PatternSource,
    StateChange,
    WalkFigures,
    settings_state,
    streamed_diff,
)
from store.acl import AclBinding, AclBindingFilter, PatternType, ResourceType
from store.authorizer import AuthorizerConfig
from store.downgrade import DowngradeAnalysis, DowngradeVerdict, UnsafeFormatDowngradeError
from store.errors import InvalidConfigError


class IndexRead:
    """One read of the index: pattern by pattern in name order
    (:class:`store.access_stream.PatternSource`, through ``patterns``) and by DeleteAcls
    filters (through ``view``, :meth:`IndexView.acls`)."""

    def __init__(self, patterns: IndexPatterns, view: IndexView) -> None:
        self._patterns, self.view = patterns, view

    @property
    def index_patterns(self) -> IndexPatterns:
        return self._patterns

    def resource_types(self) -> Iterable[ResourceType]:
        return self._patterns.resource_types()

    def patterns(self, resource_type: ResourceType, under: str) -> Iterator[Listed]:
        return self._patterns.patterns(resource_type, under)

    def bindings_of(self, resource_type: ResourceType, pattern_type: PatternType,
                    name: str) -> list[AclBinding]:  # fmt: skip
        return self._patterns.bindings_of(resource_type, pattern_type, name)

    def prefix_lengths(self, resource_type: ResourceType) -> Sequence[int]:
        return self._patterns.prefix_lengths(resource_type)

    def count_under(self, resource_type: ResourceType, under: str, limit: int) -> int:
        return self._patterns.count_under(resource_type, under, limit)

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return self.view.acls(acl_filter)


def log_settings(config: Mapping[str, str]) -> AclState:
    """The settings the log set (``ConfigAltered`` values), as a state without bindings."""
    parsed = AuthorizerConfig.from_properties(dict(config), ignore_unknown=True)
    return settings_state(parsed.super_users, parsed.allow_everyone_if_no_acl_found)


@dataclass(frozen=True, slots=True)
class PlannedChange:
    added: list[AclBinding]
    removed: list[AclBinding]


def planned_change(
    source: IndexRead, creates: Iterable[AclBinding], deletes: Iterable[AclBindingFilter]
) -> PlannedChange:
    """The bindings ``creates`` would add (those not live) and ``deletes`` would remove (the
    live ones a filter matches, against the state before), each sorted as DescribeAcls."""
    added: list[AclBinding] = []
    for b in dict.fromkeys(creates):
        if b not in source.bindings_of(b.resource_type, b.pattern_type, b.name):
            added.append(b)
    removed: set[AclBinding] = set()
    for f in deletes:
        removed.update(source.acls(f))
    return PlannedChange(sorted(added), sorted(removed))


def _split(rows: Iterable[AccessDelta]) -> tuple[list[AccessDelta], list[AccessDelta]]:
    widened: list[AccessDelta] = []
    narrowed: list[AccessDelta] = []
    for row in rows:
        (widened if row.change is Change.WIDENED else narrowed).append(row)
    return widened, narrowed


def dry_run_answer(
    source: PatternSource, settings: AclState, plan: PlannedChange, offset: int
) -> DryRunAnswer:
    """The access the planned change would widen and narrow (nothing is written)."""
    change = StateChange.of_bindings(settings, plan.added, plan.removed)
    widened, narrowed = _split(streamed_diff(source, change))
    return DryRunAnswer(
        added=plan.added, removed=plan.removed, widened=widened, narrowed=narrowed, offset=offset
    )


def downgrade_answer(
    source: PatternSource, settings: AclState, to: int, offset: int, *,
    local_super_users: Iterable[str] = (), on_read: Callable[[int], None] | None = None,
    figures: WalkFigures | None = None,
) -> DowngradeCheckAnswer:  # fmt: skip
    """What a replica of event format ``to`` with ``too_new_events=ignore`` would decide
    differently; the bindings it ignores are collected as the walk drops them.
    ``local_super_users`` (a node's static ``super.users``) count on both sides; ``on_read``
    hears how many bindings were read, now and then."""
    ignored: list[AclBinding] = []
    change = StateChange.downgrade(settings, to, local_super_users)
    rows = streamed_diff(source, change, on_dropped=ignored.append, on_read=on_read, figures=figures)
    widened, narrowed = _split(rows)
    ignored.sort()
    return DowngradeCheckAnswer(
        safe=not widened, to=to, ignored=ignored, stopping=len(ignored), widened=widened,
        narrowed=narrowed, offset=offset,
    )  # fmt: skip


_REFUSALS: dict[str, type[InvalidConfigError]] = {
    cls.__name__: cls for cls in (InvalidConfigError, UnsafeFormatDowngradeError)
}


def answer_verdict(answer: DowngradeCheckAnswer) -> DowngradeVerdict:
    """The format gate's verdict on a downgrade check (:class:`store.downgrade.DowngradeVerdict`)."""
    analysis = DowngradeAnalysis(answer.to, tuple(answer.ignored), AccessDiff(tuple(answer.widened), ()))
    return DowngradeVerdict.of(analysis)


def verdict_json(verdict: DowngradeVerdict) -> dict[str, object]:
    """A verdict as the worker hands it to the node: a few bytes, whatever the answer's size."""
    refusal = verdict.refusal
    return {
        "refusal": None if refusal is None else {"error": type(refusal).__name__, "message": refusal.message},
        "ignored": verdict.ignored,
        "widened": verdict.widened,
    }


def verdict_of(value: dict[str, object]) -> DowngradeVerdict:
    """:func:`verdict_json` read back."""
    refusal = value["refusal"]
    error: InvalidConfigError | None = None
    if isinstance(refusal, dict):
        error = _REFUSALS.get(str(refusal["error"]), InvalidConfigError)(str(refusal["message"]))
    ignored, widened = value["ignored"], value["widened"]
    assert isinstance(ignored, int) and isinstance(widened, int)
    return DowngradeVerdict(error, ignored, widened)
