"""The store's own settings as configs (KIP-133 applied to the ACL store), and format gating.

Three settings live in the change log as ``ConfigAltered`` events, so every replica and every
history query sees them at the right offset:

* ``super.users`` - principals allowed everything (``StandardAuthorizer``'s setting);
* ``allow.everyone.if.no.acl.found`` - the default when no ACL applies to a resource;
* ``acl.format.version`` - the **finalized** event format version.  Like Kafka's
  ``metadata.version`` (KIP-584), it is raised when every reader has been upgraded; a binding
  that needs a newer format is refused (Kafka refused prefixed ACLs under an older
  ``inter.broker.protocol.version`` the same way), so an old reader never meets it unannounced.

``AlterConfigPolicy`` is KIP-133's ``AlterConfigsPolicy``: a pluggable check that may refuse
a change with a reason (``PolicyViolationError``, Kafka's ``POLICY_VIOLATION``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from store.acl import AclBinding
from store.authorizer import ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, AuthorizerConfig
from store.errors import InvalidConfigError, KafkaErrorCode, StoreError
from store.events import (
    LATEST_FORMAT_VERSION,
    SUPPORTED_FORMAT_VERSIONS,
    binding_format_requirement,
)
from store.principal import SUPER_USERS_CONFIG, java_trim, parse_super_users

FORMAT_VERSION_CONFIG: Final = "acl.format.version"
FORMAT_DOWNGRADE_FORCED_CONFIG: Final = "acl.format.version.forced"
"""Read-only: set by a forced lowering of ``acl.format.version`` to the versions and the reason
(the event's actor says who forced it)."""


CHANGE_REFERENCE_CONFIG: Final = "acl.change.reference"
"""Read-only: the reference (a commit id, a ticket) that the latest ``aclstore apply`` or drift
revert named; its ``ConfigAltered`` event is written in the same batch as the ACL changes it
describes, with the same request id and actor, so every change of that batch has it."""


class PolicyViolationError(StoreError):
    """An ``AlterConfigPolicy`` refused the change (``PolicyViolationException``)."""

    error_code = KafkaErrorCode.POLICY_VIOLATION


class UnsupportedFormatVersionError(StoreError):
    """A binding needs a newer event format than the finalized ``acl.format.version``."""

    error_code = KafkaErrorCode.UNSUPPORTED_VERSION


def _check_super_users(value: str) -> None:
    parse_super_users(value)  # raises SuperUsersConfigError naming the bad entry


def _check_boolean(value: str) -> None:
    if java_trim(value).lower() not in ("true", "false"):
        raise InvalidConfigError(
            f"invalid value {value!r} for {ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG}: "
            "use true or false"
        )


def format_version_of(value: str) -> int:
    """The version an ``acl.format.version`` value names: its decimal digits, trimmed as every
    setting's value is (Java's ``trim``: U+0001 ``2`` is 2).  The check of a new value, the
    downgrade analysis and the settings read it this one way, so that a value the check accepts
    is one the others can read."""
    text = java_trim(value)
    if not text.isdecimal():
        raise InvalidConfigError(
            f"invalid value {value!r} for {FORMAT_VERSION_CONFIG}: use one of "
            f"{', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}"
        )
    return int(text)


def _check_format_version(value: str) -> None:
    if format_version_of(value) not in SUPPORTED_FORMAT_VERSIONS:
        raise InvalidConfigError(
            f"invalid value {value!r} for {FORMAT_VERSION_CONFIG}: use one of "
            f"{', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}"
        )


@dataclass(frozen=True, slots=True)
class ConfigDefinition:
    name: str
    default: str
    doc: str
    check: Callable[[str], None]
    read_only: bool = False


DEFINITIONS: Final[Mapping[str, ConfigDefinition]] = {
    d.name: d
    for d in (
        ConfigDefinition(
            SUPER_USERS_CONFIG,
            "",
            "Principals allowed everything, ';'-separated.",
            _check_super_users,
        ),
        ConfigDefinition(
            ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG,
            "false",
            "Allow when no ACL applies to the resource.",
            _check_boolean,
        ),
        ConfigDefinition(
            FORMAT_VERSION_CONFIG,
            str(LATEST_FORMAT_VERSION),
            "The finalized change-event format version.",
            _check_format_version,
        ),
        ConfigDefinition(
            FORMAT_DOWNGRADE_FORCED_CONFIG,
            "",
            "Why acl.format.version was last lowered by force (read-only; the event names who).",
            lambda value: None,
            read_only=True,
        ),
        ConfigDefinition(
            CHANGE_REFERENCE_CONFIG,
            "",
            "The reference the latest apply named (read-only; its event shares the request id "
            "of the ACL changes it describes).",
            lambda value: None,
            read_only=True,
        ),
    )
}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One described setting (KIP-133's ``ConfigEntry``); none of the store's is sensitive."""

    name: str
    value: str
    is_default: bool
    is_sensitive: bool = False
    is_read_only: bool = False
    doc: str = ""


def check_alterable(name: str) -> None:
    """Refuse to alter a read-only setting (one the store writes itself)."""
    definition = DEFINITIONS.get(name)
    if definition is not None and definition.read_only:
        raise InvalidConfigError(
            f"{name} is read-only: the store sets it when a format downgrade is forced "
            f"(alter {FORMAT_VERSION_CONFIG} with a force reason instead)"
        )


def check_config(name: str, value: str | None) -> None:
    """Refuse an unknown key or a value the store cannot use (None resets to the default)."""
    definition = DEFINITIONS.get(name)
    if definition is None:
        raise InvalidConfigError(
            f"unknown config {name!r}; the store's configs are {', '.join(sorted(DEFINITIONS))}"
        )
    if value is not None:
        if not isinstance(value, str):
            raise InvalidConfigError(f"the value of {name} must be a string, got {value!r}")
        definition.check(value)


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """The settings as of a log offset: only explicitly set values are held."""

    values: Mapping[str, str]

    def value(self, name: str) -> str:
        return self.values.get(name, DEFINITIONS[name].default)

    @property
    def format_version(self) -> int:
        return format_version_of(self.value(FORMAT_VERSION_CONFIG))

    def authorizer_config(self, extra_super_users: Iterable[str] = ()) -> AuthorizerConfig:
        """The decision rules' settings; ``extra_super_users`` come from the local process."""
        base = AuthorizerConfig.from_properties(
            {
                SUPER_USERS_CONFIG: self.values.get(SUPER_USERS_CONFIG),
                ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: self.values.get(
                    ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG
                ),
            }
        )
        return AuthorizerConfig(
            super_users=base.super_users | frozenset(extra_super_users),
            allow_everyone_if_no_acl_found=base.allow_everyone_if_no_acl_found,
        )

    def entries(self) -> list[ConfigEntry]:
        return [
            ConfigEntry(
                name=name,
                value=self.value(name),
                is_default=name not in self.values,
                is_read_only=definition.read_only,
                doc=definition.doc,
            )
            for name, definition in sorted(DEFINITIONS.items())
        ]


def check_format_gate(binding: AclBinding, finalized: int) -> None:
    """Refuse ``binding`` when it needs a newer format than the finalized one."""
    if binding_format_requirement(binding)[0] > finalized:
        raise format_gate_refusal(binding, finalized)


def format_gate_refusal(binding: AclBinding, finalized: int) -> UnsupportedFormatVersionError:
    """The error that refuses ``binding``, which needs a newer format than ``finalized``."""
    needed, feature = binding_format_requirement(binding)
    return UnsupportedFormatVersionError(
        f"{binding} uses {feature}, which needs {FORMAT_VERSION_CONFIG} {needed} or greater, "
        f"but the finalized version is {finalized}: upgrade every reader, then raise "
        f"{FORMAT_VERSION_CONFIG} with alter_configs"
    )


def check_format_downgrade(live: Iterable[AclBinding], new_version: int) -> None:
    """Refuse to finalize a version below what a live binding needs (old readers would miss it)."""
    for binding in live:
        needed, feature = binding_format_requirement(binding)
        if needed > new_version:
            raise InvalidConfigError(
                f"cannot lower {FORMAT_VERSION_CONFIG} to {new_version}: the live binding "
                f"{binding} uses {feature}, which needs {needed}; delete such bindings first, "
                "or force the downgrade with a reason"
            )


@dataclass(frozen=True, slots=True)
class AlterConfigsRequest:
    """What a policy sees (KIP-133's ``RequestMetadata``): changes, actor, current values."""

    configs: Mapping[str, str | None]
    actor: str
    current: Mapping[str, str]


class AlterConfigPolicy(Protocol):
    """KIP-133's ``AlterConfigsPolicy``: raise :class:`PolicyViolationError` to refuse."""

    def validate(self, request: AlterConfigsRequest) -> None: ...
