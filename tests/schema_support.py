"""A small JSON Schema checker for the tests: the keywords our schema files use, no more.

``type`` (one name or a list), ``required``, ``properties``, ``additionalProperties: false``,
``enum``, ``const``, ``minimum``, ``maximum``, ``minLength``, ``maxLength``, ``minItems``,
``maxItems``, ``items``, ``prefixItems``, ``allOf``, ``oneOf`` and local ``$ref``; any other
keyword in a schema is an error, so a schema file cannot silently use a keyword these tests do
not check.  Shared by the tests of the
contract (tests/replicator) and of the broker plugin's side of it (tests/plugin).
"""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "integer": (int,), "number": (int, float), "null": (type(None),),
}  # fmt: skip
_CHECKED = {
    "type", "required", "properties", "additionalProperties", "enum", "const", "minimum", "items",
    "$ref", "allOf", "oneOf", "description", "format", "title", "$schema", "$id", "example",
    "default", "$defs", "maxItems", "maximum", "minLength", "maxLength", "minItems", "prefixItems",
}


def _is(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[name])


def violations(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
               path: str = "$") -> list[str]:  # fmt: skip
    """Every way ``value`` breaks ``schema``, as ``path: what``; empty when it conforms."""
    root = root if root is not None else schema
    unknown = set(schema) - _CHECKED
    if unknown:
        return [f"{path}: schema keyword(s) {sorted(unknown)} not checked by this helper"]
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return violations(value, target, root, path)
    found: list[str] = []
    for sub in schema.get("allOf", ()):
        found += violations(value, sub, root, path)
    if "oneOf" in schema:
        fits = sum(not violations(value, sub, root, path) for sub in schema["oneOf"])
        if fits != 1:
            found.append(f"{path}: {value!r} fits {fits} of oneOf, not exactly one")
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, n) for n in names):
            return [f"{path}: {value!r} is not of type {names}"]
    if "const" in schema and value != schema["const"]:
        found.append(f"{path}: {value!r} != {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        found.append(f"{path}: {value!r} < {schema['minimum']}")
    if "maximum" in schema and _is(value, "number") and value > schema["maximum"]:
        found.append(f"{path}: {value!r} > {schema['maximum']}")
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        found.append(f"{path}: {value!r} is shorter than {schema['minLength']}")
    if "maxLength" in schema and isinstance(value, str) and len(value) > schema["maxLength"]:
        found.append(f"{path}: {value!r} is longer than {schema['maxLength']}")
    if isinstance(value, dict):
        found += [f"{path}: missing {k}" for k in schema.get("required", ()) if k not in value]
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            found += [f"{path}: unexpected {k}" for k in value if k not in properties]
        for key, sub in properties.items():
            if key in value:
                found += violations(value[key], sub, root, f"{path}.{key}")
    if isinstance(value, list) and len(value) > schema.get("maxItems", len(value)):
        found.append(f"{path}: {len(value)} items, more than {schema['maxItems']}")
    if isinstance(value, list) and len(value) < schema.get("minItems", 0):
        found.append(f"{path}: {len(value)} items, fewer than {schema['minItems']}")
    prefix = schema.get("prefixItems", []) if isinstance(value, list) else []
    if isinstance(value, list):
        for i, (item, sub) in enumerate(zip(value, prefix, strict=False)):
            found += violations(item, sub, root, f"{path}[{i}]")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value[len(prefix) :], start=len(prefix)):
            found += violations(item, schema["items"], root, f"{path}[{i}]")
    return found
