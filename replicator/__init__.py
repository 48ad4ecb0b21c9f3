"""The read side of aclstore: replicas of the ACL store next to each broker, and their API.

* The **replica**: a RocksDB index tailing the change log (:mod:`replicator.index`,
  :mod:`replicator.tailer`, :mod:`replicator.replica`, errors in :mod:`replicator.errors`),
  answering Kafka's authorize questions from its own state.
* :mod:`replicator.contract`: the sidecar API's request and answer shapes, the audit event and
  the OpenAPI document, owned by neither side.
* :mod:`replicator.server`: one node serving that API (``aclstore serve``).
* :mod:`replicator.client`: the HTTP client and its ``--command-config`` files;
  :mod:`replicator.properties` is the Java ``.properties`` format both sides share.
* :mod:`replicator.cli`: the ``aclstore`` command, the composition root: ``serve`` starts the
  server, the other commands use the client.
"""
