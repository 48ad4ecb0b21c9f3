"""The audit pipeline's Spark side: the audit log's decisions, deduplicated, in a Delta table.

* :mod:`jobs.audit.transform`: pure DataFrame functions (events parsed from the records,
  duplicates dropped by event id, decisions per minute);
* :mod:`jobs.audit.job`: the streaming job over the audit log (either backend, through the
  history archive's :class:`~jobs.history.archive.LogSource`), exactly once into Delta.
"""
