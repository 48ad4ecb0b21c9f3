"""Kafka client properties files (Java client keys) read as confluent-kafka settings: kafka-acls.sh's
``--command-config`` and ``aclstore serve --log-config``."""

from __future__ import annotations

import pytest

from store.errors import InvalidConfigError
from store.log.client_properties import KafkaClientProperties, jvm_client_config, librdkafka_config


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


def test_log_client_properties_keep_the_password_out_of_their_repr() -> None:
    props = KafkaClientProperties.from_java({
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="aclstore" password="s3cret-pw";',
    })  # fmt: skip
    assert props.librdkafka() == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "aclstore",
        "sasl.password": "s3cret-pw",
    }
    assert "s3cret-pw" not in repr(props) and "sasl.username=aclstore" in repr(props)


@pytest.mark.parametrize("key", ["bootstrap.servers", "client.id"])
def test_log_client_properties_refuse_what_aclstore_sets_itself(key: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"log.properties: {key}.*remove it"):
        KafkaClientProperties.from_java({key: "x"}, source="log.properties")


def test_jvm_clients_get_java_keys_as_they_are_and_a_pem_trust_store() -> None:
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";'
    assert jvm_client_config({
        "security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "sasl.jaas.config": jaas,
        "ssl.ca.location": "/etc/kafka/ca.pem", "socket.timeout.ms": "5000",
    }) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": "/etc/kafka/ca.pem",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("mechanism", "module"),
    [
        ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule"),
        ("SCRAM-SHA-256", "org.apache.kafka.common.security.scram.ScramLoginModule"),
        ("scram-sha-512", "org.apache.kafka.common.security.scram.ScramLoginModule"),
    ],
)
def test_librdkafka_username_and_password_become_the_login_modules_jaas(
    mechanism: str, module: str
) -> None:
    password = 'p"w \\d'  # a quote and a backslash: JAAS escapes both
    jvm = jvm_client_config({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.username": "ops", "sasl.password": password,
    })  # fmt: skip
    assert jvm["sasl.jaas.config"] == f'{module} required username="ops" password="p\\"w \\\\d";'
    # And back: the JAAS reader of librdkafka_config gives the very same user and password.
    assert librdkafka_config(jvm) == {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.username": "ops", "sasl.password": password,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ({"ssl.certificate.location": "/c.pem", "ssl.key.location": "/k.pem"}, "sasl.jaas.config"),
        ({"sasl.mechanism": "GSSAPI", "sasl.username": "u", "sasl.password": "p"}, "'GSSAPI'"),
        ({"sasl.mechanism": "PLAIN", "sasl.username": "u"}, "sasl.password"),
        ({"ssl.keystore.location": "/x.jks"}, "ssl.certificate.location"),
    ],
)  # fmt: skip
def test_what_the_jvm_clients_cannot_take_is_refused_by_name(
    properties: dict[str, str], named: str
) -> None:
    with pytest.raises(InvalidConfigError, match=named):
        jvm_client_config(properties)


def test_spark_options_carry_the_kafka_prefix_and_the_repr_hides_the_jaas() -> None:
    client = KafkaClientProperties.from_java({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="ops" password="hunter2";',
    })  # fmt: skip
    options = client.spark_kafka_options()
    assert options["kafka.security.protocol"] == "SASL_PLAINTEXT"
    assert options["kafka.sasl.mechanism"] == "PLAIN"
    assert 'password="hunter2"' in options["kafka.sasl.jaas.config"]
    assert set(options) == {"kafka.security.protocol", "kafka.sasl.mechanism", "kafka.sasl.jaas.config"}
    assert "hunter2" not in repr(client)
