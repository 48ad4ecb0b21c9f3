"""``python -m bench NAME [--quick]``: run one benchmark; it ends with its TARGET lines.

Each benchmark is a module ``bench/<NAME>.py`` with ``run(quick: bool) -> list[Target]``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import bench
from bench.report import print_targets


def available() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.iter_modules(bench.__path__)
        if info.name not in {"report", "__main__"} and not info.name.startswith("_")
    )


def main(argv: list[str]) -> int:
    names = available()
    parser = argparse.ArgumentParser(prog="python -m bench", description="aclstore benchmarks")
    parser.add_argument("name", choices=names, help="which benchmark to run")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a minute or two")
    args = parser.parse_args(argv)
    module = importlib.import_module(f"bench.{args.name}")
    targets = module.run(quick=args.quick)
    print_targets(targets)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
