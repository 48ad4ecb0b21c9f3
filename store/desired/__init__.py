"""ACLs as code: desired-state files, their scopes, and how they compare with the live state.

* :mod:`store.desired.document`: a file (``schemas/acls-file.v1.schema.json``) read and
  checked, errors naming the file, the line and the fix; several files as one
  :class:`DesiredState`;
* :mod:`store.desired.scope`: what a file owns (principals, resource prefixes, or all);
* :mod:`store.desired.roles`: kafka-acls.sh's ``producer``/``consumer``/``idempotent``;
* :mod:`store.desired.reconcile`: the bindings to add and remove within a scope;
* :mod:`store.desired.export`: live bindings written back as a file.

Pure logic, no I/O: the commands (``aclstore export|plan|apply|drift``, :mod:`cli.gitops`)
read the files and talk to the node.
"""

from store.desired.document import FILE_VERSION, AclsFile, DesiredState, load_acls_text
from store.desired.errors import AclsFileError, DesiredStateError, ScopeChangedError
from store.desired.export import export_document, export_text
from store.desired.reconcile import Reconciliation, apply_reconciliation, reconcile
from store.desired.scope import ResourcePrefix, Scope

__all__ = [
    "FILE_VERSION", "AclsFile", "AclsFileError", "DesiredState", "DesiredStateError",
    "Reconciliation", "ResourcePrefix", "Scope", "ScopeChangedError", "apply_reconciliation",
    "export_document", "export_text", "load_acls_text", "reconcile",
]  # fmt: skip
