"""The conformance runner for ``../shared/conformance/`` vectors (see FORMAT.md there).

Run it as ``python -m store.conformance FILE [FILE ...]``.  Each vector kind has one
handler, registered with :func:`store.conformance.runner.kind`; a vector of a kind no
handler knows is counted as skipped, never as passed.
"""

from store.conformance.runner import Outcome, kind, run_files, run_vector

__all__ = ["Outcome", "kind", "run_files", "run_vector"]
