"""Fail closed, counted where a broker looks: the plugin loaded as Kafka loads an authorizer.

A Java harness (``tests/java/PluginMetricsHarness.java``) configures the plugin and wraps it
with Kafka's own ``Plugin.wrapInstance`` and ``Metrics``, exactly as a broker does, with no
sidecar listening at its URL.  The expected values are worked out by hand: three actions of
alice denied, one by-resource-type check denied, admin (a super user) allowed without a call.
"""

from __future__ import annotations

import functools
import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.java import SHORT_RUN_JVM_OPTIONS, compile_harness, run_harness
from devtools.kafka_process import free_port
from devtools.maven import kafka_classpath
from devtools.plugin import plugin_jar
from replicator.server.node import Node, NodeSettings
from replicator.server.tls import TlsSettings

pytestmark = pytest.mark.slow  # each test runs a JVM (the broker's plugin loader)

HARNESS = Path(__file__).resolve().parents[1] / "java" / "PluginMetricsHarness.java"


def _run(*args: str) -> str:
    classpath = [*kafka_classpath(), plugin_jar()]
    build = compile_harness(HARNESS, classpath)
    return run_harness(build, "PluginMetricsHarness", classpath, args=args, timeout=120,
                       jvm_options=SHORT_RUN_JVM_OPTIONS)


def test_without_a_sidecar_everyone_but_super_users_is_denied_and_counted() -> None:
    out = json.loads(_run(f"http://127.0.0.1:{free_port()}"))
    assert out["alice"] == ["DENIED", "DENIED", "DENIED"]
    assert out["admin"] == ["ALLOWED", "ALLOWED"]
    assert out["byResourceType"] == "DENIED"
    values = {m["name"]: m["value"] for m in out["metrics"]}
    assert values["fail-closed-denials-total"] == 4  # 3 actions + 1 by-resource-type check
    # One call went unanswered; the by-resource-type check, right after it, failed closed
    # without another call (aclstore.ready.poll.ms); admin's actions never left the plugin.
    assert values["sidecar-failures-total"] == 1
    assert values["sidecar-calls-total"] == 1
    assert values["sidecar-call-time-ns-total"] > 0  # the refused call took some time
    assert values["sidecar-available"] == 0
    # The cache is on (the default) but knows no offset: alice's three actions are misses;
    # admin's never reach it, and by-resource-type checks are not cached.
    assert (values["decision-cache-misses-total"], values["decision-cache-hits-total"]) == (3, 0)
    for metric in out["metrics"]:  # the broker's tags for its authorizer plugin (KIP-877)
        assert metric["tags"] == {
            "config": "authorizer.class.name", "class": "AclstoreAuthorizer", "role": "broker"
        }


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("aclstore.urll", "http://127.0.0.1:9096", "unknown aclstore authorizer setting"),
        ("aclstore.url", "ftp://127.0.0.1", "use an http:// or https:// URL"),
        ("aclstore.request.timeout.ms", "0", "must be above 0 ms"),
        ("aclstore.cache.max.staleness.ms", "soon", "not a whole number of milliseconds"),
        ("aclstore.cache.lease.ms", "10001", "at most 10000 ms"),
        ("aclstore.cache.lease.ms", "-1", "must be 0 ms or more"),
        ("aclstore.cache.entry.max.age.ms", "3600001", "at most 3600000 ms"),
        ("aclstore.cache.entry.max.age.ms", "0", "must be above 0 ms"),
        ("super.users", "admin", "each super user is Type:name"),
        # A file not there yet is read when first needed (a cold start); one that is there
        # but cannot be read, such as a directory, is refused.
        ("aclstore.command.config", "/", "cannot read it"),
        ("aclstore.ssl.ca.location", "/nonexistent/ca.pem", "is for an https:// sidecar"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_at_configure(
    key: str, value: str, expected: str
) -> None:
    message = _run("reject", key, value)
    assert expected in message and key in message, message


def test_a_hung_sidecar_holds_one_call_for_the_timeout_and_the_next_ones_fail_at_once() -> None:
    with socket.socket() as hung:  # accepts connections (the kernel's backlog), never answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        calls = json.loads(_run("hung", f"http://127.0.0.1:{hung.getsockname()[1]}"))
    assert [c["result"] for c in calls] == ["DENIED", "DENIED", "DENIED"]
    first, *rest = (c["ms"] for c in calls)
    assert 450 <= first <= 1500  # aclstore.request.timeout.ms=500
    assert all(ms < 100 for ms in rest), calls  # within aclstore.ready.poll.ms: no new call


@pytest.fixture
def tls_node(tmp_path: Path) -> Iterator[tuple[Node, Path]]:
    """A node serving HTTPS with a self-signed certificate for 127.0.0.1, and a Java trust
    store holding that certificate.  alice is a super user of the node, not of the plugin."""
    for tool in ("openssl", "keytool"):
        if shutil.which(tool) is None:
            pytest.skip(f"the {tool} command is needed for the TLS test")
    run = functools.partial(subprocess.run, cwd=tmp_path, check=True, capture_output=True)
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", "server.key", "-out", "server.pem", "-days", "2",
         "-subj", "/CN=sidecar", "-addext", "subjectAltName=IP:127.0.0.1"])  # fmt: skip
    run(["keytool", "-importcert", "-noprompt", "-alias", "sidecar", "-file", "server.pem",
         "-keystore", "trust.p12", "-storetype", "PKCS12", "-storepass", "changeit"])  # fmt: skip
    settings = NodeSettings(
        data_dir=tmp_path / "node", listen="127.0.0.1:0", super_users=("User:alice",),
        tls=TlsSettings(certificate=tmp_path / "server.pem", key=tmp_path / "server.key"),
    )  # fmt: skip
    node = Node(settings)
    node.start()
    try:
        yield node, tmp_path / "trust.p12"
    finally:
        node.stop()


def test_over_https_the_sidecar_is_asked_only_when_its_certificate_is_trusted(
    tls_node: tuple[Node, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    node, trust_store = tls_node
    assert node.url.startswith("https://127.0.0.1:")
    untrusted = json.loads(_run(node.url))  # the JVM's default trust store: not this certificate
    assert untrusted["alice"] == ["DENIED", "DENIED", "DENIED"]
    assert {m["name"]: m["value"] for m in untrusted["metrics"]}["sidecar-failures-total"] == 1
    monkeypatch.setenv(
        "JAVA_TOOL_OPTIONS",
        f"-Djavax.net.ssl.trustStore={trust_store} -Djavax.net.ssl.trustStorePassword=changeit",
    )
    trusted = json.loads(_run(node.url))
    assert trusted["alice"] == ["ALLOWED", "ALLOWED", "ALLOWED"]  # the node's super user
    assert trusted["byResourceType"] == "ALLOWED"
    values = {m["name"]: m["value"] for m in trusted["metrics"]}
    assert (values["sidecar-failures-total"], values["sidecar-calls-total"]) == (0, 2)
    assert values["sidecar-call-time-ns-total"] > 0
    monkeypatch.delenv("JAVA_TOOL_OPTIONS")
    pem = json.loads(_run(node.url, f"aclstore.ssl.ca.location={trust_store.with_name('server.pem')}"))
    assert pem["alice"] == ["ALLOWED", "ALLOWED", "ALLOWED"]  # trusting the PEM file alone
