"""``python -m bench NAME [--quick]``: run one benchmark; it ends with its TARGET lines.

Each benchmark is a module ``bench/<NAME>.py`` with ``run(quick: bool) -> list[Target]``; one
whose ``run`` also takes ``events`` (the history's size) accepts ``--events N``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import bench
from bench.report import print_targets


def available() -> list[str]:
    """The benchmarks: the modules of ``bench/`` that define ``run`` (read, not imported: the
    helpers beside them, ``report``, ``process``, ``produce`` and the ``_`` ones, are not)."""
    folder = Path(bench.__file__).parent
    return sorted(
        info.name
        for info in pkgutil.iter_modules(bench.__path__)
        if not info.name.startswith("_")
        and "\ndef run(" in (folder / f"{info.name}.py").read_text(encoding="utf-8")
    )


def main(argv: list[str]) -> int:
    names = available()
    parser = argparse.ArgumentParser(prog="python -m bench", description="aclstore benchmarks")
    parser.add_argument("name", choices=names, help="which benchmark to run")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a minute or two")
    parser.add_argument("--events", type=int, help="how many events (benchmarks that take a size)")
    args = parser.parse_args(argv)
    module = importlib.import_module(f"bench.{args.name}")
    if args.events is None:
        targets = module.run(quick=args.quick)
    elif "events" in inspect.signature(module.run).parameters and args.events > 0:
        targets = module.run(quick=args.quick, events=args.events)
    else:
        parser.error(f"--events takes a positive count, for a benchmark that takes a size ({args.name})")
    print_targets(targets)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
