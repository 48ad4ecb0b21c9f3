"""The jobs' errors: one root, under the store's root so the CLI reports them."""

from __future__ import annotations

from store.errors import StoreError


class JobError(StoreError):
    """Root of the errors of the Spark jobs (:mod:`jobs`)."""
