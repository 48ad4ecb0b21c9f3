"""Where the client connects and how it authenticates: ``--store``, ``ACLSTORE_URL`` and
``--command-config`` files.

Precedence: ``--store URL``, the ``ACLSTORE_URL`` environment variable, the ``aclstore.url`` of
a ``--command-config`` file, and the default ``http://127.0.0.1:9096``.  A command-config file
(``admin.properties``, written by ``aclstore serve``) holds a bearer token or the TLS files of a
client certificate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from replicator.properties import (
    CA_KEY,
    CERT_KEY,
    COMMAND_CONFIG_KEYS,
    KEY_KEY,
    KEY_PASSWORD_KEY,
    SECURITY_PROTOCOL_KEY,
    TOKEN_KEY,
    URL_KEY,
    read_properties,
)
from store.errors import InvalidConfigError

DEFAULT_URL: Final = "http://127.0.0.1:9096"
URL_ENV: Final = "ACLSTORE_URL"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    url: str = DEFAULT_URL
    token: str | None = None
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    key_password: str | None = None
    timeout_s: float = 30.0

    @classmethod
    def resolve(
        cls,
        *,
        store: str | None = None,
        command_config: Path | str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ClientConfig:
        """Apply the precedence: ``--store``, ``ACLSTORE_URL``, the file's URL, the default."""
        env = os.environ if environ is None else environ
        props: dict[str, str] = {}
        if command_config is not None:
            props = read_properties(command_config)
            unknown = sorted(set(props) - COMMAND_CONFIG_KEYS)
            if unknown:
                raise InvalidConfigError(
                    f"{command_config}: unknown key(s) {', '.join(unknown)}; aclstore reads "
                    f"{', '.join(sorted(COMMAND_CONFIG_KEYS))}"
                )
        url = store or env.get(URL_ENV) or props.get(URL_KEY) or DEFAULT_URL
        split = urlsplit(url)
        if split.scheme not in ("http", "https") or not split.hostname:
            raise InvalidConfigError(
                f"store URL {url!r} is not http(s)://host:port (e.g. {DEFAULT_URL})"
            )
        protocol = props.get(SECURITY_PROTOCOL_KEY, "").upper()
        if protocol not in ("", "PLAINTEXT", "SSL"):
            raise InvalidConfigError(f"{SECURITY_PROTOCOL_KEY}={protocol} is not PLAINTEXT or SSL")

        def path(key: str) -> Path | None:
            return Path(props[key]) if props.get(key) else None

        return cls(
            url=url.rstrip("/"),
            token=props.get(TOKEN_KEY) or None,
            ca_file=path(CA_KEY),
            cert_file=path(CERT_KEY),
            key_file=path(KEY_KEY),
            key_password=props.get(KEY_PASSWORD_KEY) or None,
        )
