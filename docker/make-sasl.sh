#!/bin/sh
# SASL/PLAIN users of the compose cluster, with random passwords made once:
#
#   docker/make-sasl.sh DIR
#
# writes into DIR
#   kafka_server_jaas.conf   the brokers' JAAS file (KafkaServer section): the users admin,
#                            broker (brokers and controller among themselves) and aclstore
#                            (each sidecar reading the ACL log); the broker logs in as broker;
#   aclstore-kafka.properties  the sidecars' Kafka client properties (aclstore serve --log-config)
#   admin-kafka.properties     the admin's, for kafka-acls.sh / aclstore acls --bootstrap-server
#                              (and the brokers' healthcheck).
# Files already in DIR are kept, so running it again changes nothing.  Every file is readable by
# its owner only: the broker image's user and the sidecar image's user share uid 1000.
set -eu

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
if ! command -v openssl >/dev/null 2>&1; then
    echo "error: the openssl command is needed; install it (e.g. apt-get install openssl)" >&2
    exit 2
fi
dir=$1
mkdir -p "$dir"
cd "$dir"
umask 077

if [ -s kafka_server_jaas.conf ] && [ -s aclstore-kafka.properties ] && [ -s admin-kafka.properties ]; then
    exit 0
fi
admin=$(openssl rand -hex 24)
broker=$(openssl rand -hex 24)
aclstore=$(openssl rand -hex 24)
module=org.apache.kafka.common.security.plain.PlainLoginModule

cat > kafka_server_jaas.conf <<EOF
KafkaServer {
    $module required
    username="broker" password="$broker"
    user_broker="$broker"
    user_aclstore="$aclstore"
    user_admin="$admin";
};
EOF

# client USER PASSWORD: Java client properties for a SASL_PLAINTEXT listener
client() {
    printf '%s\n' "security.protocol=SASL_PLAINTEXT" "sasl.mechanism=PLAIN" \
        "sasl.jaas.config=$module required username=\"$1\" password=\"$2\";"
}
client aclstore "$aclstore" > aclstore-kafka.properties
client admin "$admin" > admin-kafka.properties
echo "made the SASL users admin, broker and aclstore in $dir"
