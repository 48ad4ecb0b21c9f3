"""The sidecar server: one aclstore node answering the HTTP API next to a broker.

* :mod:`~replicator.server.node`: a node's parts, wired: the admin API writing to the log, the
  replica tailing it, the HTTP listener, the audit emitter.
* :mod:`~replicator.server.service`: what each endpoint does, between the HTTP edge and the
  store; request and answer shapes come from :mod:`replicator.contract`.
* :mod:`~replicator.server.http`: the HTTP/1.1 server and the error-to-status mapping.
* :mod:`~replicator.server.callers`: who may call (networks, mutual TLS, bearer tokens);
  :mod:`~replicator.server.tokens` keeps the tokens, :mod:`~replicator.server.tls` the
  listener's TLS and a client certificate's subject as Kafka prints it.
* :mod:`~replicator.server.audit`: decisions as CloudEvents on an audit topic;
  :mod:`~replicator.server.metrics`: the Prometheus figures.

Nothing here imports the client (:mod:`replicator.client`) or the CLI.
"""
