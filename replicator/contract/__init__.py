"""The sidecar API contract: every request and answer shape, owned by neither side.

Each request and answer is declared once, as a frozen dataclass whose fields carry their JSON
name, kind, default and description; the server (:mod:`replicator.server`) parses requests
and writes answers with them, the client and the CLI (:mod:`replicator.client`, :mod:`cli`)
write requests and read answers with them, and the OpenAPI document other-language clients
read is generated from them.  Pure code over plain values; nothing here imports the HTTP
server.

* :mod:`~replicator.contract.declare`: how a message is declared (:func:`~replicator.contract.
  declare.message`, :func:`~replicator.contract.declare.wire`), and its parser, writer and
  schema, derived from the declaration.
* :mod:`~replicator.contract.kinds`: the kinds of JSON value a field has (text, flag, Kafka
  enum, array...): how each is read, written and described.
* :mod:`~replicator.contract.fields`: JSON decoding, Kafka enum names, limits, and
  :class:`~replicator.contract.fields.BadRequestError` (HTTP 400).
* :mod:`~replicator.contract.bindings`: ACL bindings and filters, both ways.
* :mod:`~replicator.contract.requests`: the request of each endpoint.
* :mod:`~replicator.contract.answers`: the answer of each endpoint, and how typed results
  become one.
* :mod:`~replicator.contract.endpoints`: method, path, name, request and answer of each
  endpoint.
* :mod:`~replicator.contract.audit_event`: the CloudEvents audit event, declared in
  ``schemas/audit_event_v1.json``.
* :mod:`~replicator.contract.openapi`: the OpenAPI 3.1 document; ``python -m
  replicator.contract`` writes ``replicator/openapi.json``.

**Resource names.**  The wire field is ``resourceName``, as Kafka's ``DescribeAcls`` and
``CreateAcls`` name it (``ResourceName``); change records and :class:`store.acl.ResourcePattern`
say ``name``.  :data:`~replicator.contract.bindings.RESOURCE_NAME` is the one place they are
mapped; every declaration that has a resource name and the audit event use it.
"""
