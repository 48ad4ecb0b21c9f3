"""Kafka-exact authorization: the decision rules, their configuration and an in-memory index.

Start with :func:`authorize` and :func:`authorize_by_resource_type` (``rules``), which read
ACLs through the :class:`DecisionView` protocol (``view``): the grant summaries (``grants``)
of the patterns that apply to a resource (``applicable``), decided by one procedure
(``engine``).  :class:`InMemoryAclIndex` (``memory_index``) implements it with dicts.
"""

from store.authorizer.config import ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, AuthorizerConfig
from store.authorizer.decision import (
    ALLOWED,
    DENIED,
    Action,
    AuthorizationResult,
    Decision,
    DecisionRule,
    InvalidActionError,
    find_result,
)
from store.authorizer.host import InvalidHostAddressError, host_address
from store.authorizer.memory_index import InMemoryAclIndex
from store.authorizer.rules import (
    PROBE_RESOURCE_NAME,
    authorize,
    authorize_by_resource_type,
    check_by_resource_type_args,
)
from store.authorizer.view import AclView, DecisionView, ScanAclView, describe

__all__ = [
    "ALLOWED",
    "ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG",
    "DENIED",
    "PROBE_RESOURCE_NAME",
    "AclView",
    "Action",
    "AuthorizationResult",
    "AuthorizerConfig",
    "Decision",
    "DecisionRule",
    "DecisionView",
    "InMemoryAclIndex",
    "InvalidActionError",
    "InvalidHostAddressError",
    "ScanAclView",
    "authorize",
    "authorize_by_resource_type",
    "check_by_resource_type_args",
    "describe",
    "find_result",
    "host_address",
]
