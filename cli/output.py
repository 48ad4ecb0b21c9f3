"""How commands print answers: ``--format json`` as one document, tables ending in the offset."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def print_offset(offset: object, *, stderr: bool = False) -> None:
    """The last line of every table answer: the log offset the answer reflects.

    ``stderr=True`` where stdout must stay what the mirrored Kafka tool prints (``acls``).
    None (an answer through a Kafka broker, whose protocol carries no offset): nothing."""
    if offset is None:
        return
    print(f"(log offset {offset})", file=sys.stderr if stderr else sys.stdout)


def failed_results(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-item results of a batch write (create or delete) that carry an error."""
    return [r for r in answer["results"] if r["error"]]
