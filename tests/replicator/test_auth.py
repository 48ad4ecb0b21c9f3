"""Who may call: credentials for admin endpoints, networks for decisions, mutual TLS mapping.

Certificates are made by the ``openssl`` command for each run; the principal a certificate
must map to is worked out by hand from its subject and Kafka's documented mapping rules.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from sidecar_support import Raw, action_json, admin_client, binding, create_acls, start_node, wire

import cli
from replicator.client import ClientConfig, StoreClient, StoreClientError
from replicator.properties import read_properties, write_properties
from replicator.server.callers import CallerPolicy
from replicator.server.node import Node
from replicator.server.tls import TlsSettings, peer_distinguished_name
from replicator.server.tokens import CredentialStore
from store.acl import AclOperation, ResourceType
from store.errors import InvalidConfigError

pytestmark = pytest.mark.unit

SSL_RULES = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT"


def client_for(node: Node, properties: Path) -> StoreClient:
    return StoreClient(ClientConfig.resolve(store=node.url, command_config=properties))


def test_admin_calls_without_a_usable_credential_are_401(node: Node) -> None:
    raw = Raw(node)
    try:
        body = json.dumps({"bindings": [wire(binding(ResourceType.TOPIC, "t", "User:x", AclOperation.READ))]})
        for headers, message in [
            ({}, "needs an authenticated caller"),
            ({"Authorization": "Bearer aclstore_not-a-token"}, "not known to this node"),
            ({"Authorization": "Basic YWRtaW46YWRtaW4="}, "must be 'Bearer <token>'"),
        ]:
            status, answer, response = raw.call("POST", "/v1/acls", body, headers)
            assert status == 401, answer
            assert message in answer["message"]
            assert response.getheader("WWW-Authenticate") == 'Bearer realm="aclstore"'
        # Nothing was written by the refused calls.
        with admin_client(node) as admin:
            assert admin.describe_acls().bindings == []
    finally:
        raw.close()


def test_an_authenticated_caller_needs_kafkas_cluster_permissions(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alice_file = tmp_path / "alice.properties"
    assert node.info is not None
    code = cli.main(
        [
            "credentials",
            "create",
            "--data-dir",
            str(node.info.data_dir),
            "--principal",
            "User:alice",
            "--output",
            str(alice_file),
        ]
    )
    assert code == 0, capsys.readouterr().err
    new = [binding(ResourceType.TOPIC, "t", "User:x", AclOperation.READ)]
    with client_for(node, alice_file) as alice:
        with pytest.raises(StoreClientError) as refused:
            alice.create_acls(new)
        assert refused.value.status == 403
        assert refused.value.error == "ClusterAuthorizationError"
        assert "User:alice" in refused.value.message and "ALTER the CLUSTER" in refused.value.message
        with pytest.raises(StoreClientError) as refused:
            alice.describe_acls()
        assert (refused.value.status, refused.value.error) == (403, "ClusterAuthorizationError")
        with pytest.raises(StoreClientError) as refused:
            alice.alter_configs({"super.users": "User:alice"})
        assert refused.value.status == 403
        # The admin (a super user) grants ALTER on the cluster, as with kafka-acls.sh --cluster.
        with admin_client(node) as admin:
            grant = binding(ResourceType.CLUSTER, "kafka-cluster", "User:alice", AclOperation.ALTER)
            create_acls(admin, [grant])
        created = alice.create_acls(new)
        assert created.results[0].error is None
        # ALTER implies DESCRIBE (Kafka's implication rule), so she may describe now.
        assert len(alice.describe_acls().bindings) == 2


def test_decisions_answer_only_the_configured_networks_or_authenticated_callers(tmp_path: Path) -> None:
    node = start_node(tmp_path / "n", authorize_networks=("127.0.0.2/32",))
    raw = Raw(node)
    try:
        request = {
            "principal": "User:b",
            "host": "h",
            "actions": [action_json(AclOperation.READ, ResourceType.TOPIC, "t")],
        }
        status, answer = raw.post("/v1/authorize", request)
        assert (status, answer["error"]) == (403, "CallerNotAllowedError")
        assert "127.0.0.1 is neither" in answer["message"]
        with admin_client(node) as admin:
            assert admin.call("POST", "/v1/authorize", request)["results"] == ["DENIED"]
    finally:
        raw.close()
        node.stop()


def test_credentials_are_kept_hashed_and_admin_properties_is_private(node: Node) -> None:
    assert node.info is not None
    props = read_properties(node.info.credential.properties_path)
    token = props["aclstore.bearer.token"]
    assert props["aclstore.principal"] == "User:admin" and props["aclstore.url"] == node.url
    assert node.info.credential.properties_path.stat().st_mode & 0o777 == 0o600
    stored = (node.info.data_dir / "credentials.json").read_text()
    assert token not in stored
    assert CredentialStore(node.info.data_dir / "credentials.json").principal_for(token) == "User:admin"


def test_properties_files_read_as_java_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "p.properties"
    path.write_text(
        "# comment\n! also a comment\n  a.b = 1\nc:2\nd 3\nurl=http://h:1/x\\\n  y\nescaped=a\\\\b\n"
    )
    assert read_properties(path) == {
        "a.b": "1",
        "c": "2",
        "d": "3",
        "url": "http://h:1/xy",
        "escaped": "a\\b",
    }
    write_properties(tmp_path / "w.properties", {"k": "v\\w", "u": "http://h:9/"}, "hello")
    assert read_properties(tmp_path / "w.properties") == {"k": "v\\w", "u": "http://h:9/"}


def test_a_command_config_with_unknown_keys_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("sasl.mechanism=PLAIN\n")
    with pytest.raises(InvalidConfigError, match="unknown key"):
        ClientConfig.resolve(command_config=path, environ={})


def test_the_store_url_precedence(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("aclstore.url=http://from-file:1\n")
    assert ClientConfig.resolve(command_config=path, environ={}).url == "http://from-file:1"
    env = {"ACLSTORE_URL": "http://from-env:2"}
    assert ClientConfig.resolve(command_config=path, environ=env).url == "http://from-env:2"
    assert (
        ClientConfig.resolve(store="http://flag:3", command_config=path, environ=env).url == "http://flag:3"
    )
    assert ClientConfig.resolve(environ={}).url == "http://127.0.0.1:9096"


# --- mutual TLS ------------------------------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    d = tmp_path_factory.mktemp("certs")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        cwd=d,
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subject in [
        ("server", "/CN=localhost"),
        ("alice", "/C=US/O=Example/OU=ServiceUsers/CN=alice"),
        ("mallory", "/C=US/O=Example/OU=Other/CN=mallory"),
    ]:
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
        extra = ["-extfile", "san.ext"] if name == "server" else []
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.pem",
            "-days",
            "2",
            *extra,
            cwd=d,
        )
    return d


def _tls_properties(path: Path, certs: Path, url: str, who: str | None) -> Path:
    values = {"aclstore.url": url, "security.protocol": "SSL", "ssl.ca.location": str(certs / "ca.pem")}
    if who is not None:
        values |= {
            "ssl.certificate.location": str(certs / f"{who}.pem"),
            "ssl.key.location": str(certs / f"{who}.key"),
        }
    write_properties(path, values, f"{who} over TLS")
    return path


def test_mutual_tls_maps_the_certificate_subject_with_kafkas_rules(certs: Path, tmp_path: Path) -> None:
    node = start_node(
        tmp_path / "n",
        tls=TlsSettings(
            certificate=certs / "server.pem", key=certs / "server.key", client_ca=certs / "ca.pem"
        ),
        ssl_principal_mapping_rules=SSL_RULES,
        super_users=("User:alice",),
    )
    try:
        assert node.url.startswith("https://127.0.0.1:")
        alice = _tls_properties(tmp_path / "alice.properties", certs, node.url, "alice")
        with StoreClient(ClientConfig.resolve(command_config=alice, environ={})) as client:
            grant = binding(ResourceType.TOPIC, "t", "User:bob", AclOperation.READ)
            offset = create_acls(client, [grant])
        mallory = _tls_properties(tmp_path / "mallory.properties", certs, node.url, "mallory")
        with (
            StoreClient(ClientConfig.resolve(command_config=mallory, environ={})) as client,
            pytest.raises(StoreClientError) as refused,
        ):
            client.describe_acls()
        # Hand-worked: no rule matches OU=Other, so DEFAULT keeps the whole RFC 2253 name.
        assert refused.value.status == 403
        assert "User:CN=mallory,OU=Other,O=Example,C=US" in refused.value.message
        anonymous = _tls_properties(tmp_path / "anon.properties", certs, node.url, None)
        with StoreClient(ClientConfig.resolve(command_config=anonymous, environ={})) as client:
            with pytest.raises(StoreClientError) as refused:
                client.describe_acls()
            assert refused.value.status == 401
            # Decisions from loopback need no certificate.
            answer = client.call(
                "POST",
                "/v1/authorize",
                {
                    "principal": "User:bob",
                    "host": "h",
                    "actions": [action_json(AclOperation.READ, ResourceType.TOPIC, "t")],
                    "minOffset": offset,
                },
            )
            assert answer["results"] == ["ALLOWED"]
        # And the CLI with a TLS command config, as with kafka-acls.sh --command-config.
        assert cli.main(["acls", "--command-config", str(alice), "--list", "--topic", "t"]) == 0
    finally:
        node.stop()


def test_the_peer_subject_is_printed_as_x500_get_name() -> None:
    subject = ((("countryName", "US"),), (("organizationName", "Ex, Inc"),), (("commonName", "a+b"),))
    assert peer_distinguished_name(subject) == "CN=a\\+b,O=Ex\\, Inc,C=US"
    policy = CallerPolicy(
        credentials=CredentialStore(Path("/nonexistent/c.json")), ssl_principal_mapping_rules=SSL_RULES
    )
    caller = policy.authenticate(
        address="127.0.0.1",
        peer_subject=((("organizationalUnitName", "ServiceUsers"),), (("commonName", "svc"),)),
        authorization=None,
    )
    # RFC 2253 order puts the last RDN first: "CN=svc,OU=ServiceUsers" matches the first rule.
    assert (caller.principal, caller.method) == ("User:svc", "mtls")


def test_tls_files_that_do_not_load_are_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "bad.pem").write_text("not a certificate")
    with pytest.raises(InvalidConfigError, match="cannot load the TLS files"):
        TlsSettings(certificate=tmp_path / "bad.pem", key=tmp_path / "bad.pem").server_context()
