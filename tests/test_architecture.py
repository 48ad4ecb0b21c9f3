"""Import directions of the codebase, read from the source with ``ast`` (nothing is imported).

The layers, top to bottom: ``cli`` (the composition root: the ``aclstore`` command); beside
each other ``replicator`` (the replica, the sidecar server, the contract, the client) and
``jobs`` (Spark); ``store`` (the model, the rules, the log, the fold); ``schemas``.  A layer
imports only the layers below it, and no two modules import each other, directly or round a
circle.

* the product (``cli``, ``store``, ``replicator``, ``jobs``, ``schemas``) imports no dev tooling
  (``devtools``), no tests and no benchmarks;
* nothing below the command line imports it; ``replicator`` and ``jobs`` do not import each
  other; ``schemas`` imports no other package of the product;
* ``store`` (the model, the rules, the log, the fold) imports neither the replicas nor the jobs;
* the API contract imports neither the server, the client nor the CLI, nor an HTTP library;
* the server imports neither the client nor the CLI; the client and the shared properties
  reader import no server; in the CLI only ``serve`` (the composition root) imports the server;
* presentation lives with the command line: only ``cli.present`` imports matplotlib, and the
  jobs import neither it nor anything of the CLI;
* inside ``jobs``: ``jobs.common`` (session, log source, decoding, streaming) imports none of
  the jobs; the history, the audit and the downgrade watch do not import each other, except
  that a job may ask the history a question through its face (``jobs.history``, whose
  :class:`~jobs.history.HistoryArchive` is the facade), never through its modules; the
  history's reading side (``reading``, ``questions``) does not import its writer (``job``).

Every import counts: at module level, inside functions, and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("cli", "store", "replicator", "jobs", "schemas")


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


def test_nothing_below_the_command_line_imports_it() -> None:
    for package in ("store", "replicator", "jobs", "schemas"):
        _check(package, ("cli",))


def test_the_replicas_and_the_jobs_do_not_import_each_other() -> None:
    _check("replicator", ("jobs",))
    _check("jobs", ("replicator",))


def test_schemas_import_no_other_package_of_the_product() -> None:
    _check("schemas", ("cli", "store", "replicator", "jobs"))


def test_store_imports_neither_replicas_nor_jobs() -> None:
    _check("store", ("replicator", "jobs"))


def module_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Each product module and the product modules it imports (at any depth of the file).

    An import of a module's own enclosing package (its ``__init__``, the package's face) is
    not an edge: the face hands on names, and a module reading a sibling through it is
    counted as that sibling's importer only where it names the sibling."""
    files: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = path

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        edges = graph.setdefault(module, set())
        for _, name in imports_of(path.read_text(encoding="utf-8")):
            target = known(name)
            if target is not None and target != module and not module.startswith(target + "."):
                edges.add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_no_modules_of_the_product_import_each_other_round_a_circle() -> None:
    found = circles(module_graph(ROOT, PRODUCT))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_check_finds_a_circle_through_a_lazy_import(tmp_path: Path) -> None:
    (tmp_path / "replicator" / "audit").mkdir(parents=True)
    (tmp_path / "replicator" / "__init__.py").write_text("from replicator.a import x\n")
    (tmp_path / "replicator" / "audit" / "__init__.py").write_text("")
    (tmp_path / "replicator" / "a.py").write_text("from replicator.audit.b import y\n")
    (tmp_path / "replicator" / "audit" / "b.py").write_text("def f():\n    from replicator.c import z\n")
    (tmp_path / "replicator" / "c.py").write_text("import replicator.a\n")
    assert circles(module_graph(tmp_path, ("replicator",))) == [
        ["replicator.a", "replicator.audit.b", "replicator.c"]
    ]
    (tmp_path / "replicator" / "c.py").write_text("import replicator\n")  # its package's face
    assert circles(module_graph(tmp_path, ("replicator",))) == []


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


def _submodules(root: Path, package: str) -> tuple[str, ...]:
    """The modules and subpackages of ``package`` (``jobs.history`` -> ``jobs.history.archive``...)."""
    base = root / Path(*package.split("."))
    names = {p.stem for p in base.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in base.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return tuple(f"{package}.{name}" for name in sorted(names))


def test_only_the_cli_presentation_draws_and_the_jobs_import_no_presentation() -> None:
    for package in ("store", "replicator", "jobs", "schemas"):
        _check(package, ("matplotlib",))
    _check("jobs", ("cli", "matplotlib"))
    outside = [
        o for o in offences(ROOT, "cli", ("matplotlib",)) if not o.path.startswith("cli/present/")
    ]
    assert not outside, "\n".join(map(str, outside))
    assert offences(ROOT, "cli.present", ("matplotlib",)), "no chart left in cli/present: update this test"


def test_the_shared_job_code_imports_no_job() -> None:
    _check("jobs.common", ("jobs.history", "jobs.audit", "jobs.downgrade", "jobs.access_diff"))


def test_the_jobs_import_each_other_only_through_the_history_facade() -> None:
    _check("jobs.history", ("jobs.audit", "jobs.downgrade", "jobs.access_diff"))
    _check("jobs.downgrade", ("jobs.audit", "jobs.access_diff", *_submodules(ROOT, "jobs.history")))
    _check("jobs.audit", ("jobs.downgrade", "jobs.access_diff", *_submodules(ROOT, "jobs.history")))
    _check("jobs.access_diff", ("jobs.history", "jobs.audit", "jobs.downgrade"))


def test_the_history_reading_side_imports_not_the_archive_writer() -> None:
    for module in ("jobs.history.reading", "jobs.history.questions", "jobs.history.answers"):
        _check(module, ("jobs.history.job", "jobs.history.archive"))


def test_the_facade_check_tells_a_face_from_a_module(tmp_path: Path) -> None:
    (tmp_path / "jobs" / "history").mkdir(parents=True)
    (tmp_path / "jobs" / "history" / "__init__.py").write_text("from jobs.history.archive import A\n")
    (tmp_path / "jobs" / "history" / "archive.py").write_text("A = 1\n")
    (tmp_path / "jobs" / "audit").mkdir()
    (tmp_path / "jobs" / "audit" / "ok.py").write_text("from jobs.history import A\n")
    (tmp_path / "jobs" / "audit" / "bad.py").write_text("def f():\n    from jobs.history.archive import A\n")
    found = offences(tmp_path, "jobs.audit", _submodules(tmp_path, "jobs.history"))
    assert [str(o) for o in found] == [
        "jobs/audit/bad.py:2 imports jobs.history.archive",
        "jobs/audit/bad.py:2 imports jobs.history.archive.A",
    ]
