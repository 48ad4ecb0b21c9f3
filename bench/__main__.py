"""``python -m bench NAME [--quick]``: run one benchmark; it ends with its TARGET lines.

Each run starts with a line naming the machine (its CPU model and cores, the load average and
the memory): the same code archived 10,000,000 events in 85 s on one two-core machine (an AMD
EPYC) and in 128 s on another (an Intel Xeon), so a figure is read beside the machine it came
from.  Each benchmark is a module ``bench/<NAME>.py`` with ``run(quick: bool) -> list[Target]``; one
whose ``run`` also takes ``events`` (the history's size) accepts ``--events N``, and one whose
``run`` takes ``minutes`` (how long it runs) accepts ``--minutes M``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import bench
from bench.process import load_average, machine_text, pace_text
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
    parser.add_argument("--minutes", type=float, help="how long to run (benchmarks that take a time)")
    args = parser.parse_args(argv)
    module = importlib.import_module(f"bench.{args.name}")
    takes = inspect.signature(module.run).parameters
    options: dict[str, int | float] = {}
    if args.events is not None:
        if "events" not in takes or args.events <= 0:
            parser.error(f"--events takes a positive count, for a benchmark that takes a size ({args.name})")
        options["events"] = args.events
    if args.minutes is not None:
        if "minutes" not in takes:
            parser.error(f"--minutes is for a benchmark that runs for a time (soak), not {args.name}")
        if not args.minutes > 0:
            parser.error(f"--minutes takes a positive number of minutes, not {args.minutes:g}")
        options["minutes"] = args.minutes
    print(machine_text(), flush=True)
    targets = module.run(quick=args.quick, **options)
    print(f"after the run: load {load_average()}; {pace_text()}", flush=True)
    print_targets(targets)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
