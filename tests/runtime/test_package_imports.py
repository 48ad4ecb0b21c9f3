"""Under pytest the real packages are imported, never the test folders of the same name."""

from __future__ import annotations

from pathlib import Path

import pytest

import replicator
import store

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", [store, replicator])
def test_packages_resolve_to_the_source_tree_not_tests(package: object) -> None:
    origin = Path(getattr(package, "__file__", "") or "")
    assert origin == ROOT / package.__name__ / "__init__.py"  # type: ignore[attr-defined]
