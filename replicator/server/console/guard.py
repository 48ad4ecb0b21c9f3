"""The ACL page's confirmed change, guarded by its preview (``POST /ui/api/acls/change``).

The preview is the node's dry run, judged at one log offset.  The confirmed change is written
with ``/v1/acls/alter``'s guard (what ``aclstore apply`` sends: ``scope`` and
``ifScopeUnchangedSince``, the preview's offset): if a binding in the previewed scope was
created or deleted after that offset, nothing is written and the node answers 409, naming each
change with its actor, offset and time.  The change is then previewed again.

The previewed scope (:func:`previewed_scope`) holds every binding that can decide a request the
change decides: a request on a resource is decided by the ACLs of its resource type whose
pattern is the literal name, the wildcard ``*``, or a prefix of the name; a PREFIXED change
also reaches the names under it.  All of those patterns start with the name's first character
or are ``*``, so the scope is the resource type's patterns starting with either (a superset:
a write to an unrelated name that shares the first character refuses too, never the other
way).  Settings (super users, ``allow.everyone.if.no.acl.found``) are not bindings: a change of
them in between is not caught by this guard.
"""

from __future__ import annotations

from typing import Any, Final

from replicator.contract.bindings import BINDING, binding_json, filter_json
from replicator.contract.fields import BadRequestError, dumps
from replicator.contract.scope import scope_json
from replicator.server.console.surface import ConsoleSurface
from replicator.server.http import HttpRequest, Response, Route
from store.acl import WILDCARD_RESOURCE, AclBinding
from store.desired import ResourcePrefix, Scope

ACTIONS: Final = ("add", "remove")


def previewed_scope(binding: AclBinding) -> Scope:
    """The bindings whose change after the preview could change what it showed (see the
    module's docstring)."""
    resource_type, name = binding.pattern.resource_type, binding.pattern.name
    prefixes = {ResourcePrefix(resource_type, name[:1]), ResourcePrefix(resource_type, WILDCARD_RESOURCE)}
    return Scope(resource_prefixes=frozenset(prefixes))


def guarded_change(fields: dict[str, Any]) -> dict[str, Any]:
    """The ``/v1/acls/alter`` request of the page's fields ``action`` (add or remove),
    ``binding`` (the previewed one) and ``previewOffset`` (the offset its preview judged)."""
    action = fields.get("action")
    if action not in ACTIONS:
        raise BadRequestError(f"action {action!r}: use add or remove")
    binding: AclBinding = BINDING.read(fields.get("binding"), "", "binding")
    if not binding.pattern.name:
        raise BadRequestError("binding.resourceName is empty: name the resource")
    since = fields.get("previewOffset")
    if not isinstance(since, int) or isinstance(since, bool) or since < -1:
        raise BadRequestError(
            f"previewOffset {since!r}: the log offset the preview was judged at (preview the "
            "change first)"
        )
    change: dict[str, Any] = (
        {"creates": [binding_json(binding)]} if action == "add"
        else {"deletes": [filter_json(binding.to_filter())]}
    )  # fmt: skip
    change["scope"] = scope_json(previewed_scope(binding))
    change["ifScopeUnchangedSince"] = since
    return change


def guard_routes(console: ConsoleSurface) -> list[Route]:
    def change(request: HttpRequest) -> Response:
        credential = console._call_credential(request)
        fields = request.json() if request.body.strip() else {}
        if not isinstance(fields, dict):
            raise BadRequestError("the body must be a JSON object of the change's fields")
        body = dumps(guarded_change(fields))
        route = console.api["alter_acls"]
        return console.answer(route.handler(console._as_caller(request, credential, route.path, body)))

    return [Route("POST", "/ui/api/acls/change", "console_acls_change", change)]
