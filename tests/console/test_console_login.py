"""The console's login: a session cookie for a token the node accepts, nothing without one, and
the session able to do exactly what the token can through the admin API."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest
from console_support import admin_token, listing_loaded, log_in, screenshot
from playwright.sync_api import Page, expect

from replicator.client import ClientConfig, StoreClient
from replicator.client.http import StoreClientError
from replicator.server.node import Node
from replicator.server.tokens import revoke_credentials, write_credential


def _raw(node: Node, method: str, path: str, body: bytes = b"",
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    assert node.server is not None
    connection = http.client.HTTPConnection("127.0.0.1", node.server.port, timeout=30)
    try:
        connection.request(method, path, body=body or None, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_nothing_is_served_without_a_session(node: Node) -> None:
    # the page: sent to the login page, with none of its own markup
    status, headers, body = _raw(node, "GET", "/ui/acls")
    assert (status, headers["Location"], body) == (303, "/ui/login", b"")
    # an asset of the console
    status, _, body = _raw(node, "GET", "/ui/acls.js")
    assert status == 401 and b"loadListing" not in body
    # the console's calls, and with a cookie the node never gave
    page_call = json.dumps({"limit": 5}).encode()
    call_headers = {"X-Aclstore-Console": "1", "Content-Type": "application/json"}
    for cookie in (None, "aclstore_console=forged"):
        sent = {**call_headers, **({"Cookie": cookie} if cookie else {})}
        status, _, body = _raw(node, "POST", "/ui/api/acls/page", page_call, sent)
        assert status == 401 and b"rows" not in body, body
        dry_run = json.dumps({"creates": [{"resourceType": "TOPIC", "resourceName": "x",
                                           "principal": "User:x", "operation": "READ"}]})
        status, _, body = _raw(node, "POST", "/ui/api/v1/acls/dry-run", dry_run.encode(), sent)
        assert status == 401, body
    # what is served: the login page and its style sheet
    status, headers, body = _raw(node, "GET", "/ui/login")
    assert status == 200 and b'action="/ui/login"' in body
    # only the node's own assets: no CDN, no inline script
    assert "default-src 'none'; script-src 'self'; style-src 'self'" in headers["Content-Security-Policy"]
    assert _raw(node, "GET", "/ui/login.css")[0] == 200


def test_log_in_with_the_admin_token(node: Node, page: Page, tmp_path: Path) -> None:
    page.goto(f"{node.url}/ui/acls")
    assert page.url == f"{node.url}/ui/login"
    screenshot(page, tmp_path, "login")

    page.fill("#token", "not-a-token")
    page.click("#token-login button[type=submit]")
    expect(page.locator(".error")).to_contain_text("token")
    assert page.url == f"{node.url}/ui/login"
    assert page.context.cookies() == []
    screenshot(page, tmp_path, "login-refused")

    log_in(page, node)
    listing_loaded(page)
    (cookie,) = page.context.cookies()
    assert cookie["name"] == "aclstore_console"
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["secure"]) == (True, "Strict", False)
    assert cookie["path"] == "/ui"
    assert page.evaluate("document.cookie") == ""  # HttpOnly: the page's script cannot read it
    assert admin_token(node) not in cookie["value"]
    screenshot(page, tmp_path, "acls-after-login")

    # a console call needs the console's header as well as the cookie
    status, _, _ = _raw(node, "POST", "/ui/api/acls/page", b"{}",
                        {"Cookie": f"aclstore_console={cookie['value']}"})  # fmt: skip
    assert status == 400

    page.click("#logout")
    page.wait_for_url(f"{node.url}/ui/login")
    page.goto(f"{node.url}/ui/acls")
    assert page.url == f"{node.url}/ui/login"
    # the old cookie, sent by hand, opens nothing either
    status, _, _ = _raw(node, "GET", "/ui/acls.js", headers={"Cookie": f"aclstore_console={cookie['value']}"})
    assert status == 401


def test_a_session_can_do_what_its_token_can(node: Node, page: Page, tmp_path: Path) -> None:
    """A principal with no ACLs logs in (the token is good), and its listing is refused with
    the admin API's own refusal of that token; a revoked token ends the session."""
    assert node.info is not None
    properties = tmp_path / "nobody.properties"
    write_credential(node.data_dir, "User:nobody", properties, node.url)
    token = str(dict(
        line.split("=", 1) for line in properties.read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )["aclstore.bearer.token"])  # fmt: skip

    with StoreClient(ClientConfig.resolve(command_config=properties)) as client, \
            pytest.raises(StoreClientError) as refused:  # fmt: skip
        client.describe_acls()
    assert refused.value.status == 403

    log_in(page, node, token)
    listing_loaded(page)
    status = page.locator("#listing-status")
    expect(status).to_have_class("error")
    expect(status).to_contain_text("ClusterAuthorizationError")
    assert refused.value.message.split(": ", 1)[-1] in (status.text_content() or "")
    assert page.locator("#acl-rows tr").count() == 0
    screenshot(page, tmp_path, "acls-refused-for-nobody")

    revoke_credentials(node.data_dir, token=token, principal=None)
    page.reload()
    assert page.url == f"{node.url}/ui/login"


def test_a_login_posted_from_another_site_is_refused(node: Node) -> None:
    """A page elsewhere cannot log a visitor into a session of its choosing (login CSRF)."""
    assert node.server is not None
    form = f"token={admin_token(node)}".encode()
    own = f"127.0.0.1:{node.server.port}"
    sent = {"Content-Type": "application/x-www-form-urlencoded"}
    status, headers, body = _raw(node, "POST", "/ui/login", form,
                                 {**sent, "Origin": "http://elsewhere.example"})  # fmt: skip
    assert status == 401 and "Set-Cookie" not in headers
    assert b"elsewhere.example" in body
    status, headers, _ = _raw(node, "POST", "/ui/login", form, {**sent, "Origin": f"http://{own}"})
    assert status == 303 and headers["Set-Cookie"].startswith("aclstore_console=")
