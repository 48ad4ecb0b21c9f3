"""What the answer cache's values cost in memory, estimated from counts it can read at once.

A cached answer is a few Python objects per binding (the decoded binding, its pattern and
entry, their strings, a ready-made decision), a few per principal (a dictionary of hosts, a
grant), and a fixed part per summary and per cache slot.  The estimate is linear in those
counts, with per-object costs measured on CPython 3.11 (64-bit) with ``sys.getsizeof`` walks
and ``tracemalloc`` over summaries of the bench's shapes: from 1 to 1,000 bindings and from 1
to 1,000 principals, the estimate was within 8 % of the measured bytes
(``tests/replicator/test_cache_budget.py`` holds it to 25 %).  It reads ``count``,
``len(grants)`` and ``len(loaded)``: no walk, so a cache can size every value it takes.
"""

from __future__ import annotations

from typing import Final

from store.authorizer.grants import PartialPatternAcls, PatternAcls

SUMMARY_BYTES: Final = 300
"""A summary's own objects (its dictionary of principals) and the cache's record of it."""
PRINCIPAL_BYTES: Final = 440
"""Per principal of a summary: its name, its dictionary of hosts and a grant."""
BINDING_BYTES: Final = 560
"""Per binding of a summary: the decoded binding (pattern, entry, their strings) and its
ready-made decision."""
LOADED_BYTES: Final = 90
"""Per principal a partial summary has loaded (its name in ``loaded``)."""
PARTIAL_BYTES: Final = 300
"""What a partial summary adds to a whole one: its key prefix and its set of loaded principals."""
ANSWER_SLOT_BYTES: Final = 380
"""A cached answer's slot, beside its summaries: its key and name, the tuple of summaries,
the LRU's record and the entry in the sorted list of names."""
PATTERN_SLOT_BYTES: Final = 370
"""A cached pattern's slot, beside its summary: its key and name and the LRU's record."""


def summary_bytes(summary: PatternAcls) -> int:
    """The estimated bytes of ``summary``'s objects (a partial one as loaded so far)."""
    size = SUMMARY_BYTES + PRINCIPAL_BYTES * len(summary.grants) + BINDING_BYTES * summary.count
    if type(summary) is PartialPatternAcls:
        size += PARTIAL_BYTES + len(summary.key_prefix) + LOADED_BYTES * len(summary.loaded)
    return size


def answer_slot_bytes(name: str) -> int:
    """The estimated bytes of the slot of the answer for a resource named ``name``."""
    return ANSWER_SLOT_BYTES + len(name)


def pattern_slot_bytes(name: str) -> int:
    """The estimated bytes of the slot of the summary of a pattern named ``name``."""
    return PATTERN_SLOT_BYTES + len(name)
