"""The change-event schemas, one file per format version, shipped as package data.

``acl_event_v1.avsc`` (literal patterns only), ``acl_event_v2.avsc`` (KIP-290 pattern types),
``acl_event_v3.avsc`` (USER/DELEGATION_TOKEN, token operations, config events).  Every
version stays here forever: it is both what old records were written with and a test fixture.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

_AVRO_FILE = re.compile(r"^acl_event_v(\d+)\.avsc$")


class SchemaNotFoundError(LookupError):
    """No schema file for the requested version ships with this release."""


def avro_versions() -> tuple[int, ...]:
    """The Avro schema versions shipped with this release, ascending."""
    found = []
    for entry in resources.files(__name__).iterdir():
        match = _AVRO_FILE.match(entry.name)
        if match:
            found.append(int(match.group(1)))
    return tuple(sorted(found))


@cache
def avro_schema_text(version: int) -> str:
    """The text of ``acl_event_v{version}.avsc``."""
    entry = resources.files(__name__) / f"acl_event_v{version}.avsc"
    if not entry.is_file():
        raise SchemaNotFoundError(
            f"no Avro schema for event format version {version}; this release ships "
            f"versions {list(avro_versions())}"
        )
    return entry.read_text(encoding="utf-8")


def avro_schema(version: int) -> dict[str, Any]:
    """A fresh copy of the parsed JSON of ``acl_event_v{version}.avsc``."""
    parsed: dict[str, Any] = json.loads(avro_schema_text(version))
    return parsed
