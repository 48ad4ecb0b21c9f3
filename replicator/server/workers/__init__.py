"""Decision workers: processes answering decisions from the node's index, one per core.

A node's Python process is held to about one core by the interpreter lock, and its admin
path and its replica's tailer take that core's time from decisions.  With
``--decision-workers N`` the node's process keeps the admin API, the replica (the index's
only writer), the leases and the analyses, and ``N`` worker processes answer the decisions:

* :mod:`.state`: what the replica tells the workers (its visible offset, readiness);
* :mod:`.replica`: a worker's replica, a follower of the index (:mod:`replicator.index.follower`);
* :mod:`.forward`: what a worker does not answer, it forwards to the node;
* :mod:`.figures`: the workers' Prometheus figures, summed into the node's ``/metrics``;
* :mod:`.process`: one worker process; :mod:`.pool`: the node's side of them.
"""
