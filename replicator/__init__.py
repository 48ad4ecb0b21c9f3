"""The read side of aclstore: replicas of the ACL store next to each broker, and their API.

* The **replica**: a RocksDB index tailing the change log (:mod:`replicator.index`,
  :mod:`replicator.tailer`, :mod:`replicator.replica`, errors in :mod:`replicator.errors`),
  answering Kafka's authorize questions from its own state.
* :mod:`replicator.contract`: the sidecar API's request and answer shapes, the audit event and
  the OpenAPI document, owned by neither side.
* :mod:`replicator.server`: one node serving that API (``aclstore serve``).
* :mod:`replicator.client`: the HTTP client and its ``--command-config`` files;
  :mod:`replicator.properties` is the Java ``.properties`` format both sides share.

The ``aclstore`` command, which wires all of this (and the Spark jobs) together, stands above
this package in :mod:`cli`.
"""
