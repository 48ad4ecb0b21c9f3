"""``--dist loadgroup`` that keeps working on pytest 9.2: the tests of one ``xdist_group``
run on one worker.

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


def _group_name(mark: pytest.Mark) -> str:
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Controller side: the scheduler for ``--dist loadgroup``, None for any other mode."""
    if not _loadgroup(config) or _controller_dir not in config.stash:
        return None
    from xdist.scheduler import LoadGroupScheduling

    folder = config.stash[_controller_dir]

    class GroupScheduling(LoadGroupScheduling):  # type: ignore[misc]
        """xdist's own, a test's group read from what the workers wrote (else from its id)."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:  # first asked once every worker has collected
                self._groups = {}
                for written in sorted(folder.glob("*.json")):
                    self._groups.update(json.loads(written.read_text(encoding="utf-8")))
            group = self._groups.get(nodeid)
            return group if group is not None else str(super()._split_scope(nodeid))

    return GroupScheduling(config, log)


def clean_up(config: pytest.Config) -> None:
    folder = config.stash.get(_controller_dir, None)
    if folder is not None:
        for written in folder.glob("*"):
            written.unlink()
        folder.rmdir()
