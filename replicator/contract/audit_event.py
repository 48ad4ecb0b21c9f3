"""The audit event: one authorization decision as a CloudEvents 1.0 JSON record.

Its shape is declared, versioned, in ``schemas/audit_event_v1.json`` (JSON Schema) beside the
change-event schemas; :data:`EVENT_TYPE` carries the same version, so a consumer can tell a
later shape from this one.  ``data`` uses the API's field names (``resourceName``, ``reason``
as the authorize answers give it with ``explain``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Final

from replicator.contract.answers import reason_json
from replicator.contract.bindings import RESOURCE_NAME
from store.authorizer import Action, Decision

EVENT_TYPE: Final = "io.aclstore.authorization.decision.v1"
SPEC_VERSION: Final = "1.0"
SCHEMA_VERSION: Final = 1
SCHEMA_FILE: Final = f"audit_event_v{SCHEMA_VERSION}.json"
"""In the ``schemas`` package."""


def audit_event(
    *,
    event_id: str,
    source: str,
    time_ns: int,
    principal: str,
    host: str,
    action: Action,
    decision: Decision,
    offset: int,
) -> dict[str, Any]:
    """The event of one decision (``offset``: the replica offset the decision reflects)."""
    return {
        "specversion": SPEC_VERSION,
        "id": event_id,
        "source": source,
        "type": EVENT_TYPE,
        "time": datetime.fromtimestamp(time_ns / 1e9, UTC).isoformat(timespec="microseconds"),
        "datacontenttype": "application/json",
        "subject": principal,
        "data": {
            "principal": principal,
            "host": host,
            "operation": action.operation.name,
            "resourceType": action.resource_type.name,
            RESOURCE_NAME: action.name,
            "patternType": action.pattern_type.name,
            "result": decision.result.value,
            "reason": reason_json(decision),
            "offset": offset,
        },
    }


def encode_audit_event(event: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, as the audit topic carries it."""
    return json.dumps(event, separators=(",", ":")).encode("utf-8")


def audit_event_schema() -> dict[str, Any]:
    """The declared schema of :data:`EVENT_TYPE` (``schemas/audit_event_v1.json``)."""
    text = (resources.files("schemas") / SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
