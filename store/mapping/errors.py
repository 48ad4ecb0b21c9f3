"""The error both principal mappers raise when no rule gives a name."""

from __future__ import annotations

from store.errors import StoreError


class NoMatchingRule(StoreError):
    """No rule maps the name (Kafka's ``SslPrincipalMapper.NoMatchingRule`` and the Kerberos
    ``NoMatchingRule``), or a Kerberos rule left a non-simple name.

    Kafka refuses the connection or fails the authentication; add a rule for the name, or end
    the list with ``DEFAULT``.
    """

    kafka_exception = "NoMatchingRule"
