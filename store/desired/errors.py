"""The errors of ACLs as code: one root, each naming the file, the line and the fix."""

from __future__ import annotations

from store.errors import InvalidConfigError, StoreError


class DesiredStateError(StoreError):
    """Root of the errors of :mod:`store.desired`."""


class AclsFileError(DesiredStateError, InvalidConfigError):
    """A desired-state file that does not follow ``schemas/acls-file.v1.schema.json``.

    ``source`` and ``line`` (1-based; 0 when the file as a whole is wrong) say where;
    the message says what is wrong there and how to fix it."""

    def __init__(self, source: str, line: int, what: str) -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {what}")
        self.source = source
        self.line = line
        self.what = what


class ScopeChangedError(DesiredStateError):
    """An apply whose plan is stale: a binding in its scope changed after the plan's offset.

    ``changes`` names each change (binding, create or delete, actor, offset, time), so the
    operator can see who changed what and plan again."""

    def __init__(self, message: str, changes: tuple[dict[str, object], ...] = ()) -> None:
        super().__init__(message)
        self.changes = changes
