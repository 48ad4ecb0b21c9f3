"""The replica's RocksDB index: the live ACL bindings in a layout made for the decision rules.

* :mod:`.acl_index`: opening the index, its state, committing batches (:class:`AclIndex`);
* :mod:`.batch`: a batch of changes committed with the log position it reaches;
* :mod:`.view`: a consistent read, the decision rules' view of the index;
* :mod:`.cache`: the bounded cache of ``applicable_acls`` answers, kept exact by commits;
* :mod:`.progress`: the applied offset and waiting for one ("at least as fresh as N");
* :mod:`.meta`: the ``meta`` column family (offset, versions, counters, settings, skips);
* :mod:`.tables`: the RocksDB database and its two column families, opened;
* :mod:`.records`: the values the index reports.

The key layout of the bindings is :mod:`replicator.encoding`.  Every change is one
``WriteBatch`` that also writes the applied offset, so the index is always exactly the log
applied up to that offset: a crash loses at most whole batches, which the tailer reads
again from the log.
"""

from replicator.index.acl_index import AclIndex
from replicator.index.batch import IndexBatch
from replicator.index.cache import CacheFigures
from replicator.index.meta import INDEX_LAYOUT_VERSION
from replicator.index.records import (
    IndexCounters,
    IndexPosition,
    LogAnchor,
    SkipRecord,
    StopRecord,
)
from replicator.index.view import IndexView

__all__ = [
    "INDEX_LAYOUT_VERSION",
    "AclIndex",
    "CacheFigures",
    "IndexBatch",
    "IndexCounters",
    "IndexPosition",
    "IndexView",
    "LogAnchor",
    "SkipRecord",
    "StopRecord",
]
