"""The conformance runner for ``../shared/conformance/`` vectors (see FORMAT.md there).

Run it as ``python -m devtools.conformance FILE [FILE ...]``.  Each vector kind has one
handler, registered with :func:`devtools.conformance.registry.kind` by its kind module; a
vector of a kind no handler knows is counted as skipped, never as passed.
"""

from devtools.conformance.registry import Outcome, kind
from devtools.conformance.runner import run_files, run_vector

__all__ = ["Outcome", "kind", "run_files", "run_vector"]
