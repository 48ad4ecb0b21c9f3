"""The endpoints of the sidecar API: method, path, name, and the request and answer each takes.

The server binds one handler to each (:meth:`replicator.server.service.SidecarService.routes`),
the client sends each request and reads each answer by its declared type
(:class:`replicator.client.http.StoreClient`), and the OpenAPI document describes each
(:mod:`replicator.contract.openapi`); a test checks that they agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from replicator.contract.access import (
    AnalysisProgressAnswer,
    DowngradeCheckAnswer,
    DowngradeCheckRequest,
    DryRunAnswer,
    DryRunRequest,
)
from replicator.contract.answers import (
    AlterAclsAnswer,
    AlterConfigsAnswer,
    AuthorizeAnswer,
    ByResourceTypeAnswer,
    CreateAclsAnswer,
    DeleteAclsAnswer,
    DescribeAclsAnswer,
    DescribeConfigsAnswer,
    HealthAnswer,
    OffsetWaitAnswer,
    ReplicaStatusAnswer,
    RequestCheckAnswer,
)
from replicator.contract.declare import Message
from replicator.contract.listing import AclListingEnd, AclResourceLine, ListAclsRequest
from replicator.contract.requests import (
    AlterAclsRequest,
    AlterConfigsBody,
    AuthorizeRequest,
    ByResourceTypeRequest,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeConfigsRequest,
    OffsetWaitRequest,
    RequestCheckRequest,
)

Q = TypeVar("Q", bound=Message)
A = TypeVar("A", bound=Message)


@dataclass(frozen=True, slots=True)
class Endpoint(Generic[Q, A]):
    method: str
    path: str
    name: str
    """The handler's name and the ``route`` label of ``aclstore_http_responses_total``."""
    request: type[Q] | None = None
    """The body it takes (None: none)."""
    answer: type[A] | None = None
    """The body of its 200 (None: not JSON, or any JSON)."""
    body_optional: bool = False
    """No body asks for everything (``describe_acls``, ``describe_configs``)."""
    lines: tuple[type[Message], ...] = ()
    """The lines of a streamed 200 (JSON lines, chunked; ``answer`` is then None)."""


HEALTHZ: Final[Endpoint[Any, HealthAnswer]] = Endpoint(
    "GET", "/healthz", "healthz", answer=HealthAnswer
)
READYZ: Final[Endpoint[Any, ReplicaStatusAnswer]] = Endpoint(
    "GET", "/readyz", "readyz", answer=ReplicaStatusAnswer
)
METRICS: Final[Endpoint[Any, Any]] = Endpoint("GET", "/metrics", "metrics")
OPENAPI: Final[Endpoint[Any, Any]] = Endpoint("GET", "/openapi.json", "openapi")
STATUS: Final[Endpoint[Any, ReplicaStatusAnswer]] = Endpoint(
    "GET", "/v1/status", "status", answer=ReplicaStatusAnswer
)
WAIT_OFFSET: Final = Endpoint(
    "POST", "/v1/offset/wait", "wait_offset", OffsetWaitRequest, OffsetWaitAnswer
)
AUTHORIZE: Final = Endpoint(
    "POST", "/v1/authorize", "authorize", AuthorizeRequest, AuthorizeAnswer
)
AUTHORIZE_BY_RESOURCE_TYPE: Final = Endpoint(
    "POST", "/v1/authorize-by-resource-type", "authorize_by_resource_type",
    ByResourceTypeRequest, ByResourceTypeAnswer,
)  # fmt: skip
AUTHORIZE_REQUEST: Final = Endpoint(
    "POST", "/v1/authorize-request", "authorize_request", RequestCheckRequest, RequestCheckAnswer
)
CREATE_ACLS: Final = Endpoint("POST", "/v1/acls", "create_acls", CreateAclsRequest, CreateAclsAnswer)
DESCRIBE_ACLS: Final = Endpoint(
    "POST", "/v1/acls/describe", "describe_acls", DescribeAclsRequest, DescribeAclsAnswer,
    body_optional=True,
)  # fmt: skip
LIST_ACLS: Final[Endpoint[ListAclsRequest, Any]] = Endpoint(
    "POST", "/v1/acls/list", "list_acls", ListAclsRequest, body_optional=True,
    lines=(AclResourceLine, AclListingEnd),
)  # fmt: skip
DELETE_ACLS: Final = Endpoint(
    "POST", "/v1/acls/delete", "delete_acls", DeleteAclsRequest, DeleteAclsAnswer
)
ALTER_ACLS: Final = Endpoint(
    "POST", "/v1/acls/alter", "alter_acls", AlterAclsRequest, AlterAclsAnswer
)
DESCRIBE_CONFIGS: Final = Endpoint(
    "POST", "/v1/configs/describe", "describe_configs", DescribeConfigsRequest,
    DescribeConfigsAnswer, body_optional=True,
)  # fmt: skip
ALTER_CONFIGS: Final = Endpoint(
    "POST", "/v1/configs/alter", "alter_configs", AlterConfigsBody, AlterConfigsAnswer
)
DRY_RUN: Final = Endpoint(
    "POST", "/v1/acls/dry-run", "dry_run_acls", DryRunRequest, DryRunAnswer
)
DOWNGRADE_CHECK: Final = Endpoint(
    "POST", "/v1/format/downgrade-check", "downgrade_check", DowngradeCheckRequest,
    DowngradeCheckAnswer,
)  # fmt: skip
ANALYSIS_PROGRESS: Final[Endpoint[Any, AnalysisProgressAnswer]] = Endpoint(
    "GET", "/v1/analysis", "analysis_progress", answer=AnalysisProgressAnswer
)

ENDPOINTS: Final[tuple[Endpoint[Any, Any], ...]] = (
    HEALTHZ, READYZ, METRICS, OPENAPI, STATUS, WAIT_OFFSET, AUTHORIZE, AUTHORIZE_BY_RESOURCE_TYPE,
    AUTHORIZE_REQUEST, CREATE_ACLS, DESCRIBE_ACLS, LIST_ACLS, DELETE_ACLS, ALTER_ACLS,
    DESCRIBE_CONFIGS, ALTER_CONFIGS, DRY_RUN, DOWNGRADE_CHECK, ANALYSIS_PROGRESS,
)  # fmt: skip


_BY_NAME: Final = {e.name: e for e in ENDPOINTS}


def endpoint(name: str) -> Endpoint[Any, Any]:
    """The endpoint called ``name`` (``describe_acls``); the error lists the known names."""
    found = _BY_NAME.get(name)
    if found is None:
        raise KeyError(f"no endpoint {name!r}; endpoints: {', '.join(_BY_NAME)}")
    return found
