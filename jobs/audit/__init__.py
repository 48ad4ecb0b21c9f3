"""The audit pipeline's Spark side: the audit log's decisions, streamed into Delta tables.

* :mod:`jobs.audit.transform`: pure DataFrame functions (events parsed from the records,
  duplicates dropped by event id within an event-time watermark, decisions per minute, new
  denials against the last denial of each principal on each resource);
* :mod:`jobs.audit.job`: the streaming job over the audit log (either backend, through the
  history archive's :class:`~jobs.history.archive.LogSource`), exactly once into the
  ``decisions``, ``minutes``, ``alerts`` and ``last_denied`` tables;
* :mod:`jobs.audit.report`: what the tables say since a time (``aclstore audit report``).
"""
