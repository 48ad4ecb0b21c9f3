"""A desired-state file (``schemas/acls-file.v1.schema.json``), read and checked.

```yaml
version: 1
scope:                      # what this file owns (see store.desired.scope)
  principals: [User:orders-app]
  resources:
    - {resourceType: TOPIC, prefix: orders.}
acls:
  - principals: [User:orders-app]
    hosts: ["*"]            # default ["*"]
    permission: ALLOW       # default ALLOW; DENY
    roles: [producer, idempotent]      # or operations: [READ, DESCRIBE]
    resources:
      - {resourceType: TOPIC, name: orders., patternType: PREFIXED}   # default LITERAL
```

Each entry stands for every combination of its principals, hosts, operations (or the
operations its roles grant on each resource, :mod:`store.desired.roles`) and resources, as a
kafka-acls.sh command line does.  Every binding is checked as a broker's CreateAcls checks it,
and must lie in the file's scope.  Errors name the file, the line and the fix
(:class:`AclsFileError`).  Pure: text in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from store.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from store.desired.errors import AclsFileError
from store.desired.roles import ROLES, role_operations, role_problem
from store.desired.scope import ResourcePrefix, Scope
from store.desired.yaml_text import Located, parse_yaml
from store.errors import StoreError
from store.principal import KafkaPrincipal
from store.validation import validate_new_acl

FILE_VERSION: Final = 1
SCHEMA_ID: Final = "https://aclstore.dev/schemas/acls-file.v1.schema.json"

_TOP_KEYS: Final = ("version", "scope", "acls")
_SCOPE_KEYS: Final = ("all", "principals", "resources")
_PREFIX_KEYS: Final = ("resourceType", "prefix")
SHORTHANDS: Final = {
    "topics": (ResourceType.TOPIC, PatternType.LITERAL),
    "topicPrefixes": (ResourceType.TOPIC, PatternType.PREFIXED),
    "groups": (ResourceType.GROUP, PatternType.LITERAL),
    "groupPrefixes": (ResourceType.GROUP, PatternType.PREFIXED),
    "transactionalIds": (ResourceType.TRANSACTIONAL_ID, PatternType.LITERAL),
    "transactionalIdPrefixes": (ResourceType.TRANSACTIONAL_ID, PatternType.PREFIXED),
}
"""kafka-acls.sh's resource options as keys of an entry: ``topics: [a, b]`` is ``--topic a
--topic b``, ``topicPrefixes`` the same with ``--resource-pattern-type prefixed``."""
_RESOURCE_KEYS_OF_ENTRY: Final = ("resources", *SHORTHANDS, "cluster")
_ENTRY_KEYS: Final = ("principals", "hosts", "permission", "operations", "roles", *_RESOURCE_KEYS_OF_ENTRY)
_RESOURCE_KEYS: Final = ("resourceType", "name", "patternType")
_TYPES: Final = tuple(t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY))
_OPERATIONS: Final = tuple(o for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY))
_PATTERNS: Final = (PatternType.LITERAL, PatternType.PREFIXED)
_PERMISSIONS: Final = (AclPermissionType.ALLOW, AclPermissionType.DENY)


@dataclass(frozen=True, slots=True)
class AclsFile:
    """One file: its scope, the bindings it declares, and the line declaring each first."""

    source: str
    scope: Scope
    bindings: frozenset[AclBinding]
    lines: Mapping[AclBinding, int]


@dataclass(frozen=True, slots=True)
class DesiredState:
    """Several files together: the union of their scopes and of their bindings."""

    files: tuple[AclsFile, ...]
    scope: Scope
    bindings: frozenset[AclBinding]

    @classmethod
    def of(cls, files: Sequence[AclsFile]) -> DesiredState:
        bindings: set[AclBinding] = set()
        for f in files:
            bindings |= f.bindings
        return cls(tuple(files), Scope.of_all(f.scope for f in files), frozenset(bindings))

    def declared_at(self, binding: AclBinding) -> str | None:
        """``file:line`` of the first declaration of ``binding`` (None: not declared)."""
        for f in self.files:
            line = f.lines.get(binding)
            if line is not None:
                return f"{f.source}:{line}"
        return None


_TOP_ACLS: Final = re.compile(r"^acls[ \t]*:", re.MULTILINE)


def scope_ahead(text: str, source: str) -> Scope | None:
    """The file's scope read from the text before its top-level ``acls:`` line, or None when
    that cannot be done (no such line, no scope before it, or anything amiss there).

    A guess made before the whole file is read (a plan starts listing the scope meanwhile); the
    caller checks it against :func:`load_acls_text`'s scope, which is the answer."""
    found = _TOP_ACLS.search(text)
    if found is None:
        return None
    try:
        head = parse_yaml(text[: found.start()], source)
        if not isinstance(head.value, dict) or "scope" not in head.value:
            return None
        return _Reader(source).scope(head.value["scope"])
    except AclsFileError:
        return None


def load_acls_text(text: str, source: str) -> AclsFile:
    """Read and check one file's text; :class:`AclsFileError` at the first problem."""
    return _Reader(source).document(parse_yaml(text, source))


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, at: Located | int, what: str) -> AclsFileError:
        return AclsFileError(self.source, at if isinstance(at, int) else at.line, what)

    def mapping(
        self, at: Located, path: str, keys: Sequence[str], required: Sequence[str] = ()
    ) -> dict[str, Located]:
        if not isinstance(at.value, dict):
            raise self.fail(at, f"{path} must be a mapping with keys {', '.join(keys)}")
        found: dict[str, Located] = at.value
        for key, value in found.items():
            if key not in keys:
                raise self.fail(value, f"{path}: unknown key {key!r}; the keys are {', '.join(keys)}")
        for key in required:
            if key not in found:
                raise self.fail(at, f"{path}: {key!r} is missing; add it")
        return found

    def seq(self, at: Located, path: str, *, non_empty: bool = True) -> list[Located]:
        if not isinstance(at.value, list):
            raise self.fail(at, f"{path} must be a list (`- item` lines, or [a, b])")
        if non_empty and not at.value:
            raise self.fail(at, f"{path} is empty; give at least one item")
        items: list[Located] = at.value
        return items

    def text(self, at: Located, path: str) -> str:
        if not isinstance(at.value, str):
            raise self.fail(at, f"{path}: {at.value!r} is not text; quote it ('...')")
        return at.value

    def enum(self, at: Located, path: str, members: Sequence[Any]) -> Any:
        word = self.text(at, path)
        for m in members:
            if m.parse(word) is m:
                return m
        names = ", ".join(m.name for m in members)
        raise self.fail(at, f"{path}: {word!r} is not one of {names}; use one of them")

    # --- the document --------------------------------------------------------------------------

    def document(self, root: Located) -> AclsFile:
        top = self.mapping(root, "the file", _TOP_KEYS, required=_TOP_KEYS)
        version = top["version"]
        if version.value != FILE_VERSION or isinstance(version.value, bool):
            raise self.fail(version, f"version: {version.value!r} is not a version this release reads; "
                            f"use version: {FILE_VERSION}")  # fmt: skip
        scope = self.scope(top["scope"])
        bindings: dict[AclBinding, int] = {}
        for i, item in enumerate(self.seq(top["acls"], "acls", non_empty=False)):
            for binding, line in self.entry(item, f"acls[{i}]"):
                if not scope.contains(binding):
                    raise self.fail(
                        line, f"acls[{i}]: {_text(binding)} is outside this file's scope "
                        f"({scope.describe()}); add its principal or a resource prefix to scope, "
                        "or declare it in the file that owns it",
                    )  # fmt: skip
                bindings.setdefault(binding, line)
        return AclsFile(self.source, scope, frozenset(bindings), bindings)

    def scope(self, at: Located) -> Scope:
        m = self.mapping(at, "scope", _SCOPE_KEYS)
        everything = False
        if "all" in m:
            if not isinstance(m["all"].value, bool):
                raise self.fail(m["all"], "scope.all must be true or false")
            everything = m["all"].value
        principals = frozenset(
            self.principal(p, f"scope.principals[{i}]")
            for i, p in enumerate(self.seq(m["principals"], "scope.principals"))
        ) if "principals" in m else frozenset()  # fmt: skip
        prefixes: set[ResourcePrefix] = set()
        for i, r in enumerate(self.seq(m["resources"], "scope.resources") if "resources" in m else []):
            path = f"scope.resources[{i}]"
            rm = self.mapping(r, path, _PREFIX_KEYS, required=_PREFIX_KEYS)
            rt = self.enum(rm["resourceType"], f"{path}.resourceType", _TYPES)
            prefixes.add(ResourcePrefix(rt, self.text(rm["prefix"], f"{path}.prefix")))
        scope = Scope(everything=everything, principals=principals, resource_prefixes=frozenset(prefixes))
        if scope.is_empty:
            raise self.fail(at, "scope owns nothing; give principals, resources (type and name "
                            "prefix) or all: true")  # fmt: skip
        return scope

    def principal(self, at: Located, path: str) -> str:
        word = self.text(at, path)
        try:
            return str(KafkaPrincipal.parse(word))
        except StoreError as exc:
            raise self.fail(at, f"{path}: {exc.message}; write it as Type:name (User:alice)") from exc

    def entry(self, at: Located, path: str) -> Iterable[tuple[AclBinding, int]]:
        m = self.mapping(at, path, _ENTRY_KEYS, required=("principals",))
        principals = [self.principal(p, f"{path}.principals[{i}]")
                      for i, p in enumerate(self.seq(m["principals"], f"{path}.principals"))]  # fmt: skip
        hosts = ["*"]
        if "hosts" in m:
            hosts = [
                self.text(h, f"{path}.hosts[{i}]")
                for i, h in enumerate(self.seq(m["hosts"], f"{path}.hosts"))
            ]
        permission = (self.enum(m["permission"], f"{path}.permission", _PERMISSIONS)
                      if "permission" in m else AclPermissionType.ALLOW)  # fmt: skip
        resources = self.resources(at, m, path)
        if ("operations" in m) == ("roles" in m):
            raise self.fail(at, f"{path}: give either operations or roles (producer, consumer, "
                            "idempotent), not both nor neither")  # fmt: skip
        if "roles" in m:
            listed = self.seq(m["roles"], f"{path}.roles")
            roles = [self.role(r, f"{path}.roles[{i}]") for i, r in enumerate(listed)]
            if permission is not AclPermissionType.ALLOW:
                raise self.fail(m["permission"], f"{path}: roles only grant (as kafka-acls.sh's take "
                                "--allow-principal only); use operations for a DENY")  # fmt: skip
            problem = role_problem(roles, (rt for rt, _, _, _ in resources))
            if problem is not None:
                raise self.fail(m["roles"], f"{path}: {problem}")
            per_resource = [(r, role_operations(roles, r[0])) for r in resources]
            if "idempotent" in roles:
                cluster = (ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, m["roles"].line)
                per_resource.append((cluster, (AclOperation.IDEMPOTENT_WRITE,)))
        else:
            ops = tuple(self.enum(o, f"{path}.operations[{i}]", _OPERATIONS)
                        for i, o in enumerate(self.seq(m["operations"], f"{path}.operations")))  # fmt: skip
            per_resource = [(r, ops) for r in resources]
        for (rt, name, pt, line), ops in per_resource:
            for principal in principals:
                for host in hosts:
                    for op in ops:
                        binding = AclBinding.of(rt, name, pt, principal, host, op, permission)
                        try:
                            validate_new_acl(binding)
                        except StoreError as exc:
                            raise self.fail(line, f"{path}: {_text(binding)} is refused as a broker "
                                            f"refuses it: {exc.message}; fix the entry") from exc  # fmt: skip
                        yield binding, line

    def role(self, at: Located, path: str) -> str:
        word = self.text(at, path)
        if word not in ROLES:
            raise self.fail(at, f"{path}: {word!r} is not a role; use one of {', '.join(ROLES)}")
        return word

    def resources(
        self, at: Located, m: dict[str, Located], path: str
    ) -> list[tuple[ResourceType, str, PatternType, int]]:
        out = []
        if "resources" in m:
            out += [self.resource(r, f"{path}.resources[{i}]")
                    for i, r in enumerate(self.seq(m["resources"], f"{path}.resources"))]  # fmt: skip
        for key, (rt, pt) in SHORTHANDS.items():
            if key in m:
                out += [(rt, self.text(n, f"{path}.{key}[{i}]"), pt, n.line)
                        for i, n in enumerate(self.seq(m[key], f"{path}.{key}"))]  # fmt: skip
        if "cluster" in m:
            if m["cluster"].value is not True:
                raise self.fail(m["cluster"], f"{path}.cluster: write cluster: true, or leave it out")
            out.append((ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, m["cluster"].line))
        if not out:
            keys = ", ".join(_RESOURCE_KEYS_OF_ENTRY)
            raise self.fail(at, f"{path}: no resource; give at least one of {keys}")
        return out

    def resource(self, at: Located, path: str) -> tuple[ResourceType, str, PatternType, int]:
        m = self.mapping(at, path, _RESOURCE_KEYS, required=("resourceType",))
        rt = self.enum(m["resourceType"], f"{path}.resourceType", _TYPES)
        if "name" in m:
            name = self.text(m["name"], f"{path}.name")
        elif rt is ResourceType.CLUSTER:
            name = CLUSTER_NAME
        else:
            raise self.fail(at, f"{path}: name is missing; add the {rt.name} name (or prefix)")
        pt = self.enum(m["patternType"], f"{path}.patternType", _PATTERNS) if "patternType" in m \
            else PatternType.LITERAL  # fmt: skip
        return rt, name, pt, at.line


def _text(b: AclBinding) -> str:
    return (
        f"{b.permission_type.name} {b.principal} from {b.host} {b.operation.name} on "
        f"{b.resource_type.name} {b.pattern_type.name} {b.name!r}"
    )
