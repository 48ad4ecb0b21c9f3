"""The access diff where the state is: a node answers dry runs and downgrade checks from its
own index, so a client sends the change or the target format, never the state.

* :mod:`replicator.access.analysis`: the questions over a read of the index (the streamed
  access diff, :mod:`store.access_stream`, over :class:`replicator.index.patterns.IndexPatterns`),
  answered as the contract's bodies (:mod:`replicator.contract.access`);
* :mod:`replicator.access.worker`: a child process that answers one question from a RocksDB
  secondary instance of the index (a whole-state walk, off the decision path);
* :mod:`replicator.access.analyst`: the node's side: which question runs where.
"""
