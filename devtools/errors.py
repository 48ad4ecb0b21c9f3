"""Errors of the local runtime: what is missing on the machine and how to fix it."""

from __future__ import annotations

from store.errors import StoreError


class RuntimeSetupError(StoreError):
    """The machine lacks something the local runtime needs (Java, Maven, a route to Maven Central)."""


class BrokerStartError(StoreError):
    """The local Kafka broker did not start; the message names its log file."""
