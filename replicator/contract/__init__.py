"""The sidecar API contract: every request and answer shape, owned by neither side.

The server (:mod:`replicator.server`) parses requests and builds answers with it; the client
and the CLI (:mod:`replicator.client`, :mod:`cli`) build requests and read answers
with it; the OpenAPI document other-language clients read is generated from it.  Pure
functions over plain values; nothing here imports the HTTP server.

* :mod:`~replicator.contract.endpoints`: method, path and name of each endpoint.
* :mod:`~replicator.contract.fields`: JSON decoding, typed fields, Kafka enum names, limits,
  and :class:`~replicator.contract.fields.BadRequestError` (HTTP 400).
* :mod:`~replicator.contract.bindings`: ACL bindings and filters as JSON, both ways.
* :mod:`~replicator.contract.requests`: request bodies to typed requests.
* :mod:`~replicator.contract.answers`: typed results to answer bodies.
* :mod:`~replicator.contract.audit_event`: the CloudEvents audit event, declared in
  ``schemas/audit_event_v1.json``.
* :mod:`~replicator.contract.openapi`: the OpenAPI 3.1 document; ``python -m
  replicator.contract`` writes ``replicator/openapi.json``.

**Resource names.**  The wire field is ``resourceName``, as Kafka's ``DescribeAcls`` and
``CreateAcls`` name it (``ResourceName``); change records and :class:`store.acl.ResourcePattern`
say ``name``.  :data:`~replicator.contract.bindings.RESOURCE_NAME` is the one place they are
mapped; every request parser, answer builder and the audit event use it.
"""
