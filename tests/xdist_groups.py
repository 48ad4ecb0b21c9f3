"""The scheduler of ``--dist loadgroup`` for this suite: the tests of one ``xdist_group`` run
on one worker, and every other test on the worker that runs the rest of its module.

By module, as ``--dist loadfile`` does, because several modules start something expensive once
per module (a broker running the plugin, a node, a JVM harness): spread test by test, each
worker would start its own.

pytest-xdist 3.8 tells its scheduler a test's group by appending ``@name`` to the test's node
id on the worker; pytest 9.2 keeps node ids in a structured form that this no longer changes
(pytest-xdist issue 1386), so every test is silently scheduled on its own and two workers
would each start a SparkSession.  Here the groups travel beside the ids instead: the
controller names a folder (:func:`configure_node`), each worker writes there which of the tests
it collected belong to which group (:func:`record_groups`, once collection is done), and
the controller's scheduler (:class:`GroupScheduling`) reads that when it schedules, which xdist
does only once every worker has finished collecting.  Under a pytest whose node ids xdist can
still change, the ids carry their ``@name`` and either way gives the same group.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

GROUPS_DIR = "aclstore_xdist_groups"
"""The key of the groups folder in each worker's ``workerinput``."""
MODULE_SECONDS = Path(__file__).with_name("module_seconds.json")
"""How long each module's tests took in a full run (``python -m devtools module-seconds LOG``
writes it from a ``make test`` log with ``--durations=0``): modules are handed out longest first, so that the
run does not end with one worker alone on a long module.  A module it does not name (new)
goes after those it names."""

_controller_dir = pytest.StashKey[Path]()


def _loadgroup(config: pytest.Config) -> bool:
    return bool(config.getoption("dist", "no") == "loadgroup")


def configure_node(node: Any) -> None:
    """Controller side: give a worker about to start the folder for its groups."""
    config: pytest.Config = node.config
    if not _loadgroup(config):
        return
    if _controller_dir not in config.stash:
        config.stash[_controller_dir] = Path(tempfile.mkdtemp(prefix="xdist-groups-"))
    node.workerinput[GROUPS_DIR] = str(config.stash[_controller_dir])


def record_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker side: write ``{node id: group}`` for the collected tests that have a group."""
    folder = getattr(config, "workerinput", {}).get(GROUPS_DIR)
    if folder is None:
        return
    groups = {}
    for item in items:
        names = sorted({_group_name(mark) for mark in item.iter_markers("xdist_group")})
        if names:
            groups[item.nodeid] = "_".join(names)
    worker = config.workerinput["workerid"]  # type: ignore[attr-defined]
    fd, scratch = tempfile.mkstemp(prefix=f".{worker}-", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(groups, out)
    os.replace(scratch, Path(folder) / f"{worker}.json")


def module_seconds() -> dict[str, float]:
    """:data:`MODULE_SECONDS` read ({} when absent or unreadable: collection order)."""
    try:
        found = json.loads(MODULE_SECONDS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _group_name(mark: pytest.Mark) -> str:
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Controller side: the scheduler for ``--dist loadgroup``, None for any other mode."""
    if not _loadgroup(config) or _controller_dir not in config.stash:
        return None
    from xdist.scheduler import LoadScopeScheduling

    folder = config.stash[_controller_dir]

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """xdist's scheduling by scope, a scope being a test's group (read from what the
        workers wrote) or else its module."""

        _groups: dict[str, str] | None = None
        _groups_first = False

        def _split_scope(self, nodeid: str) -> str:
            return self._read_groups().get(nodeid) or nodeid.split("::", 1)[0]

        def _read_groups(self) -> dict[str, str]:
            if self._groups is None:  # first asked once every worker has collected
                self._groups = {}
                for written in sorted(folder.glob("*.json")):
                    self._groups.update(json.loads(written.read_text(encoding="utf-8")))
            return self._groups

        def _assign_work_unit(self, node: Any) -> None:
            # A group is the longest unit (its tests share something slow to start): it is
            # handed out first, then the modules longest first, so that the other workers'
            # modules fill the time beside it and no long module starts last.
            if not self._groups_first:
                self._groups_first = True
                seconds = module_seconds()
                for scope in sorted(self.workqueue, key=lambda s: seconds.get(s, 0.0)):
                    self.workqueue.move_to_end(scope, last=False)
                for group in sorted(set(self._read_groups().values()), reverse=True):
                    if group in self.workqueue:
                        self.workqueue.move_to_end(group, last=False)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


def clean_up(config: pytest.Config) -> None:
    folder = config.stash.get(_controller_dir, None)
    if folder is not None:
        for written in folder.glob("*"):
            written.unlink()
        folder.rmdir()
