"""The downgrade watch's pure part: the live state, when to judge it, the verdict, the alerts.

The live state (bindings and the settings that decide) is brought forward by the history
archive's events (:class:`jobs.common.events.HistoryEvent`, decoded through the one fold).
At the end of each micro-batch the watch asks :func:`store.downgrade.analyse_downgrade` (the
gate's own analysis: :func:`store.access_diff.older_reader_state`, then the exact diff)
whether a reader of event format ``version`` would allow anything the state denies.

Incremental: only bindings an older reader ignores (minimum reader version above
``version``, :func:`store.events.binding_min_reader_version`) differ between the state and
that reader's view, so the verdict can change only when a batch changes such a binding, a
setting that decides (``super.users``, ``allow.everyone.if.no.acl.found``), or a binding
whose pattern overlaps an ignored binding's pattern (its resource names can meet them: the
same literal, a literal under an ignored prefix, prefixes one under the other, ``*``).  Any
other batch keeps the verdict without running the analysis.

An alert is written only on a transition (safe -> unsafe or unsafe -> safe); the state before
the first record is empty, hence safe.  "Unsafe since" is the latest alert when it is a
safe -> unsafe one.  Pure: no Spark, no I/O.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from jobs.common.events import HistoryEvent
from store.access_diff import Request
from store.acl import WILDCARD_RESOURCE, AclBinding, PatternType, ResourceType
from store.authorizer import ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG
from store.authorizer.applicable import applicable
from store.downgrade import analyse_downgrade
from store.events import binding_min_reader_version
from store.principal import SUPER_USERS_CONFIG
from store.replay import replay
from store.settings import StoreSettings

DECIDING_SETTINGS: Final = frozenset((SUPER_USERS_CONFIG, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG))
TO_UNSAFE: Final = "safe->unsafe"
TO_SAFE: Final = "unsafe->safe"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """Whether the state just after ``offset`` is safe to downgrade to ``version``."""

    version: int
    offset: int
    time_ms: int | None
    safe: bool
    widened: int
    ignored: int
    witness: Request | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Alert:
    """A transition of the verdict, at the end of the micro-batch that made it."""

    offset: int
    time_ms: int | None
    version: int
    transition: str  # TO_UNSAFE or TO_SAFE
    widened: int
    ignored: int
    witness: Request | None = None

    @property
    def safe(self) -> bool:
        return self.transition == TO_SAFE


def transition(previous_safe: bool, verdict: Verdict) -> Alert | None:
    """The alert ``verdict`` raises after a state judged ``previous_safe``, if any."""
    if verdict.safe == previous_safe:
        return None
    return Alert(
        offset=verdict.offset, time_ms=verdict.time_ms, version=verdict.version,
        transition=TO_SAFE if verdict.safe else TO_UNSAFE, widened=verdict.widened,
        ignored=verdict.ignored, witness=verdict.witness,
    )  # fmt: skip


def unsafe_since(alerts: Iterable[Alert]) -> Alert | None:
    """The alert since which the current unsafe state has held (None while safe)."""
    latest = max(alerts, key=lambda a: a.offset, default=None)
    return latest if latest is not None and not latest.safe else None


def last_safe(alerts: Iterable[Alert]) -> bool:
    """The verdict the latest alert left (safe before any alert: the empty state is)."""
    latest = max(alerts, key=lambda a: a.offset, default=None)
    return True if latest is None else latest.safe


class _Named:
    """One pattern type's ignored patterns, as :func:`store.authorizer.applicable.applicable`
    reads them: a pattern's entry is its count."""

    __slots__ = ("counts", "pattern_type")

    def __init__(self, counts: dict[tuple[PatternType, str], int], pattern_type: PatternType) -> None:
        self.counts, self.pattern_type = counts, pattern_type

    def get(self, name: str, /) -> int | None:
        return self.counts.get((self.pattern_type, name))


_NO_LITERALS: dict[str, int] = {}


class _Patterns:
    """The patterns of one resource type's ignored bindings (counted, for overlap tests)."""

    __slots__ = ("counts", "literals", "prefixes")

    def __init__(self) -> None:
        self.counts: dict[tuple[PatternType, str], int] = {}
        self.literals: list[str] = []
        self.prefixes: list[str] = []

    def change(self, binding: AclBinding, delta: int) -> None:
        key = (binding.pattern_type, binding.name)
        names = self.prefixes if binding.pattern_type is PatternType.PREFIXED else self.literals
        count = self.counts.get(key, 0) + delta
        if count > 0:
            if key not in self.counts:
                bisect.insort(names, binding.name)
            self.counts[key] = count
        elif key in self.counts:
            del self.counts[key]
            names.pop(bisect.bisect_left(names, binding.name))

    def overlaps(self, binding: AclBinding) -> bool:
        """Whether some resource name matches both ``binding``'s pattern and an ignored one."""
        if not self.counts:
            return False
        if (PatternType.LITERAL, WILDCARD_RESOURCE) in self.counts:
            return True
        name = binding.name
        lengths = sorted({len(p) for p in self.prefixes})
        prefixed = _Named(self.counts, PatternType.PREFIXED)
        if binding.pattern_type is PatternType.LITERAL:
            # the name itself, or * (every name); else an ignored pattern that applies to it
            literal = _Named(self.counts, PatternType.LITERAL)
            return name == WILDCARD_RESOURCE or bool(applicable(name, literal, prefixed, lengths))
        if binding.pattern_type is not PatternType.PREFIXED:
            return False
        if self._under(self.literals, name) or self._under(self.prefixes, name):
            return True  # an ignored pattern under this prefix
        return bool(applicable(name, _NO_LITERALS, prefixed, lengths))  # or above it

    @staticmethod
    def _under(names: Sequence[str], prefix: str) -> bool:
        i = bisect.bisect_left(names, prefix)
        return i < len(names) and names[i].startswith(prefix)


class LiveState:
    """The live bindings and settings, folded forward event by event, judged on demand.

    A state the log is folded into (:class:`store.replay.AclReplay`): events reach it through
    :func:`store.replay.replay`, a resumed state through :meth:`load_snapshot`.
    """

    def __init__(
        self,
        version: int,
        bindings: Iterable[AclBinding] = (),
        settings: dict[str, str] | None = None,
    ) -> None:
        self.version = version
        self.bindings: set[AclBinding] = set()
        self.settings: dict[str, str] = {}
        self._ignored: dict[ResourceType, _Patterns] = {}
        self._dirty = True
        self.load_snapshot(bindings, settings or {}, -1)

    def ignored(self, binding: AclBinding) -> bool:
        """Whether a reader of ``version`` (with the ``ignore`` policy) leaves it out."""
        return binding_min_reader_version(binding) > self.version

    def apply(self, events: Iterable[HistoryEvent]) -> None:
        """Fold ``events`` (in offset order) into the state, noting whether they can change
        the verdict."""
        replay(events, self)

    # -- the replay interface (store.replay.AclReplay) ------------------------------------------

    def load_snapshot(self, bindings: Iterable[AclBinding], settings: Mapping[str, str], offset: int) -> None:
        """The state is ``bindings`` and ``settings``, not judged yet (``offset`` is the
        caller's to judge it at)."""
        self.bindings = set()
        self.settings = dict(settings)
        self._ignored = {}
        self._dirty = True  # nothing judged yet
        for binding in bindings:
            self._add(binding)

    def add_acl(self, binding: AclBinding, at: HistoryEvent) -> None:
        if binding not in self.bindings:
            self._add(binding)
            self._note(binding)

    def remove_acl(self, binding: AclBinding, at: HistoryEvent) -> None:
        if binding in self.bindings:
            self.bindings.remove(binding)
            if self.ignored(binding):
                self._ignored[binding.resource_type].change(binding, -1)
            self._note(binding)

    def alter_config(self, name: str, value: str | None, at: HistoryEvent) -> None:
        if value is None:
            old = self.settings.pop(name, None)
        else:
            old, self.settings[name] = self.settings.get(name), value
        if name in DECIDING_SETTINGS and old != value:
            self._dirty = True

    def pass_over(self, at: HistoryEvent) -> None:
        """Nothing changes."""

    def _add(self, binding: AclBinding) -> None:
        self.bindings.add(binding)
        if self.ignored(binding):
            self._ignored.setdefault(binding.resource_type, _Patterns()).change(binding, 1)

    def _note(self, binding: AclBinding) -> None:
        if self._dirty:
            return
        if self.ignored(binding):
            self._dirty = True
            return
        patterns = self._ignored.get(binding.resource_type)
        self._dirty = patterns is not None and patterns.overlaps(binding)

    @property
    def may_have_changed(self) -> bool:
        """Whether the events since the last :meth:`judge` can have changed its verdict."""
        return self._dirty

    def judge(self, offset: int, time_ms: int | None, previous: Verdict | None = None) -> Verdict:
        """The verdict on the state now (just after ``offset``); ``previous`` is kept, at the
        new offset, when nothing since it can have changed it."""
        if previous is not None and not self._dirty:
            return Verdict(
                version=self.version, offset=offset, time_ms=time_ms, safe=previous.safe,
                widened=previous.widened, ignored=previous.ignored, witness=previous.witness,
            )  # fmt: skip
        analysis = analyse_downgrade(self.bindings, StoreSettings(self.settings), self.version)
        widened = analysis.diff.widened
        self._dirty = False
        return Verdict(
            version=self.version, offset=offset, time_ms=time_ms, safe=not widened,
            widened=len(widened), ignored=len(analysis.ignored),
            witness=widened[0].witness if widened else None,
        )  # fmt: skip


def prometheus_text(verdict: Verdict, since: Alert | None) -> str:
    """The verdict in Prometheus' text format, for node_exporter's textfile collector."""
    label = f'{{to="{verdict.version}"}}'
    gauges = [
        ("aclstore_downgrade_safe", "1 when a replica of event format `to` (ignoring what it "
         "cannot read) would allow nothing the live state denies, else 0", int(verdict.safe)),
        ("aclstore_downgrade_offset", "The log offset the verdict reflects", verdict.offset),
        ("aclstore_downgrade_widened", "Symbolic sets of requests that would widen", verdict.widened),
        ("aclstore_downgrade_ignored_bindings", "Live bindings a reader of format `to` cannot "
         "read", verdict.ignored),
        ("aclstore_downgrade_unsafe_since_offset", "The offset of the alert since which the "
         "state has been unsafe (-1 while safe)", -1 if since is None else since.offset),
    ]  # fmt: skip
    lines: list[str] = []
    for name, help_text, value in gauges:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name}{label} {value}"]
    return "\n".join(lines) + "\n"
