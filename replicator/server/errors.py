"""Why the sidecar refuses a caller: no usable credential (401) or not allowed here (403)."""

from __future__ import annotations

from store.errors import AuthorizationError, KafkaErrorCode, StoreError


class UnauthenticatedError(StoreError):
    """The caller presented no usable credential for an endpoint that needs one (HTTP 401)."""

    error_code = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED


class CallerNotAllowedError(AuthorizationError):
    """The caller may not use this endpoint at all (HTTP 403), e.g. authorize from afar."""

    error_code = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED
