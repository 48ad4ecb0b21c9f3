#!/bin/sh
# Certificates for a node's HTTPS listener, made with the openssl command:
#
#   docker/make-certs.sh DIR [NAME...]
#
# writes into DIR a certificate authority (ca.pem, ca.key), a server certificate (server.pem,
# server.key) valid for localhost, 127.0.0.1, ::1 and each NAME (host names or IP addresses
# clients use to reach the node), and a client certificate for the admin (admin.pem,
# admin.key, subject CN=admin).  Files already in DIR are kept, so running it again (as the
# compose one-shot service does on every `up`) changes nothing.  Keys are readable by their
# owner only.  For a real deployment, use certificates from your own CA instead.
set -eu

if [ "$#" -lt 1 ]; then
    echo "usage: $0 DIR [NAME...]   (NAME: a host name or IP address of the node)" >&2
    exit 2
fi
if ! command -v openssl >/dev/null 2>&1; then
    echo "error: the openssl command is needed; install it (e.g. apt-get install openssl)" >&2
    exit 2
fi
dir=$1
shift
mkdir -p "$dir"
cd "$dir"
umask 077
days=825

san="DNS:localhost,IP:127.0.0.1,IP:::1"
for name in "$@"; do
    case "$name" in
        *[!0-9.]*) case "$name" in *:*) san="$san,IP:$name" ;; *) san="$san,DNS:$name" ;; esac ;;
        *) san="$san,IP:$name" ;;
    esac
done

key() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

if [ ! -s ca.pem ] || [ ! -s ca.key ]; then
    key ca.key
    openssl req -x509 -new -key ca.key -out ca.pem -days "$days" -subj "/CN=aclstore-ca"
    echo "made the CA: $dir/ca.pem"
fi

# issue NAME SUBJECT EXTENSIONS: a key and a certificate signed by the CA
issue() {
    if [ -s "$1.pem" ] && [ -s "$1.key" ]; then
        return
    fi
    key "$1.key"
    openssl req -new -key "$1.key" -out "$1.csr" -subj "$2"
    printf '%s\n' "$3" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out "$1.pem" -days "$days" -extfile "$1.ext" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
    echo "made $dir/$1.pem ($2)"
}

issue server "/CN=aclstore" "subjectAltName=$san
extendedKeyUsage=serverAuth"
issue admin "/CN=admin" "extendedKeyUsage=clientAuth"
# The CA certificate is public: every client needs it to check the server.
chmod 644 ca.pem server.pem admin.pem
