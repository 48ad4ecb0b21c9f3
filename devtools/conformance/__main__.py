"""``python -m devtools.conformance FILE [FILE ...]``: exit 0 only when no vector failed."""

from __future__ import annotations

import sys
from pathlib import Path

from devtools.conformance.runner import run_files


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m devtools.conformance FILE [FILE ...]", file=sys.stderr)
        return 2
    missing = [arg for arg in argv if not Path(arg).is_file()]
    if missing:
        print(f"error: no such vector file: {', '.join(missing)}", file=sys.stderr)
        return 2
    summary = run_files(Path(arg) for arg in argv)
    for line in summary.lines:
        print(line)
    print(summary.closing_line)
    return 0 if summary.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
