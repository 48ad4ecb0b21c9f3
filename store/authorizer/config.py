"""The authorizer's two settings, parsed exactly as Kafka's ``StandardAuthorizer.configure``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from store.errors import InvalidConfigError
from store.principal import SUPER_USERS_CONFIG, KafkaPrincipal, java_trim, parse_super_users

ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG = "allow.everyone.if.no.acl.found"
KNOWN_KEYS = frozenset({SUPER_USERS_CONFIG, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG})


def parse_allow_everyone(value: object) -> bool:
    """``StandardAuthorizer.getDefaultResult``: trimmed ``Boolean.parseBoolean``; None is false.

    Only the text ``true`` in any letter case is true; anything else (``yes``, ``1``) is false,
    exactly as Java's ``Boolean.parseBoolean``.
    """
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    return java_trim(str(value)).lower() == "true"


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizerConfig:
    """``super.users`` (``Type:name`` texts) and ``allow.everyone.if.no.acl.found``."""

    super_users: frozenset[str] = field(default_factory=frozenset)
    allow_everyone_if_no_acl_found: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.super_users, frozenset):
            object.__setattr__(self, "super_users", frozenset(self.super_users))
        for user in self.super_users:
            KafkaPrincipal.parse(user)

    @classmethod
    def of(cls, super_users: Iterable[str] = (), allow_everyone: bool = False) -> AuthorizerConfig:
        return cls(super_users=frozenset(super_users), allow_everyone_if_no_acl_found=allow_everyone)

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, object], *, ignore_unknown: bool = False
    ) -> AuthorizerConfig:
        """Parse broker-style properties as ``StandardAuthorizer.configure`` does.

        Keys other than ``super.users`` and ``allow.everyone.if.no.acl.found`` are refused
        unless ``ignore_unknown`` (pass that when handing over a whole ``server.properties``).
        """
        if not ignore_unknown:
            unknown = sorted(set(properties) - KNOWN_KEYS)
            if unknown:
                raise InvalidConfigError(
                    f"unknown authorizer config key(s) {', '.join(unknown)}: the authorizer reads "
                    f"only {SUPER_USERS_CONFIG} and {ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG} "
                    "(pass ignore_unknown=True to hand over a whole broker config)"
                )
        return cls(
            super_users=parse_super_users(properties.get(SUPER_USERS_CONFIG)),
            allow_everyone_if_no_acl_found=parse_allow_everyone(
                properties.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG)
            ),
        )

    def to_properties(self) -> dict[str, str]:
        """The broker properties that parse back to this config."""
        return {
            SUPER_USERS_CONFIG: ";".join(sorted(self.super_users)),
            ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: "true" if self.allow_everyone_if_no_acl_found else "false",
        }
