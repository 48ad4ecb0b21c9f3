"""The client side of the sidecar API: what a caller needs to talk to a node.

* :mod:`replicator.client.config`: where to connect and with which credential (``--store``,
  ``ACLSTORE_URL``, ``--command-config`` files such as ``admin.properties``).
* :mod:`replicator.client.http`: :class:`StoreClient`, one keep-alive HTTP(S) connection, a
  method per endpoint taking and returning the contract's types, errors as
  :class:`StoreClientError`.
* :mod:`replicator.client.kafka_acls`: the same ACL methods through a Kafka broker running
  aclstore's plugin (kafka-acls.sh's ``--bootstrap-server``).

Requests and answers are :mod:`replicator.contract`'s declared types; nothing here imports
the server (:mod:`replicator.server`).
"""

from replicator.client.config import DEFAULT_URL, URL_ENV, ClientConfig
from replicator.client.http import StoreClient, StoreClientError

__all__ = ["DEFAULT_URL", "URL_ENV", "ClientConfig", "StoreClient", "StoreClientError"]
