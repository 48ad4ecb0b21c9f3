"""The endpoints of the sidecar API: method, path and the name metrics and handlers use.

The server binds one handler to each (:meth:`replicator.server.service.SidecarService.routes`)
and the OpenAPI document describes each (:mod:`replicator.contract.openapi`); a test checks
that the three agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Endpoint:
    method: str
    path: str
    name: str
    """The handler's name and the ``route`` label of ``aclstore_http_responses_total``."""


ENDPOINTS: Final = (
    Endpoint("GET", "/healthz", "healthz"),
    Endpoint("GET", "/readyz", "readyz"),
    Endpoint("GET", "/metrics", "metrics"),
    Endpoint("GET", "/openapi.json", "openapi"),
    Endpoint("GET", "/v1/status", "status"),
    Endpoint("POST", "/v1/offset/wait", "wait_offset"),
    Endpoint("POST", "/v1/authorize", "authorize"),
    Endpoint("POST", "/v1/authorize-by-resource-type", "authorize_by_resource_type"),
    Endpoint("POST", "/v1/authorize-request", "authorize_request"),
    Endpoint("POST", "/v1/acls", "create_acls"),
    Endpoint("POST", "/v1/acls/describe", "describe_acls"),
    Endpoint("POST", "/v1/acls/delete", "delete_acls"),
    Endpoint("POST", "/v1/acls/alter", "alter_acls"),
    Endpoint("POST", "/v1/configs/describe", "describe_configs"),
    Endpoint("POST", "/v1/configs/alter", "alter_configs"),
)


_BY_NAME: Final = {e.name: e for e in ENDPOINTS}


def endpoint(name: str) -> Endpoint:
    """The endpoint called ``name`` (``describe_acls``); the error lists the known names."""
    found = _BY_NAME.get(name)
    if found is None:
        raise KeyError(f"no endpoint {name!r}; endpoints: {', '.join(_BY_NAME)}")
    return found
