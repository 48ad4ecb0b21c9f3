"""The store's error hierarchy: one root, condition-named subclasses.

Every error names the offending value and the fix.  Errors that the admin API
returns per item carry the Kafka error code (``org.apache.kafka.common.protocol.Errors``)
that a Kafka broker would put in the response.
"""

from __future__ import annotations

import enum


class KafkaErrorCode(enum.IntEnum):
    """The subset of ``org.apache.kafka.common.protocol.Errors`` the store returns."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    REQUEST_TIMED_OUT = 7
    NOT_ENOUGH_REPLICAS = 19
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_VERSION = 35
    INVALID_CONFIG = 40
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    SECURITY_DISABLED = 54
    KAFKA_STORAGE_ERROR = 56
    INVALID_PRINCIPAL_TYPE = 67
    FEATURE_UPDATE_FAILED = 96


class StoreError(Exception):
    """Root of every error raised by the ``store`` package."""

    error_code: KafkaErrorCode = KafkaErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- KIP-50's authorizer exceptions --------------------------------------------------------


class AuthorizationError(StoreError):
    """Root of the authorizer's errors (KIP-50 ``AuthorizationException`` family)."""

    error_code = KafkaErrorCode.INVALID_REQUEST


class InvalidAclError(AuthorizationError):
    """The binding as a whole is not acceptable (``InvalidAclException``)."""


class InvalidOperationError(InvalidAclError):
    """The operation is not valid for the resource (``InvalidOperationException``)."""


class InvalidPrincipalError(InvalidAclError):
    """The principal is not ``Type:name`` (``InvalidPrincipalException``)."""


class InvalidResourceError(InvalidAclError):
    """The resource or its name is not acceptable (``InvalidResourceException``)."""


class AuthorizerNotReadyError(AuthorizationError):
    """The authorizer has not loaded its ACLs yet (``AuthorizerNotReadyException``)."""

    error_code = KafkaErrorCode.UNKNOWN_SERVER_ERROR


class ClusterAuthorizationError(AuthorizationError):
    """The caller lacks the CLUSTER permission the admin call needs."""

    error_code = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED


class InvalidRequestError(StoreError):
    """A malformed request: a bad enum value, a missing field (``InvalidRequestException``)."""

    error_code = KafkaErrorCode.INVALID_REQUEST


class InvalidConfigError(StoreError):
    """A configuration key or value the store does not accept."""

    error_code = KafkaErrorCode.INVALID_CONFIG
