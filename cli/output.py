"""How commands print answers: ``--format json`` as one document, tables ending in the offset."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from replicator.contract.answers import ItemError


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def print_offset(offset: object, *, stderr: bool = False) -> None:
    """The last line of every table answer: the log offset the answer reflects.

    ``stderr=True`` where stdout must stay what the mirrored Kafka tool prints (``acls``).
    None (an answer through a Kafka broker, whose protocol carries no offset): nothing."""
    if offset is None:
        return
    print(f"(log offset {offset})", file=sys.stderr if stderr else sys.stdout)


class _ItemResult(Protocol):
    @property
    def error(self) -> ItemError | None: ...


R = TypeVar("R", bound=_ItemResult)


def failed_results(results: Sequence[R]) -> list[R]:
    """The per-item results of a batch write (create or delete) that carry an error."""
    return [r for r in results if r.error is not None]


def first_failure(results: Sequence[R]) -> tuple[R, ItemError] | None:
    """The first per-item result of a batch write that carries an error, and the error."""
    for result in results:
        if result.error is not None:
            return result, result.error
    return None
