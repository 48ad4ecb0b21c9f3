"""Java ``.properties`` files, as the client reads and the server writes them.

``aclstore serve`` writes ``admin.properties`` and ``aclstore credentials create`` writes a
credential file; ``--command-config`` reads them back, as ``kafka-acls.sh --command-config``
does (``java.util.Properties``, the subset those files use).  The file format and its keys are
shared by the client and the server, so they live here, owned by neither.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from store.errors import InvalidConfigError

# Keys of a --command-config file (librdkafka's names for the TLS files).
URL_KEY: Final = "aclstore.url"
PRINCIPAL_KEY: Final = "aclstore.principal"
TOKEN_KEY: Final = "aclstore.bearer.token"
SECURITY_PROTOCOL_KEY: Final = "security.protocol"
CA_KEY: Final = "ssl.ca.location"
CERT_KEY: Final = "ssl.certificate.location"
KEY_KEY: Final = "ssl.key.location"
KEY_PASSWORD_KEY: Final = "ssl.key.password"
COMMAND_CONFIG_KEYS: Final = frozenset(
    {URL_KEY, PRINCIPAL_KEY, TOKEN_KEY, SECURITY_PROTOCOL_KEY, CA_KEY, CERT_KEY, KEY_KEY,
     KEY_PASSWORD_KEY}
)  # fmt: skip


def read_properties(path: Path | str) -> dict[str, str]:
    """Read ``key=value`` / ``key: value`` lines; ``#`` and ``!`` start comments."""
    values: dict[str, str] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidConfigError(f"cannot read properties file {path}: {exc.strerror}") from exc
    pending = ""
    for raw in lines:
        line = pending + raw.lstrip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        key, value = _split_property(line)
        values[key] = value
    return values


def _split_property(line: str) -> tuple[str, str]:
    for i, char in enumerate(line):
        if char in "=:" or char.isspace():
            key, rest = line[:i], line[i + 1 :].lstrip()
            if char.isspace() and rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip()
            return _unescape(key), _unescape(rest)
    return _unescape(line), ""


def _unescape(text: str) -> str:
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            nxt = next(chars, "")
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        else:
            out.append(char)
    return "".join(out)


def write_properties(path: Path, values: Mapping[str, str], comment: str) -> None:
    """Write a properties file readable by its owner only (it may hold a secret)."""
    lines = [f"# {line}" for line in comment.splitlines()]
    for key, value in values.items():
        escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"{key}={escaped}")
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
