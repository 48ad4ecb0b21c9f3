"""Kafka client properties as operators write them (Java client keys) for confluent-kafka.

``kafka-acls.sh --command-config`` and every other Kafka tool take a Java ``.properties`` file
with ``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` and the TLS settings.
The same file configures aclstore's Kafka clients: the change log's producer and readers
(``aclstore serve --log-config``) and the admin client of ``aclstore acls --bootstrap-server``.
:func:`librdkafka_config` is the one translation of those keys into librdkafka's;
:class:`KafkaClientProperties` holds the result, validated and frozen, with the secrets kept
out of its ``repr``.  The JVM's Kafka clients (Spark's Kafka source, which the history and
audit jobs read the log with) take the same file through :func:`jvm_client_config`: Java keys as
they are, librdkafka-only keys in their Java form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from store.errors import InvalidConfigError

_PASSED_THROUGH = frozenset({
    "bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.mechanisms",
    "sasl.username", "sasl.password", "ssl.ca.location", "ssl.certificate.location",
    "ssl.key.location", "ssl.key.password", "ssl.endpoint.identification.algorithm",
    "client.id", "socket.timeout.ms",
})  # fmt: skip
"""Keys the Java client and librdkafka share (or librdkafka's own, which a file may hold)."""

_IGNORED = frozenset({"request.timeout.ms", "default.api.timeout.ms", "retries", "retry.backoff.ms"})
"""Java client tuning with no librdkafka AdminClient counterpart: read and left alone."""

SECRET_KEYS: Final = frozenset({"sasl.password", "ssl.key.password", "sasl.jaas.config"})
"""Keys (librdkafka's and the JVM client's) whose values are never printed or logged."""

_JVM_AS_IS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.jaas.config",
    "ssl.endpoint.identification.algorithm", "request.timeout.ms", "default.api.timeout.ms",
    "retries", "retry.backoff.ms",
})  # fmt: skip
"""Java client keys a JVM client takes unchanged."""

_JVM_DROPPED = frozenset({"socket.timeout.ms", "bootstrap.servers", "client.id"})
"""librdkafka tuning with no Java counterpart, and what the command line sets: left out."""

_LOGIN_MODULES: Final = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def librdkafka_config(properties: Mapping[str, str]) -> dict[str, str]:
    """A kafka-acls.sh ``--command-config`` (Java client properties) as confluent-kafka settings.

    ``sasl.jaas.config`` of the PLAIN and SCRAM login modules becomes ``sasl.username`` and
    ``sasl.password``; JKS trust and key stores have no librdkafka form and are refused with
    the PEM keys to use instead.
    """
    config: dict[str, str] = {}
    for key, value in properties.items():
        if key in _PASSED_THROUGH:
            config["sasl.mechanism" if key == "sasl.mechanisms" else key] = value
        elif key == "sasl.jaas.config":
            # Quoted values as Java's JAAS parser reads them: a backslash escapes the next char.
            options = {k: re.sub(r"\\(.)", r"\1", v) for k, v in _JAAS_OPTION.findall(value)}
            if "username" not in options or "password" not in options:
                raise InvalidConfigError(
                    "sasl.jaas.config: only the PLAIN and SCRAM login modules' username=\"...\" "
                    "password=\"...\" can be used here; set sasl.username and sasl.password "
                    "instead"
                )
            config["sasl.username"] = options["username"]
            config["sasl.password"] = options["password"]
        elif key.startswith(("ssl.truststore.", "ssl.keystore.")):
            raise InvalidConfigError(
                f"{key}: JKS and PKCS12 stores are not readable here; give PEM files with "
                "ssl.ca.location, ssl.certificate.location and ssl.key.location"
            )
        elif key not in _IGNORED:
            raise InvalidConfigError(
                f"unknown Kafka client property {key!r} in the command config; this path "
                f"understands {', '.join(sorted(_PASSED_THROUGH | {'sasl.jaas.config'}))}"
            )
    return config


def _jaas_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jvm_client_config(properties: Mapping[str, str]) -> dict[str, str]:
    """The same client properties for a JVM Kafka client (Spark's Kafka source).

    Java keys pass unchanged; librdkafka's ``sasl.username``/``sasl.password`` become the
    ``sasl.jaas.config`` of the mechanism's login module and ``ssl.ca.location`` a PEM trust
    store.  A client certificate as two PEM files has no Java form (a PEM key store is one
    file): it is refused with the fix, as JKS stores are in :func:`librdkafka_config`.
    """
    librdkafka_config(properties)  # the same keys refused the same way for both clients
    config: dict[str, str] = {}
    for key, value in properties.items():
        if key in _JVM_AS_IS:
            config[key] = value
        elif key == "sasl.mechanisms":
            config["sasl.mechanism"] = value
        elif key == "ssl.ca.location":
            config["ssl.truststore.type"] = "PEM"
            config["ssl.truststore.location"] = value
        elif key in ("ssl.certificate.location", "ssl.key.location", "ssl.key.password"):
            raise InvalidConfigError(
                f"{key}: a client certificate is not passed to the JVM's Kafka clients (the "
                "Spark jobs); authenticate them with SASL (sasl.jaas.config) instead"
            )
    if "sasl.jaas.config" not in config and "sasl.username" in properties:
        mechanism = config.get("sasl.mechanism", "GSSAPI")
        module = _LOGIN_MODULES.get(mechanism.upper())
        if module is None or "sasl.password" not in properties:
            raise InvalidConfigError(
                f"sasl.username with sasl.mechanism {mechanism!r}: the JVM's Kafka clients need "
                "sasl.mechanism PLAIN or SCRAM-SHA-256/512 and sasl.password, or a "
                "sasl.jaas.config"
            )
        config["sasl.jaas.config"] = (
            f"{module} required username={_jaas_quoted(properties['sasl.username'])} "
            f"password={_jaas_quoted(properties['sasl.password'])};"
        )
    return config


@dataclass(frozen=True, slots=True)
class KafkaClientProperties:
    """How aclstore's Kafka clients connect: security protocol, SASL, TLS files (librdkafka keys).

    Build with :meth:`from_java`; :meth:`librdkafka` gives the settings to merge into a client's
    configuration.  ``bootstrap.servers`` and ``client.id`` are not connection settings: the
    command line names the brokers and each client names itself, so they are refused here.
    """

    settings: tuple[tuple[str, str], ...] = ()
    jvm: tuple[tuple[str, str], ...] = ()
    """The same settings for a JVM Kafka client (:func:`jvm_client_config`)."""

    @classmethod
    def from_java(cls, properties: Mapping[str, str], *, source: str = "") -> KafkaClientProperties:
        """From Java client properties (a ``--log-config`` file read with its path in ``source``)."""
        config = librdkafka_config(properties)
        for key in ("bootstrap.servers", "client.id"):
            if key in config:
                raise InvalidConfigError(
                    f"{source or 'the Kafka client properties'}: {key} is set by aclstore "
                    "(--bootstrap-servers names the brokers; each client names itself); remove it"
                )
        return cls(tuple(sorted(config.items())), tuple(sorted(jvm_client_config(properties).items())))

    def librdkafka(self) -> dict[str, str]:
        return dict(self.settings)

    def spark_kafka_options(self) -> dict[str, str]:
        """Options of Spark's Kafka source: each JVM client setting with the ``kafka.`` prefix."""
        return {f"kafka.{key}": value for key, value in self.jvm}

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={'***' if k in SECRET_KEYS else v}" for k, v in self.settings
        )  # the jvm settings say the same, the secrets in sasl.jaas.config
        return f"KafkaClientProperties({shown})"
