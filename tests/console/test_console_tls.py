"""The console on a node serving TLS with client certificates: a login by the browser's
certificate, a ``Secure`` cookie, and a certificate session that needs that certificate on every
connection."""

from __future__ import annotations

import http.client
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from console_support import listing_loaded, log_in, rendered_rows, screenshot
from playwright.sync_api import Browser, expect
from sidecar_support import start_node

from replicator.server.node import Node
from replicator.server.tls import TlsSettings

ROOT = Path(__file__).resolve().parents[2]
# make-certs.sh's client certificate is CN=admin: mapped to User:admin, the node's admin
RULES = "RULE:^CN=([^,]+)$/$1/,DEFAULT"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is needed to make the test certificates")
    out = tmp_path_factory.mktemp("certs")
    subprocess.run(["sh", str(ROOT / "docker" / "make-certs.sh"), str(out)], check=True,
                   capture_output=True)  # fmt: skip
    return out


@pytest.fixture
def tls_node(certs: Path, tmp_path: Path) -> Iterator[Node]:
    n = start_node(
        tmp_path / "node",
        tls=TlsSettings(certificate=certs / "server.pem", key=certs / "server.key",
                        client_ca=certs / "ca.pem"),
        ssl_principal_mapping_rules=RULES,
    )  # fmt: skip
    try:
        yield n
    finally:
        n.stop()


def _https(node: Node, certs: Path, path: str, cookie: str) -> int:
    """GET ``path`` with ``cookie`` over TLS, presenting no client certificate."""
    assert node.server is not None
    context = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    connection = http.client.HTTPSConnection("127.0.0.1", node.server.port, context=context,
                                             timeout=30)  # fmt: skip
    try:
        connection.request("GET", path, headers={"Cookie": cookie})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_log_in_with_the_client_certificate(
    tls_node: Node, browser: Browser, certs: Path, tmp_path: Path
) -> None:
    assert tls_node.url.startswith("https://")
    context = browser.new_context(
        ignore_https_errors=True,  # the test CA is not the browser's
        client_certificates=[{"origin": tls_node.url, "certPath": str(certs / "admin.pem"),
                              "keyPath": str(certs / "admin.key")}],
    )  # fmt: skip
    try:
        page = context.new_page()
        page.goto(f"{tls_node.url}/ui/acls")
        assert page.url == f"{tls_node.url}/ui/login"
        page.click("#certificate-login button[type=submit]")
        page.wait_for_url(f"{tls_node.url}/ui/acls")
        listing_loaded(page)
        # answered: User:admin (the certificate's CN) is a super user; any other caller would
        # read the admin API's ClusterAuthorizationError here
        assert "No ACLs match" in (page.locator("#listing-status").text_content() or "")
        (cookie,) = context.cookies()
        assert (cookie["secure"], cookie["httpOnly"], cookie["sameSite"]) == (True, True, "Strict")
        screenshot(page, tmp_path, "acls-by-certificate")
        # the session is the certificate's: the cookie without it opens nothing
        sent = f"{cookie['name']}={cookie['value']}"
        assert _https(tls_node, certs, "/ui/acls.js", sent) == 401
        assert _https(tls_node, certs, "/ui/acls", sent) == 303
    finally:
        context.close()


def test_a_token_over_tls_and_no_certificate_to_log_in_with(
    tls_node: Node, browser: Browser, tmp_path: Path
) -> None:
    context = browser.new_context(ignore_https_errors=True)
    try:
        page = context.new_page()
        page.goto(f"{tls_node.url}/ui/login")
        page.click("#certificate-login button[type=submit]")
        expect(page.locator(".error")).to_contain_text("presented no client certificate")
        assert context.cookies() == []
        screenshot(page, tmp_path, "login-without-certificate")
        log_in(page, tls_node)
        listing_loaded(page)
        assert rendered_rows(page) == []
        (cookie,) = context.cookies()
        assert cookie["secure"] is True
    finally:
        context.close()

