"""The modules' seconds read from a ``--durations=0`` report (worked by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.durations import seconds_by_module, write_module_seconds

pytestmark = pytest.mark.unit

REPORT = """\
============================== slowest durations ===============================
114.65s call     tests/replicator/test_crash.py::test_kills
2.50s setup    tests/cli/test_cli.py::test_a
0.30s teardown tests/cli/test_cli.py::test_a
1.20s call     tests/cli/test_cli.py::test_b[seed-3]
7.00s call     tests/store/test_x.py::Test::test_y
(3 durations < 0.005s hidden.  Use -vv to show these durations.)
12.5s xfail    tests/other.py::test_z
=========== 5 passed in 125.70s (0:02:05) ============
"""


def test_each_module_adds_up_its_setup_call_and_teardown_longest_first() -> None:
    found = seconds_by_module(REPORT)
    assert found == {"tests/replicator/test_crash.py": 114.7, "tests/store/test_x.py": 7.0,
                     "tests/cli/test_cli.py": 4.0}  # fmt: skip
    assert list(found) == ["tests/replicator/test_crash.py", "tests/store/test_x.py", "tests/cli/test_cli.py"]


def test_the_file_is_written_and_a_log_without_durations_is_refused(tmp_path: Path) -> None:
    log, out = tmp_path / "run.log", tmp_path / "seconds.json"
    log.write_text(REPORT, encoding="utf-8")
    write_module_seconds(log, out)
    assert json.loads(out.read_text(encoding="utf-8"))["tests/cli/test_cli.py"] == 4.0
    log.write_text("=== 5 passed in 1.0s ===\n", encoding="utf-8")
    with pytest.raises(ValueError, match="--durations=0"):
        write_module_seconds(log, out)
