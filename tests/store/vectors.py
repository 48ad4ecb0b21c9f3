"""The shared conformance vectors (``/work/shared/conformance``), for the store's test modules.

The vectors are Kafka's own unit-test assertions checked against Kafka's classes, so they are an
expectation independent of our code.  They live beside the repository (``../shared/conformance``);
set ``ACLSTORE_CONFORMANCE_DIR`` when the checkout sits elsewhere.  Import as
``tests.store.vectors`` (the repository root is on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from devtools.conformance import run_files

CONFORMANCE_DIR = Path(
    os.environ.get("ACLSTORE_CONFORMANCE_DIR")
    or Path(__file__).resolve().parents[3] / "shared" / "conformance"
)
ACL_VECTORS = CONFORMANCE_DIR / "kafka_acl_vectors.jsonl"
PRINCIPAL_VECTORS = CONFORMANCE_DIR / "principal_mapping_vectors.jsonl"


def load(path: Path, *kinds: str) -> list[dict[str, Any]]:
    """The vectors in ``path`` (of ``kinds`` only, if given); none when the file is missing
    (each file's ``test_vector_file_is_present`` reports that)."""
    if not path.is_file():
        return []
    vectors = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [v for v in vectors if not kinds or v["kind"] in kinds]


def assert_every_vector_passes(path: Path) -> None:
    """The runner over the whole file: none failed, none skipped, every line counted."""
    summary = run_files([path])
    failures = [line for line in summary.lines if not line.startswith("MESSAGE")]
    assert summary.failed == 0 and summary.skipped == 0, "\n".join(failures)
    assert summary.passed == len(load(path)) > 0


def assert_command_line_passes(path: Path) -> None:
    """``python -m devtools.conformance FILE`` exits 0 and reports nothing failed or skipped."""
    proc = subprocess.run(
        [sys.executable, "-m", "devtools.conformance", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == f"{len(load(path))} passed, 0 failed, 0 skipped"
