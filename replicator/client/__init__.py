"""The client side of the sidecar API: what a caller needs to talk to a node.

* :mod:`replicator.client.config`: where to connect and with which credential (``--store``,
  ``ACLSTORE_URL``, ``--command-config`` files such as ``admin.properties``).
* :mod:`replicator.client.http`: :class:`StoreClient`, one keep-alive HTTP(S) connection,
  errors as :class:`StoreClientError`.

Bodies are built and answers read with :mod:`replicator.contract`; nothing here imports the
server (:mod:`replicator.server`).
"""

from replicator.client.config import DEFAULT_URL, URL_ENV, ClientConfig
from replicator.client.http import StoreClient, StoreClientError

__all__ = ["DEFAULT_URL", "URL_ENV", "ClientConfig", "StoreClient", "StoreClientError"]
