"""Per-pattern grant summaries: what the decision procedure (:mod:`.engine`) reads.

A :class:`PatternAcls` holds the ACLs of one resource pattern as ``grants[principal][host]``,
each a :class:`Grant`: bit masks of the requested operations its ACLs allow and deny (the
implications of :func:`~store.authorizer.decision.covered_operations` folded in), and a
ready-made :class:`~store.authorizer.decision.Decision` per ACL so that answering allocates
nothing.  Kafka's ``StandardAuthorizerData`` reads its ``AclCache`` the same way: the
storage behind it is not the procedure's concern.

:class:`~store.authorizer.memory_index.InMemoryAclIndex` keeps these summaries as its
tables; a view that stores bindings elsewhere (the replica's RocksDB index, the scanning
reference view) builds them from the bindings of each pattern with :func:`pattern_acls`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from store.acl import AclBinding, AclPermissionType, ResourceType
from store.authorizer.decision import ALLOWED, COVERED, DENIED, Decision, DecisionRule

TYPE_SLOTS = max(ResourceType) + 1
"""Tables of summaries are lists indexed by the resource type's int8 code."""


class Grant:
    """The ACLs of one resource pattern for one (principal, host): their operation masks.

    ``deny_mask`` / ``allow_mask`` hold a bit per requested operation the ACLs cover (see
    :func:`~store.authorizer.decision.covered_operations`).  Within a grant an ACL is fixed
    by its operation and permission, which key ``decisions``; each ACL keeps a ready-made
    :class:`Decision` so that answering allocates nothing.
    """

    __slots__ = ("allow_mask", "decisions", "deny_mask")

    def __init__(self) -> None:
        self.allow_mask = 0
        self.deny_mask = 0
        self.decisions: dict[int, Decision] = {}

    @staticmethod
    def key(binding: AclBinding) -> int:
        entry = binding.entry
        return entry.operation << 3 | entry.permission_type

    def add(self, binding: AclBinding) -> bool:
        entry = binding.entry
        operation, permission = entry.operation, entry.permission_type
        key = operation << 3 | permission
        if key in self.decisions:
            return False
        # The decision goes in before the mask bit and leaves after it, so that a reader
        # never sees a bit without its decision.
        mask = COVERED[permission][operation]
        if permission is AclPermissionType.ALLOW:
            self.decisions[key] = Decision(ALLOWED, DecisionRule.MATCHING_ACL, binding)
            self.allow_mask |= mask
        else:  # DENY (Kafka also treats UNKNOWN permission types as DENY)
            self.decisions[key] = Decision(DENIED, DecisionRule.MATCHING_ACL, binding)
            self.deny_mask |= mask
        return True

    def remove(self, binding: AclBinding) -> bool:
        key = self.key(binding)
        if key not in self.decisions:
            return False
        allow_mask = deny_mask = 0
        for other_key, decision in self.decisions.items():
            if other_key != key:
                if decision.result is ALLOWED:
                    allow_mask |= _mask_of(decision)
                else:
                    deny_mask |= _mask_of(decision)
        self.allow_mask, self.deny_mask = allow_mask, deny_mask
        del self.decisions[key]
        return True

    def decision_for(self, op_bit: int, result: object) -> Decision:
        """The decision of an ACL here with ``result`` covering ``op_bit`` (which must exist)."""
        for decision in self.decisions.values():
            if decision.result is result and _mask_of(decision) & op_bit:
                return decision
        raise LookupError("no ACL covers the operation")  # masks and decisions disagree

    def bindings(self) -> Iterator[AclBinding]:
        for decision in self.decisions.values():
            if decision.binding is not None:
                yield decision.binding


def _mask_of(decision: Decision) -> int:
    binding = decision.binding
    assert binding is not None
    return COVERED[binding.permission_type][binding.operation]


class PatternAcls:
    """All ACLs of one resource pattern: ``grants[principal][host]``."""

    __slots__ = ("count", "grants")

    def __init__(self) -> None:
        self.count = 0
        self.grants: dict[str, dict[str, Grant]] = {}

    def bindings(self) -> Iterator[AclBinding]:
        for by_host in self.grants.values():
            for grant in by_host.values():
                yield from grant.bindings()

    def add(self, binding: AclBinding) -> bool:
        """Add one ACL of this pattern; False when it is here already."""
        entry = binding.entry
        by_host = self.grants.get(entry.principal)
        if by_host is None:
            by_host = self.grants[entry.principal] = {}
        grant = by_host.get(entry.host)
        if grant is None:
            grant = by_host[entry.host] = Grant()
        if not grant.add(binding):
            return False
        self.count += 1
        return True


class PartialPatternAcls(PatternAcls):
    """The ACLs of one resource pattern that holds many, read principal by principal as
    requests need them (a view that stores bindings elsewhere fills it: the replica's index).

    ``grants`` holds the loaded principals' ACLs; a loaded principal without one has no entry,
    which the decision procedure reads as it reads any absent principal.  ``loaded`` names the
    loaded principals until every one is (``complete``; then :meth:`bindings` is every ACL).
    The pattern has ACLs (a view creates one only then), whatever ``count`` says so far.
    Filling is idempotent, so two threads filling one summary at once add each ACL once.
    """

    __slots__ = ("complete", "key_prefix", "loaded")

    def __init__(self, key_prefix: bytes) -> None:
        super().__init__()
        self.key_prefix = key_prefix
        self.loaded: set[str] = set()
        self.complete = False

    def load(self, principal: str, bindings: Iterable[AclBinding]) -> None:
        """Add ``principal``'s ACLs (all of them), then mark it loaded."""
        for binding in bindings:
            self.add(binding)
        self.loaded.add(principal)

    def load_all(self, bindings: Iterable[AclBinding]) -> None:
        """Add every ACL of the pattern, then mark the summary complete."""
        for binding in bindings:
            self.add(binding)
        self.complete = True

    def bindings(self) -> Iterator[AclBinding]:
        if not self.complete:
            raise RuntimeError("a partial pattern summary lists its ACLs once it is complete")
        return super().bindings()


def pattern_acls(bindings: Iterable[AclBinding]) -> PatternAcls:
    """The summary of ``bindings``, all of one resource pattern."""
    pattern = PatternAcls()
    for binding in bindings:
        pattern.add(binding)
    return pattern
