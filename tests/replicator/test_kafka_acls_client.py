"""kafka-acls.sh's ``--command-config`` (Java client properties) read as confluent-kafka settings."""

from __future__ import annotations

import pytest

from replicator.client.kafka_acls import librdkafka_config
from store.errors import InvalidConfigError


def test_plain_jaas_config_becomes_username_and_password() -> None:
    config = librdkafka_config({
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="ops" password="p\\"w d";',
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "request.timeout.ms": "30000",
    })  # fmt: skip
    assert config == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "ops",
        "sasl.password": 'p"w d',
        "ssl.ca.location": "/etc/kafka/ca.pem",
    }


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ({"ssl.truststore.location": "/x.jks"}, "ssl.ca.location"),
        ({"sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"},
         "sasl.username"),
        ({"bogus.key": "1"}, "'bogus.key'"),
    ],
)  # fmt: skip
def test_what_librdkafka_cannot_take_is_refused_by_name(
    properties: dict[str, str], named: str
) -> None:
    with pytest.raises(InvalidConfigError, match=named.replace(".", r"\.")):
        librdkafka_config(properties)
