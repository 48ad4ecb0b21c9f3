"""Live bindings written as a desired-state file (``aclstore export``), so that adoption starts
from what is there.

The bindings are grouped the way a person would write them: one entry per principal, host,
permission and operation list, with the resources they apply to; entries that differ only in
their principal share one.  Reading the text back (:func:`store.desired.load_acls_text`) gives
exactly the bindings exported.  Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import yaml

from store.acl import CLUSTER_NAME, AclBinding, AclOperation, PatternType, ResourceType
from store.desired.document import FILE_VERSION, SCHEMA_ID, SHORTHANDS
from store.desired.scope import Scope

try:
    _Dumper: type[Any] = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - a PyYAML without libyaml
    _Dumper = yaml.SafeDumper


def scope_document(scope: Scope) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if scope.everything:
        out["all"] = True
    if scope.principals:
        out["principals"] = sorted(scope.principals)
    if scope.resource_prefixes:
        out["resources"] = [
            {"resourceType": p.resource_type.name, "prefix": p.prefix}
            for p in sorted(scope.resource_prefixes)
        ]
    return out


def export_document(bindings: Iterable[AclBinding], scope: Scope) -> dict[str, Any]:
    """The file's content (before YAML) for ``bindings``, all of which must be in ``scope``."""
    by_grant: dict[tuple[str, str, str, tuple[AclOperation, ...]], list[tuple[str, str, str]]] = {}
    ops_of: dict[tuple[str, str, str, tuple[str, str, str]], list[AclOperation]] = {}
    for b in sorted(bindings):
        if not scope.contains(b):
            raise ValueError(f"{b} is outside the scope exported ({scope.describe()})")
        resource = (b.resource_type.name, b.name, b.pattern_type.name)
        ops_of.setdefault((b.principal, b.host, b.permission_type.name, resource), []).append(b.operation)
    for (principal, host, permission, resource), ops in ops_of.items():
        by_grant.setdefault((principal, host, permission, tuple(sorted(ops))), []).append(resource)
    merged: dict[tuple[str, str, tuple[AclOperation, ...], tuple[tuple[str, str, str], ...]], list[str]] = {}
    for (principal, host, permission, grant), resources in by_grant.items():
        merged.setdefault((host, permission, grant, tuple(resources)), []).append(principal)
    acls: list[dict[str, Any]] = []
    for (host, permission, grant, listed), principals in merged.items():
        entry: dict[str, Any] = {"principals": principals}
        if host != "*":
            entry["hosts"] = [host]
        if permission != "ALLOW":
            entry["permission"] = permission
        entry["operations"] = [o.name for o in grant]
        entry.update(_resources(listed))
        acls.append(entry)
    return {"version": FILE_VERSION, "scope": scope_document(scope), "acls": acls}


_SHORTHAND_OF: Final = {(rt.name, pt.name): key for key, (rt, pt) in SHORTHANDS.items()}


def _resources(listed: Iterable[tuple[str, str, str]]) -> dict[str, Any]:
    """The resources as kafka-acls.sh-like keys where one fits (``topics``, ``groupPrefixes``,
    ``cluster: true``...), the others under ``resources``."""
    out: dict[str, Any] = {}
    for r in listed:
        key = _SHORTHAND_OF.get((r[0], r[2]))
        if key is not None:
            out.setdefault(key, []).append(r[1])
        elif r[0] == ResourceType.CLUSTER.name and r[1] == CLUSTER_NAME:
            out["cluster"] = True
        else:
            out.setdefault("resources", []).append(_resource(r))
    return out


def _resource(r: tuple[str, str, str]) -> dict[str, str]:
    out = {"resourceType": r[0], "name": r[1]}
    if r[2] != PatternType.LITERAL.name:
        out["patternType"] = r[2]
    return out


def export_text(bindings: Iterable[AclBinding], scope: Scope, *, header: str = "") -> str:
    """:func:`export_document` as YAML, after ``header`` (comment lines)."""
    body: str = yaml.dump(
        export_document(bindings, scope), Dumper=_Dumper, sort_keys=False, allow_unicode=True,
        default_flow_style=None, width=100,
    )  # fmt: skip
    lead = f"# yaml-language-server: $schema={SCHEMA_ID}\n"
    return lead + "".join(f"# {line}\n" for line in header.splitlines()) + body
