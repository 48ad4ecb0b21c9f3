"""The registry of conformance-vector kinds: each kind module registers its handler here.

The runner reads the registry and the kind modules write to it; neither imports the other
back, so there is no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Vector = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one vector produced.

    ``passed`` decides the vector; ``message_note`` reports a mismatching error
    message of a matching error kind, which FORMAT.md says is reported on its own line
    but does not fail the vector.
    """

    passed: bool
    expected: Any = None
    got: Any = None
    message_note: str | None = None


Handler = Callable[[Vector], Outcome]
_HANDLERS: dict[str, Handler] = {}


def kind(name: str) -> Callable[[Handler], Handler]:
    """Register ``handler`` for vectors whose ``kind`` is ``name``."""

    def register(handler: Handler) -> Handler:
        if name in _HANDLERS:
            raise ValueError(f"conformance kind {name!r} registered twice")
        _HANDLERS[name] = handler
        return handler

    return register


def handler_for(name: str) -> Handler | None:
    return _HANDLERS.get(name)
