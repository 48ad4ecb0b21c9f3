"""``print_json_items`` writes, piece by piece, the very text ``print_json`` writes at once
(``json.dumps(indent=2)``), on random JSON documents."""

from __future__ import annotations

import random
from typing import Any

import pytest

from cli.output import print_json, print_json_items

pytestmark = pytest.mark.unit


def value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -3, 2.5, 10**12])
    if kind in (2, 3):
        return rng.choice(["", "a", "é\n\"x\"", "line\nbreak", "*"])
    if kind == 4:
        return [value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {f"k{i}": value(rng, depth + 1) for i in range(rng.randrange(3))}


def test_the_streamed_document_is_the_whole_ones(capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(1)
    for _ in range(300):
        fields: list[tuple[str, Any]] = []
        lists: set[str] = set()
        for i in range(rng.randrange(5)):
            if rng.random() < 0.5:
                lists.add(f"f{i}")
                fields.append((f"f{i}", [value(rng, 1) for _ in range(rng.randrange(4))]))
            else:
                fields.append((f"f{i}", value(rng, 1)))
        print_json(dict(fields))
        whole = capsys.readouterr().out
        print_json_items([(k, iter(v) if k in lists else v) for k, v in fields], frozenset(lists))
        assert capsys.readouterr().out == whole
