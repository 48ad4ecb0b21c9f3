"""Principal mapping: what Kafka turns a TLS certificate or Kerberos name into.

* :mod:`store.mapping.x500`: the RFC 2253 name Kafka receives (``X500Principal.getName()``).
* :mod:`store.mapping.ssl`: ``ssl.principal.mapping.rules`` (``SslPrincipalMapper``).
* :mod:`store.mapping.kerberos`: ``sasl.kerberos.principal.to.local.rules``
  (``KerberosShortNamer``, ``KerberosName``).
* :mod:`store.mapping.java_regex`: the slice of ``java.util.regex`` those rules are written in.
"""

from store.mapping.kerberos import KerberosName, KerberosShortNamer
from store.mapping.ssl import SslPrincipalMapper
from store.mapping.x500 import x500_get_name

__all__ = ["KerberosName", "KerberosShortNamer", "SslPrincipalMapper", "x500_get_name"]
