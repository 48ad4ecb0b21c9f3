"""Conformance handlers for every kind in ``kafka_acl_vectors.jsonl`` (see FORMAT.md).

Each handler turns the vector's JSON into our types, runs the general implementation
(never a lookup by id) and compares with ``expect``.  Kafka exception names map to ours:
``IllegalArgumentException`` to our argument/format errors (and ``ValueError``),
``NullPointerException`` to ``TypeError``, ``AuthorizerNotReadyException`` to
``AuthorizerNotReadyError``.  ``authorize`` and ``authorize_by_resource_type`` are evaluated
against both the indexed view and the scanning reference view, which must agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from devtools.conformance.registry import Outcome, Vector, kind
from store.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    parse_fields,
)
from store.authorizer import (
    Action,
    AuthorizerConfig,
    InMemoryAclIndex,
    InvalidActionError,
    ScanAclView,
    authorize,
    authorize_by_resource_type,
    find_result,
)
from store.authorizer.config import parse_allow_everyone
from store.authorizer.view import AclView
from store.errors import AuthorizerNotReadyError, InvalidConfigError, StoreError
from store.principal import PrincipalFormatError, parse_super_users
from store.validation import (
    ValidationLayer,
    plan_create_acls,
    plan_delete_acls,
    validate_filter,
    validate_new_acl,
)

KAFKA_EXCEPTIONS: dict[str, tuple[type[BaseException], ...]] = {
    "IllegalArgumentException": (
        InvalidActionError,
        PrincipalFormatError,
        InvalidConfigError,
        ValueError,
    ),
    "NullPointerException": (TypeError,),
    "AuthorizerNotReadyException": (AuthorizerNotReadyError,),
}


# --- JSON to our types ---------------------------------------------------------------------


def binding_of(fields: list[Any]) -> AclBinding:
    return AclBinding.of(*parse_fields(fields))


def filter_of(fields: list[Any]) -> AclBindingFilter:
    return AclBindingFilter.of(*parse_fields(fields))


def fields_of(binding: AclBinding) -> list[str]:
    return list(binding.fields())


def config_of(vector: Vector) -> tuple[AuthorizerConfig, bool]:
    raw = vector.get("config") or {}
    config = AuthorizerConfig.of(
        raw.get("super_users", []), bool(raw.get("allow_everyone_if_no_acl_found", False))
    )
    return config, bool(raw.get("loading_complete", True))


def views_of(vector: Vector) -> list[AclView]:
    bindings = [binding_of(acl) for acl in vector.get("acls", [])]
    return [InMemoryAclIndex(bindings), ScanAclView(bindings)]


def action_of(req: dict[str, Any]) -> Action:
    return Action(
        AclOperation.parse(req["op"]),
        ResourceType.parse(req["rt"]),
        req["name"],
        PatternType.parse(req.get("pattern_type", "LITERAL")),
    )


# --- comparing -----------------------------------------------------------------------------


def _message_note(expected: str | None, got: str) -> str | None:
    # Our messages are Kafka's, sometimes followed by a hint on the fix.
    if expected is None or got == expected or got.startswith(expected + " ("):
        return None
    return f"message differs: expected {expected!r} got {got!r}"


def expect_outcome(vector: Vector, run: Callable[[], Any]) -> Outcome:
    """Run ``run``; compare its value, or the exception it raised, with ``expect``."""
    expected = vector["expect"]
    throws = expected.get("throws") if isinstance(expected, dict) else None
    try:
        got = run()
    except StoreError as exc:
        return _compare_error(throws, expected, exc, exc.message)
    except (ValueError, TypeError) as exc:
        return _compare_error(throws, expected, exc, str(exc))
    if throws is not None:
        return Outcome(passed=False, expected=expected, got=got)
    return Outcome(passed=got == expected, expected=expected, got=got)


def _compare_error(throws: str | None, expected: Any, exc: BaseException, message: str) -> Outcome:
    got = {"raised": type(exc).__name__, "message": message}
    if throws is None or not isinstance(exc, KAFKA_EXCEPTIONS.get(throws, ())):
        return Outcome(passed=False, expected=expected, got=got)
    return Outcome(passed=True, message_note=_message_note(expected.get("message"), message))


def error_result(exc: StoreError) -> dict[str, Any]:
    return {"error": exc.error_code.name, "message": exc.message}


def item_outcome(expected: Any, got: Any) -> Outcome:
    """Per-item admin results: the error code decides; a differing message is a note."""
    if isinstance(expected, dict) and isinstance(got, dict) and "error" in expected:
        if got.get("error") != expected["error"]:
            return Outcome(passed=False, expected=expected, got=got)
        return Outcome(passed=True, message_note=_message_note(expected.get("message"), got["message"]))
    return Outcome(passed=got == expected, expected=expected, got=got)


def combine(outcomes: list[Outcome], expected: Any, got: Any) -> Outcome:
    notes = "; ".join(o.message_note for o in outcomes if o.message_note)
    return Outcome(
        passed=all(o.passed for o in outcomes), expected=expected, got=got, message_note=notes or None
    )


def _agreeing(answers: list[str]) -> str:
    if len(set(answers)) != 1:
        raise AssertionError(f"indexed and scanning views disagree: {answers}")
    return answers[0]


# --- authorization -------------------------------------------------------------------------


@kind("authorize")
def _authorize(vector: Vector) -> Outcome:
    config, loaded = config_of(vector)
    req = vector["req"]

    def run() -> str:
        action = action_of(req)
        return _agreeing(
            [
                authorize(view, config, req["principal"], req["host"], [action], loading_complete=loaded)[
                    0
                ].result.value
                for view in views_of(vector)
            ]
        )

    return expect_outcome(vector, run)


@kind("authorize_by_resource_type")
def _authorize_by_resource_type(vector: Vector) -> Outcome:
    config, loaded = config_of(vector)
    req = vector["req"]

    def run() -> str:
        return _agreeing(
            [
                authorize_by_resource_type(
                    view,
                    config,
                    req["principal"],
                    req["host"],
                    AclOperation.parse(req["op"]),
                    ResourceType.parse(req["rt"]),
                    loading_complete=loaded,
                ).result.value
                for view in views_of(vector)
            ]
        )

    return expect_outcome(vector, run)


@kind("find_result")
def _find_result(vector: Vector) -> Outcome:
    req = vector["req"]

    def run() -> str | None:
        result = find_result(
            binding_of(vector["acl"]), req["principal"], req["host"], AclOperation.parse(req["op"])
        )
        return None if result is None else result.value

    return expect_outcome(vector, run)


@kind("config_super_users")
def _config_super_users(vector: Vector) -> Outcome:
    expected = vector["expect"]

    def run() -> Any:
        users = parse_super_users(vector["value"])
        # A set in Kafka: compare as the expected list's order when the members agree.
        return expected if isinstance(expected, list) and set(expected) == users else sorted(users)

    return expect_outcome(vector, run)


@kind("config_default_result")
def _config_default_result(vector: Vector) -> Outcome:
    return expect_outcome(vector, lambda: "ALLOWED" if parse_allow_everyone(vector["value"]) else "DENIED")


# --- describe, create, delete --------------------------------------------------------------


@kind("acls_list")
def _acls_list(vector: Vector) -> Outcome:
    acl_filter = filter_of(vector["filter"])
    expected = vector["expect"]
    outcomes = []
    got: list[list[str]] = []
    for view in views_of(vector):
        got = [fields_of(b) for b in view.acls(acl_filter)]
        if vector.get("ordered"):
            passed = got == expected
        else:
            passed = Counter(map(tuple, got)) == Counter(map(tuple, expected))
        outcomes.append(Outcome(passed=passed, expected=expected, got=got))
    return combine(outcomes, expected, got)


def _same_bindings(a: list[list[str]], b: list[list[str]]) -> bool:
    return Counter(map(tuple, a)) == Counter(map(tuple, b))


@kind("delete_acls")
def _delete_acls(vector: Vector) -> Outcome:
    existing = [binding_of(acl) for acl in vector["acls"]]
    plan = plan_delete_acls(existing, [filter_of(f) for f in vector["filters"]])
    outcomes = []
    got_per_filter: list[Any] = []
    for expected, result in zip(vector["expect_per_filter"], plan.results, strict=True):
        if isinstance(result, StoreError):
            got_item: Any = error_result(result)
            outcomes.append(item_outcome(expected, got_item))
        else:
            got_item = [fields_of(b) for b in result]
            ok = isinstance(expected, list) and _same_bindings(expected, got_item)
            outcomes.append(Outcome(passed=ok, expected=expected, got=got_item))
        got_per_filter.append(got_item)
    removed = set(plan.removed)
    remaining = [fields_of(b) for b in existing if b not in removed]
    if "expect_remaining" in vector:
        ok = _same_bindings(vector["expect_remaining"], remaining)
        outcomes.append(Outcome(passed=ok, expected=vector["expect_remaining"], got=remaining))
    if "expect_remove_records" in vector:
        ok = vector["expect_remove_records"] == len(plan.removed)
        outcomes.append(Outcome(passed=ok))
    got = {"per_filter": got_per_filter, "remaining": remaining, "remove_records": len(plan.removed)}
    return combine(outcomes, vector["expect_per_filter"], got)


def _layer(vector: Vector) -> ValidationLayer:
    return ValidationLayer(vector.get("layer", ValidationLayer.BROKER.value))


@kind("create_acl")
def _create_acl(vector: Vector) -> Outcome:
    binding = binding_of(vector["binding"])
    try:
        validate_new_acl(binding, layer=_layer(vector))
        got: dict[str, Any] = {"ok": True}
    except StoreError as exc:
        got = error_result(exc)
    return item_outcome(vector["expect"], got)


@kind("create_acls")
def _create_acls(vector: Vector) -> Outcome:
    existing = InMemoryAclIndex(binding_of(acl) for acl in vector.get("acls", []))
    plan = plan_create_acls(existing, [binding_of(b) for b in vector["bindings"]], layer=_layer(vector))
    got = [{"ok": True} if err is None else error_result(err) for err in plan.results]
    outcomes = [item_outcome(e, g) for e, g in zip(vector["expect"], got, strict=True)]
    if "expect_new_records" in vector:
        outcomes.append(Outcome(passed=vector["expect_new_records"] == len(plan.new_bindings)))
    return combine(outcomes, vector["expect"], {"results": got, "new_records": len(plan.new_bindings)})


@kind("validate_filter")
def _validate_filter(vector: Vector) -> Outcome:
    try:
        validate_filter(filter_of(vector["filter"]))
        got: dict[str, Any] = {"ok": True}
    except StoreError as exc:
        got = error_result(exc)
    return item_outcome(vector["expect"], got)


# --- model predicates ----------------------------------------------------------------------


@kind("filter_match")
def _filter_match(vector: Vector) -> Outcome:
    return expect_outcome(vector, lambda: filter_of(vector["filter"]).matches(binding_of(vector["binding"])))


@kind("binding_is_unknown")
def _binding_is_unknown(vector: Vector) -> Outcome:
    return expect_outcome(vector, lambda: binding_of(vector["binding"]).is_unknown)


@kind("filter_matches_at_most_one")
def _filter_matches_at_most_one(vector: Vector) -> Outcome:
    return expect_outcome(vector, lambda: filter_of(vector["filter"]).matches_at_most_one())


def _pattern_of(fields: list[Any]) -> ResourcePattern:
    rt, name, pt = fields
    return ResourcePattern(
        resource_type=ResourceType.parse(rt), name=name, pattern_type=PatternType.parse(pt)
    )


def _pattern_filter_of(fields: list[Any]) -> ResourcePatternFilter:
    rt, name, pt = fields
    return ResourcePatternFilter(
        resource_type=ResourceType.parse(rt), name=name, pattern_type=PatternType.parse(pt)
    )


@kind("pattern_filter_match")
def _pattern_filter_match(vector: Vector) -> Outcome:
    return expect_outcome(
        vector,
        lambda: _pattern_filter_of(vector["pattern_filter"]).matches(_pattern_of(vector["pattern"])),
    )


@kind("pattern_filter_is_unknown")
def _pattern_filter_is_unknown(vector: Vector) -> Outcome:
    return expect_outcome(vector, lambda: _pattern_filter_of(vector["pattern_filter"]).is_unknown)


@kind("construct_resource_pattern")
def _construct_resource_pattern(vector: Vector) -> Outcome:
    def run() -> dict[str, bool]:
        _pattern_of(vector["args"])
        return {"ok": True}

    return expect_outcome(vector, run)
