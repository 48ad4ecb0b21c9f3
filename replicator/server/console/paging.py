"""The ACL page's question and its answer, as plain values (no I/O).

* :func:`list_filter`: the filter ``kafka-acls --list`` builds from its options (a resource
  type and name with ``--resource-pattern-type``, ``--principal``), from the page's fields;
* :func:`page_of`: one page of a listing, read from the listing as it streams: the rows before
  the page are read and dropped, the reading stops at the row after the page, so a page of a
  million bindings holds one page of rows;
* :func:`cursor_of`: the page's resume point (``after``: the last row of the previous page, a
  binding), which the node's listing starts after, so the rows before the page are not read
  at all.  ``skip`` then only numbers the page's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from replicator.contract.bindings import BINDING, RESOURCE_NAME
from replicator.contract.fields import BadRequestError
from replicator.contract.listing import ListedAcls
from store.acl import (
    CLUSTER_NAME,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)
from store.errors import StoreError
from store.principal import KafkaPrincipal, java_trim

MAX_PAGE: Final = 1000
DEFAULT_PAGE: Final = 100
_LISTED_TYPES: Final = tuple(
    t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY)
)
_LIST_PATTERNS: Final = ("literal", "prefixed", "match", "any")


def _text(fields: Mapping[str, Any], key: str) -> str:
    value = fields.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequestError(f"{key}: {value!r} is not text")
    return value


def list_filter(fields: Mapping[str, Any]) -> AclBindingFilter:
    """The filter of ``kafka-acls --list`` (``AclCommand.listAcls``) from the page's fields
    ``principal``, ``resourceType``, ``resourceName`` and ``patternType``.

    No resource type lists every pattern (the pattern type is then ignored, as kafka-acls does
    without a resource option); a resource type needs a name (CLUSTER's is ``kafka-cluster``),
    trimmed as Kafka trims it (not a transactional id's); ``*`` is the literal wildcard
    pattern, not "any name"; the pattern type is literal by default, or prefixed, match
    (every pattern that applies to the name, KIP-290) or any.  A principal narrows the listing
    to its ACLs (``--principal``)."""
    pattern_text = _text(fields, "patternType").strip().lower() or "literal"
    if pattern_text not in _LIST_PATTERNS:
        raise BadRequestError(
            f"patternType {pattern_text!r} is not a pattern type a listing filters by; use one "
            f"of {', '.join(_LIST_PATTERNS)}"
        )
    pattern_type = PatternType[pattern_text.upper()]
    type_text = _text(fields, "resourceType").strip().upper()
    name = _text(fields, RESOURCE_NAME)
    pattern_filter = ResourcePatternFilter()
    if type_text and type_text != "ANY":
        try:
            resource_type = ResourceType[type_text]
        except KeyError:
            resource_type = ResourceType.UNKNOWN
        if resource_type not in _LISTED_TYPES:
            raise BadRequestError(
                f"resourceType {type_text!r} is not a resource type; use one of "
                f"{', '.join(t.name for t in _LISTED_TYPES)}, or leave it empty for every one"
            )
        if resource_type is ResourceType.CLUSTER:
            name = CLUSTER_NAME
        elif resource_type is not ResourceType.TRANSACTIONAL_ID:
            name = java_trim(name)
        if not name:
            raise BadRequestError(
                f"resourceName is empty: a {resource_type.name} listing names the resource "
                "('*' is the wildcard pattern), or leave the resource type empty to list every one"
            )
        pattern_filter = ResourcePatternFilter(
            resource_type=resource_type, name=name, pattern_type=pattern_type
        )
    principal = java_trim(_text(fields, "principal")) or None
    if principal is not None:
        try:
            KafkaPrincipal.parse(principal)
        except StoreError as exc:
            raise BadRequestError(
                f"principal {principal!r}: {exc.message} (e.g. User:alice)"
            ) from exc
    return AclBindingFilter(
        pattern_filter=pattern_filter, entry_filter=AccessControlEntryFilter(principal=principal)
    )


def page_bounds(fields: Mapping[str, Any]) -> tuple[int, int]:
    """``skip`` (rows before the page, 0 by default) and ``limit`` (rows on it, 1 to
    :data:`MAX_PAGE`, :data:`DEFAULT_PAGE` by default)."""
    skip = fields.get("skip", 0)
    limit = fields.get("limit", DEFAULT_PAGE)
    if not isinstance(skip, int) or isinstance(skip, bool) or skip < 0:
        raise BadRequestError(f"skip {skip!r}: must be an integer >= 0 (the rows before the page)")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
        raise BadRequestError(f"limit {limit!r}: must be an integer from 1 to {MAX_PAGE}")
    return skip, limit


@dataclass(frozen=True, slots=True)
class Page:
    """Rows ``skip`` to ``skip + len(rows)`` of a listing, each as the API writes a binding."""

    rows: list[dict[str, str]]
    skip: int
    more: bool
    """A row follows the page (the listing was not read to its end)."""


def cursor_of(fields: Mapping[str, Any]) -> AclBinding | None:
    """The field ``after``: the binding the page starts after (a row as the page shows it),
    or None for a page that starts at ``skip``."""
    value = fields.get("after")
    if value is None:
        return None
    return BINDING.read(value, "", "after")


def page_of(resources: Iterable[ListedAcls], skip: int, limit: int, *, after: bool = False) -> Page:
    """The page: reads ``resources`` up to the first row after it, and no further.  With
    ``after``, the listing already starts at the page (it resumed after a cursor): ``skip``
    numbers its rows and none is dropped."""
    rows: list[dict[str, str]] = []
    seen = skip if after else 0
    for resource in resources:
        if seen + len(resource.acls) <= skip:
            seen += len(resource.acls)
            continue
        for principal, host, operation, permission in resource.acls:
            if seen >= skip + limit:
                return Page(rows, skip, more=True)
            if seen >= skip:
                rows.append({
                    "resourceType": resource.resource_type, RESOURCE_NAME: resource.name,
                    "patternType": resource.pattern_type, "principal": principal, "host": host,
                    "operation": operation, "permissionType": permission,
                })  # fmt: skip
            seen += 1
    return Page(rows, skip, more=False)
