"""The HTTP client of the sidecar API: one keep-alive connection, JSON in and out.

Used by the ``aclstore`` CLI (and handy in scripts); request bodies and answers have the
shapes of :mod:`replicator.contract`.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
from typing import Any
from urllib.parse import urlsplit

from replicator.client.config import ClientConfig
from replicator.contract.endpoints import endpoint
from store.errors import StoreError


class StoreClientError(StoreError):
    """The store answered with an error, or could not be reached."""

    def __init__(self, message: str, *, status: int = 0, error: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.error = error

    @property
    def unreachable(self) -> bool:
        return self.status == 0


class StoreClient:
    """One keep-alive connection to a node; JSON in and out; errors as StoreClientError."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        split = urlsplit(config.url)
        self._https = split.scheme == "https"
        self._host = split.hostname or "127.0.0.1"
        self._port = split.port or (443 if self._https else 80)
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self._https:
                context = ssl.create_default_context(
                    cafile=str(self.config.ca_file) if self.config.ca_file else None
                )
                if self.config.cert_file is not None:
                    context.load_cert_chain(
                        str(self.config.cert_file),
                        str(self.config.key_file) if self.config.key_file else None,
                        self.config.key_password,
                    )
                self._conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self.config.timeout_s, context=context
                )
            else:
                self._conn = http.client.HTTPConnection(
                    self._host, self._port, timeout=self.config.timeout_s
                )
        return self._conn

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """Send one request; return the decoded JSON answer of a 2xx, raise otherwise."""
        payload = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                data = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()  # a kept-alive connection the server closed: retry once
                if attempt == 2:
                    raise StoreClientError(
                        f"the store at {self.config.url} closed the connection"
                    ) from None
            except ssl.SSLError as exc:
                self.close()
                raise StoreClientError(
                    f"TLS with {self.config.url} failed: {exc.reason or exc}"
                ) from exc
            except OSError as exc:
                self.close()
                reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
                raise StoreClientError(
                    f"cannot reach the store at {self.config.url}: {reason} "
                    "(is `aclstore serve` running there? set --store or ACLSTORE_URL)"
                ) from exc
        content_type = response.getheader("Content-Type", "")
        decoded: Any = data.decode("utf-8", errors="replace")
        if content_type.startswith("application/json"):
            with contextlib.suppress(ValueError):
                decoded = json.loads(decoded)
        if 200 <= response.status < 300:
            return decoded
        if isinstance(decoded, dict) and "message" in decoded:
            message = str(decoded["message"])
            error = str(decoded.get("error", ""))
        else:
            message, error = f"HTTP {response.status} {response.reason}", ""
        raise StoreClientError(message, status=response.status, error=error)

    def send(self, name: str, body: Any = None) -> Any:
        """Call the contract's endpoint ``name`` (``describe_acls``: POST /v1/acls/describe)."""
        target = endpoint(name)
        return self.call(target.method, target.path, body)

    def text(self, path: str) -> str:
        """GET a non-JSON resource (``/metrics``)."""
        answer = self.call("GET", path)
        return answer if isinstance(answer, str) else json.dumps(answer)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> StoreClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
