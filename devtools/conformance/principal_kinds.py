"""Conformance handlers for the kinds of principal_mapping_vectors.jsonl (see FORMAT.md).

Each handler runs the vector's input through :mod:`store.mapping` and compares with the
vector's ``toString`` / ``output``, or, when the vector has ``error``, checks that our error
stands for that Java exception (:func:`store.mapping.java_regex.java_exception_is`) and reports a
differing message as a note, which FORMAT.md says does not fail the vector.
"""

from __future__ import annotations

from collections.abc import Callable

from devtools.conformance.registry import Outcome, Vector, kind
from store.errors import StoreError
from store.mapping.java_regex import java_exception_is
from store.mapping.kerberos import KerberosShortNamer
from store.mapping.ssl import SslPrincipalMapper
from store.mapping.x500 import x500_get_name


def _judge(vector: Vector, expected_key: str, compute: Callable[[], str]) -> Outcome:
    """Run ``compute`` and judge it against the vector's expected text or error."""
    want_error = vector.get("error")
    try:
        got = compute()
    except StoreError as exc:
        if want_error is None:
            return Outcome(
                passed=False, expected=vector.get(expected_key), got=_describe(exc)
            )
        if not java_exception_is(exc, str(want_error)):
            return Outcome(passed=False, expected=want_error, got=_describe(exc))
        want_message = vector.get("message")
        note = None
        if want_message is not None and exc.message != want_message:
            note = f"expected message {want_message!r} got {exc.message!r}"
        return Outcome(passed=True, expected=want_error, got=_describe(exc), message_note=note)
    if want_error is not None:
        return Outcome(passed=False, expected={"error": want_error}, got=got)
    expected = vector.get(expected_key)
    return Outcome(passed=got == expected, expected=expected, got=got)


def _describe(exc: StoreError) -> str:
    return f"{getattr(exc, 'kafka_exception', type(exc).__name__)}: {exc.message}"


def _krb_rules(vector: Vector) -> list[str] | None:
    rules = vector.get("rules")
    return None if rules is None else [str(rule) for rule in rules]


@kind("ssl_parse")
def ssl_parse(vector: Vector) -> Outcome:
    """``SslPrincipalMapper.fromRules(rules).toString()``."""
    return _judge(vector, "toString", lambda: str(SslPrincipalMapper(vector.get("rules"))))


@kind("ssl_map")
def ssl_map(vector: Vector) -> Outcome:
    """``SslPrincipalMapper.fromRules(rules).getName(input)``."""
    return _judge(
        vector,
        "output",
        lambda: SslPrincipalMapper(vector.get("rules")).get_name(str(vector["input"])),
    )


@kind("krb_parse")
def krb_parse(vector: Vector) -> Outcome:
    """``KerberosShortNamer.fromUnparsedRules(default_realm, rules).toString()``."""
    return _judge(
        vector,
        "toString",
        lambda: str(KerberosShortNamer(str(vector["default_realm"]), _krb_rules(vector))),
    )


@kind("krb_map")
def krb_map(vector: Vector) -> Outcome:
    """``shortName(KerberosName.parse(input))`` under the vector's rules and default realm."""
    return _judge(
        vector,
        "output",
        lambda: KerberosShortNamer(str(vector["default_realm"]), _krb_rules(vector)).short_name(
            str(vector["input"])
        ),
    )


@kind("x500_getName")
def x500_get_name_kind(vector: Vector) -> Outcome:
    """``new X500Principal(input).getName()``."""
    return _judge(vector, "output", lambda: x500_get_name(str(vector["input"])))
