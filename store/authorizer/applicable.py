"""Which resource patterns can match a LITERAL resource name: one answer for every reader.

The ACLs that apply to the resource ``name`` of one resource type (KIP-290, the ``MATCH``
filter; Kafka's ``StandardAuthorizerData.findAclRule``) are those of

* the LITERAL pattern ``name``;
* every PREFIXED pattern whose name is a prefix of ``name`` (``name`` itself and the empty
  prefix included);
* the LITERAL pattern ``*``, unless ``name`` is ``*`` (then it is the first one already).

Kafka finds them with a range scan over names sorted in reverse, which goes wrong for ACL
names that sort below ``*`` and for resource names that start with ``*``
(:mod:`store.authorizer.rules` names both); here each candidate pattern is looked up by its
name, which gives the answer the rule intends.

One function, two forms.  :func:`applicable` looks the patterns up in the caller's two tables
(anything with ``get(name)``: a dict, a view over a store), in the order the decision rules
read them: the LITERAL name, the PREFIXED prefixes by ascending length, the LITERAL ``*``.
``prefix_lengths`` may name the only prefix lengths a table holds, so that an index looks up
a few prefixes, not every one.  :func:`applicable_patterns` lists the patterns themselves: the
same function over tables that hold every name.  Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Protocol, TypeVar

from store.acl import WILDCARD_RESOURCE, PatternType

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

PatternKey = tuple[PatternType, str]
"""A resource pattern of the resource type in question: its pattern type and name."""


class PatternTable(Protocol[T_co]):
    """What :func:`applicable` reads: the entry of a pattern name, or None (``dict.get``)."""

    def get(self, name: str, /) -> T_co | None: ...


def applicable(
    name: str,
    literal: PatternTable[T],
    prefixed: PatternTable[T],
    prefix_lengths: Iterable[int] | None = None,
) -> list[T]:
    """The entries of the patterns that can match the LITERAL resource ``name``.

    ``literal`` and ``prefixed`` hold one resource type's LITERAL and PREFIXED patterns by
    name.  ``prefix_lengths`` (ascending) are the PREFIXED name lengths worth looking up;
    None looks up every prefix of ``name``, the empty one included.  The entries come in the
    order: the LITERAL ``name``, the PREFIXED prefixes from the shortest, the LITERAL ``*``.
    """
    found: list[T] = []
    entry = literal.get(name)
    if entry is not None:
        found.append(entry)
    size = len(name)
    for length in range(size + 1) if prefix_lengths is None else prefix_lengths:
        if length > size:
            break
        entry = prefixed.get(name[:length])
        if entry is not None:
            found.append(entry)
    if name != WILDCARD_RESOURCE:
        entry = literal.get(WILDCARD_RESOURCE)
        if entry is not None:
            found.append(entry)
    return found


class _EveryName:
    """A table that holds every name of one pattern type: its entry is the pattern itself."""

    __slots__ = ("pattern_type",)

    def __init__(self, pattern_type: PatternType) -> None:
        self.pattern_type = pattern_type

    def get(self, name: str, /) -> PatternKey:
        return self.pattern_type, name


_EVERY_LITERAL: Final = _EveryName(PatternType.LITERAL)
_EVERY_PREFIXED: Final = _EveryName(PatternType.PREFIXED)


def applicable_patterns(name: str, prefix_lengths: Iterable[int] | None = None) -> list[PatternKey]:
    """The patterns that can match the LITERAL resource ``name``, in :func:`applicable`'s
    order; ``prefix_lengths`` as there (None: every prefix, the empty one included).

    Example: ``applicable_patterns("ab")`` is ``[(LITERAL, "ab"), (PREFIXED, ""),
    (PREFIXED, "a"), (PREFIXED, "ab"), (LITERAL, "*")]``.
    """
    return applicable(name, _EVERY_LITERAL, _EVERY_PREFIXED, prefix_lengths)
