"""The audit pipeline's Spark side: the audit log's decisions, streamed into Delta tables.

* :mod:`jobs.audit.transform`: pure functions over a batch's Arrow columns (events parsed
  from the records, resends dropped by their spool's sequence numbers, decisions per minute,
  new denials against the last denial of each principal on each resource);
* :mod:`jobs.audit.job`: the streaming job over the audit log (either backend, through the
  jobs' shared :class:`~jobs.common.source.LogSource`), exactly once into the
  ``decisions``, ``minutes``, ``alerts`` and ``last_denied`` tables;
* :mod:`jobs.audit.report`: what the tables say since a time (``aclstore audit report``).
"""
