"""Import directions of the codebase, read from the source with ``ast`` (nothing is imported).

* the product (``store``, ``replicator``, ``jobs``, ``schemas``) imports no dev tooling
  (``devtools``), no tests and no benchmarks;
* ``store`` (the model, the rules, the log, the fold) imports neither the replicas nor the jobs;
* the API contract imports neither the server, the client nor the CLI, nor an HTTP library;
* the server imports neither the client nor the CLI; the client and the shared properties
  reader import no server; in the CLI only ``serve`` (the composition root) imports the server.

Every import counts: at module level, inside functions, and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("store", "replicator", "jobs", "schemas")


@dataclass(frozen=True)
class Offence:
    path: str
    line: int
    module: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.module}"


def imports_of(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import in ``source``; ``from a import b`` gives ``a`` and ``a.b``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def _files(root: Path, package: str) -> list[Path]:
    base = root / Path(*package.split("."))
    if base.is_dir():
        return sorted(base.rglob("*.py"))
    single = base.with_suffix(".py")
    return [single] if single.is_file() else []


def offences(root: Path, package: str, forbidden: tuple[str, ...]) -> list[Offence]:
    """Imports of any of ``forbidden`` (a package or its submodules) by files of ``package``."""
    out: list[Offence] = []
    for path in _files(root, package):
        for line, module in imports_of(path.read_text(encoding="utf-8")):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                out.append(Offence(str(path.relative_to(root)), line, module))
    return out


def _check(package: str, forbidden: tuple[str, ...]) -> None:
    assert _files(ROOT, package), f"no source files for {package}: the layout changed, update this test"
    found = offences(ROOT, package, forbidden)
    assert not found, "\n".join(map(str, found))


@pytest.mark.parametrize("package", PRODUCT)
def test_the_product_imports_no_dev_tooling_tests_or_benchmarks(package: str) -> None:
    _check(package, ("devtools", "tests", "bench"))


def test_store_imports_neither_replicas_nor_jobs() -> None:
    _check("store", ("replicator", "jobs"))


def test_the_contract_imports_neither_server_client_cli_nor_http() -> None:
    _check(
        "replicator.contract",
        ("replicator.server", "replicator.client", "cli", "http", "urllib"),
    )


def test_the_server_imports_neither_the_client_nor_the_cli() -> None:
    _check("replicator.server", ("replicator.client", "cli"))


def test_the_client_and_the_shared_properties_import_no_server() -> None:
    _check("replicator.client", ("replicator.server", "cli"))
    _check("replicator.properties", ("replicator.server", "replicator.client", "cli"))


def test_in_the_cli_only_serve_and_the_token_store_import_the_server() -> None:
    found = offences(ROOT, "cli", ("replicator.server",))
    assert {o.path for o in found} == {"cli/serve.py", "cli/credentials.py"}, "\n".join(
        map(str, found)
    )
    assert {o.module for o in found if o.path == "cli/credentials.py"} <= {
        "replicator.server.tokens",
        "replicator.server.tokens.write_credential",
        "replicator.server.tokens.revoke_credentials",
    }


def test_the_checker_reports_a_forbidden_import_with_its_place(tmp_path: Path) -> None:
    (tmp_path / "replicator" / "server").mkdir(parents=True)
    (tmp_path / "replicator" / "server" / "ok.py").write_text("from store.acl import AclBinding\n")
    (tmp_path / "replicator" / "server" / "bad.py").write_text(
        "import json\n\n\ndef f():\n    from replicator.client.http import StoreClient\n"
    )
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "x.py").write_text("import devtools.maven as m\nfrom . import y\n")
    assert [str(o) for o in offences(tmp_path, "replicator.server", ("replicator.client",))] == [
        "replicator/server/bad.py:5 imports replicator.client.http",
        "replicator/server/bad.py:5 imports replicator.client.http.StoreClient",
    ]
    assert [str(o) for o in offences(tmp_path, "store", ("devtools",))] == [
        "store/x.py:1 imports devtools.maven"
    ]
    assert offences(tmp_path, "store", ("replicator",)) == []
